"""How fast the estimators refuse what cannot fit the device (issue 25: within 1 s, 200 MB).

    python benchmarks/guards.py

Runs the refusal cases of ``tests/algorithms/test_algorithm_guards.py`` (MLP, MLPClassifier,
SVC, Sammon, sgemm, on a device capped at 16,384 texels) in this process and prints each one's
time and the growth of the peak RSS; prints MISSED and exits non-zero when one takes 1 s or
more, or the peak RSS grows by 200 MB or more over all of them.
"""
from __future__ import annotations

import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))                  # the repository: the tests package

import shadergpgpu as sg  # noqa: E402
from tests.algorithms.test_algorithm_guards import CAP, _cases  # noqa: E402


def main() -> int:
    dev = sg.Device(limits=sg.Limits(max_texture_size=CAP))
    r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    missed = []
    print("| case | refused in | message |\n| --- | --- | --- |")
    for name, (fn, _msg) in _cases(dev).items():
        t = time.perf_counter()
        try:
            fn()
            dt, msg = None, "NOT REFUSED"
        except ValueError as e:
            dt, msg = time.perf_counter() - t, str(e).splitlines()[0][:70]
        print(f"| {name} | {'-' if dt is None else f'{dt * 1e3:.1f} ms'} | {msg} |")
        if dt is None or dt >= 1.0:
            missed.append(name)
    grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0) / 1024
    print(f"peak RSS growth over all cases: {grown:.1f} MB (target < 200)")
    if grown >= 200:
        missed.append("rss")
    if missed:
        print(f"MISSED: {missed}")
    dev.release()
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
