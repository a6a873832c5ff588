"""Every timed call of a ``benchmarks/model.py`` run, round by round: when a calibration case or
a check was timed, its issue, wall and device time in that round, and each round's engine
probes; then per case the rounds side by side.

    PYTHONPATH=. python benchmarks/diag/model_calls.py LOG.json [model.py arguments]

Runs ``benchmarks/model.py`` with the given arguments (``--gpu-sizes``, ``--rounds 5``, ...)
unchanged, recording beside it. What it answers: whether a check's miss came from a
calibration case whose every round fell in a slow state its check's rounds did not (the
fourteenth session's H100 runs), and which case a slow round started at. ``LOG.json``: a list
of ``["engine", seconds since start, host_us, pass_overhead_us]`` and ``["call", seconds,
"algorithm label", wall s, issue s, device s or null]``.
"""
from __future__ import annotations

import json
import runpy
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from shadergpgpu.analysis import calibration as C  # noqa: E402
from shadergpgpu.analysis.reports import model_cases as MC  # noqa: E402


def recording(log: list, start: float):
    """Wrap the calibration's and the checks' timing functions so each call appends to
    ``log``; returns a function that puts the originals back."""
    timed_call, calibrate = MC.timed_call, C.calibrate

    def logged_call(case, dev, repeat=5, device=False):
        t = time.perf_counter() - start
        r = timed_call(case, dev, repeat, device)
        dev_s = r[3] if len(r) > 3 and r[3] != float("inf") else None
        log.append(["call", round(t, 3), f"{case.algo} {case.label}", r[0], r[1], dev_s])
        return r

    def logged_calibrate(dev, quick=False, save=True):
        t = time.perf_counter() - start
        got = calibrate(dev, quick=quick, save=save)
        sp = got["speeds"]
        log.append(["engine", round(t, 3), dict(sp["host_us"]), sp["pass_overhead_us"]])
        return got

    MC.timed_call, C.calibrate = logged_call, logged_calibrate

    def restore():
        MC.timed_call, C.calibrate = timed_call, calibrate
    return restore


def by_case(log: list) -> dict:
    """{"algorithm label": [(round, wall s, issue s), ...]} from a recording: a round begins
    at each engine calibration."""
    out: dict = {}
    r = -1
    for entry in log:
        if entry[0] == "engine":
            r += 1
            continue
        out.setdefault(entry[2], []).append((max(r, 0), entry[3], entry[4]))
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(__doc__)
        return 2
    path, rest = Path(argv[0]), argv[1:]
    log: list = []
    restore = recording(log, time.perf_counter())
    saved = sys.argv
    sys.argv = ["model.py"] + rest
    code = 0
    try:
        runpy.run_path(str(Path(__file__).resolve().parents[1] / "model.py"),
                       run_name="__main__")
    except SystemExit as e:
        code = int(e.code or 0)
    finally:
        sys.argv = saved
        restore()
        path.write_text(json.dumps(log))
    print(f"\n# each call's issue / wall time by round (ms), {path}\n")
    for label, rounds in by_case(log).items():
        cells = " ".join(f"{issue * 1e3:.3f}/{wall * 1e3:.3f}" for _, wall, issue in rounds)
        print(f"{label:48} {cells}")
    return code


if __name__ == "__main__":
    sys.exit(main())
