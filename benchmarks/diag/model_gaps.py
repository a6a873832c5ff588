"""Where a configuration's wall time goes, for the cost model: wall per call, the time to
issue it, and the device's busy time from ONE timer query around the whole call (no per-draw
queries, whose own overhead and stalls a ``timing=True`` run pays).

    python benchmarks/diag/model_gaps.py [--gpu-sizes]
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.frontends.reports import model_cases as MC  # noqa: E402


def main() -> int:
    gpu = "--gpu-sizes" in sys.argv
    dev = sg.Device()
    cases = MC.default_cases(not gpu and dev.is_software)
    print(f"{'case':44} {'wall ms':>9} {'issue ms':>9} {'device ms':>9} {'passes':>7}")
    for case in cases:
        call, release = case.build(dev)
        try:
            t = MC.call_times(call, dev, repeat=5, device=True)
            dev.counter.reset()
            call()
            dev.finish()
            passes = dev.counter.total
        finally:
            release()
        wall, issue, busy = t["wall"], t["issue"], t["device"]
        print(f"{case.algo + ' ' + case.label:44} {wall * 1e3:9.3f} {issue * 1e3:9.3f} "
              f"{busy * 1e3:9.3f} {passes:7d}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
