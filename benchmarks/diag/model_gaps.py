"""Where a configuration's wall time goes, for the cost model: wall per call, the time to
issue it, and the device's busy time from ONE timer query around the whole call (no per-draw
queries, whose own overhead and stalls a ``timing=True`` run pays).

    python benchmarks/diag/model_gaps.py [--gpu-sizes] [--calibration] [--only backprop]

``--calibration``: the calibration cases instead of the checks. Each case is timed twice: per
call of a run of back-to-back calls (what the model's checks measure on a GPU) and alone
(one call after a wait), with the calls per run.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.analysis.reports import model_cases as MC  # noqa: E402


def cases_from_argv(small: bool) -> list:
    """The checks (or with ``--calibration`` the calibration cases), small ones or the GPU's,
    of the algorithms ``--only a,b`` names (all without it)."""
    if "--calibration" in sys.argv:
        from shadergpgpu.analysis.reports.calibrate_kernels import calibration_cases
        cases = calibration_cases(small)
    else:
        cases = MC.default_cases(small)
    if "--only" in sys.argv:
        keep = set(sys.argv[sys.argv.index("--only") + 1].split(","))
        cases = [c for c in cases if c.algo in keep]
    return cases


def main() -> int:
    gpu = "--gpu-sizes" in sys.argv
    dev = sg.Device()
    small = not gpu and dev.is_software
    cases = cases_from_argv(small)
    print(f"{'case':44} {'mode':6} {'calls':>5} {'wall ms':>9} {'issue ms':>9} "
          f"{'device ms':>9} {'passes':>7}")
    run_calls = MC.RUN_CALLS
    for case in cases:
        call, release = case.build(dev)
        try:
            for mode, n in (("run", run_calls), ("alone", 1)):
                MC.RUN_CALLS = n
                t = MC.call_times(call, dev, repeat=5, device=True)
                dev.counter.reset()
                call()
                dev.finish()
                passes = dev.counter.total
                wall, issue, busy = t["wall"], t["issue"], t["device"]
                print(f"{case.algo + ' ' + case.label:44} {mode:6} {t['calls']:5d} "
                      f"{wall * 1e3:9.3f} {issue * 1e3:9.3f} {busy * 1e3:9.3f} {passes:7d}",
                      flush=True)
        finally:
            MC.RUN_CALLS = run_calls
            release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
