"""Where sgemm(numpy, numpy) spends its time beside the product on resident operands
(issue 20: >= 80% of the resident rate at n = 4096): the end-to-end call, the resident call,
and a profile of the end-to-end call's Python functions.

    python benchmarks/diag/sgemm_host.py [--n 4096] [--repeat 3]
"""
import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import shadergpgpu as sg  # noqa: E402


def best(fn, repeat):
    fn()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    n = a.n
    dev = sg.Device()
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    Ad, Bd = dev.array(A), dev.array(B)

    def resident():
        sg.sgemm(Ad, Bd, device=dev).release()
        dev.finish()

    def host():
        sg.sgemm(A, B, device=dev)

    tr, th = best(resident, a.repeat), best(host, a.repeat)
    fl = 2.0 * n ** 3
    print(f"# {dev.caps.renderer}, n = {n}")
    print(f"resident: {tr * 1e3:.1f} ms = {fl / tr / 1e9:.0f} GFLOP/s")
    print(f"numpy in/out: {th * 1e3:.1f} ms = {fl / th / 1e9:.0f} GFLOP/s "
          f"({tr / th:.2f} of resident; target >= 0.80)")
    pr = cProfile.Profile()
    pr.enable()
    host()
    pr.disable()
    pstats.Stats(pr).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
