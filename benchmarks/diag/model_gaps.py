"""Where a configuration's wall time goes, for the cost model: wall per call, the time to
issue it, and the device's busy time from ONE timer query around the whole call (no per-draw
queries, whose own overhead and stalls a ``timing=True`` run pays).

    python benchmarks/diag/model_gaps.py [--gpu-sizes]
"""
from __future__ import annotations

import sys
import time
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
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < 0.3:
                call()
                dev.finish()
            wall = issue = busy = float("inf")
            for _ in range(5):
                dev.finish()
                t0 = time.perf_counter()
                call()
                t1 = time.perf_counter()
                dev.finish()
                t2 = time.perf_counter()
                wall, issue = min(wall, t2 - t0), min(issue, t1 - t0)
                if not dev.is_software:
                    q = dev.ctx.query(time=True)
                    with q:
                        call()
                    dev.finish()
                    busy = min(busy, q.elapsed * 1e-9)
            dev.counter.reset()
            call()
            dev.finish()
            passes = dev.counter.total
        finally:
            release()
        print(f"{case.algo + ' ' + case.label:44} {wall * 1e3:9.3f} {issue * 1e3:9.3f} "
              f"{busy * 1e3:9.3f} {passes:7d}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
