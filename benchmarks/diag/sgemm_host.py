"""sgemm(numpy, numpy) against the product on resident operands (issue 20: >= 80% of the
resident rate at n = 4096): the resident call, the host call pipelined by row blocks of C
(``shadergpgpu.algorithms.sgemm.host``), the host call with the pipelining off
(``SgemmTuning(host_blocks=0)``), their ratios, the upload and readback rates of one n x n
operand and the bound they set, and the host call at other block counts (the choice of
``SgemmTuning.host_blocks`` / ``host_min_block_elems``). Rows of the results are checked against float64.
Prints MISSED and exits 1 where the pipelined call runs below 0.8 of the resident rate.

    python benchmarks/diag/sgemm_host.py [--n 4096] [--repeat 3] [--no-sweep] [--profile]
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
from shadergpgpu.algorithms.sgemm import (SgemmTuning, default_variant,  # noqa: E402
                                          effective_variant, host)

TARGET = 0.8
SETTINGS = ("host_blocks", "host_min_work", "host_min_block_elems")


def best(fn, repeat):
    fn()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def check_rows(got, A, B, what):
    """Relative error of a few rows against float64 (the whole product in float64 would
    take longer than the GPU calls)."""
    n = A.shape[0]
    rows = np.unique(np.r_[0:4, n // 2 - 2:n // 2 + 2, n - 4:n].clip(0, n - 1))
    ref = A[rows].astype(np.float64) @ B.astype(np.float64)
    err = np.linalg.norm(got[rows] - ref) / np.linalg.norm(ref)
    print(f"  {what}: rows {len(rows)} vs float64: rel err {err:.1e}")
    return err


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-sweep", action="store_true", help="skip the block-count sweep")
    p.add_argument("--profile", action="store_true",
                   help="print a profile of the pipelined call's Python functions")
    a = p.parse_args()
    n = a.n
    dev = sg.Device()
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)
    Ad, Bd = dev.array(A), dev.array(B)
    tuning = dev.tuning(SgemmTuning)
    defaults = {k: getattr(tuning, k) for k in SETTINGS}
    v = effective_variant(default_variant(dev), dev)

    def resident():
        sg.sgemm(Ad, Bd, device=dev).release()
        dev.finish()

    def on_host():
        return sg.sgemm(A, B, device=dev)

    # transfers of one n x n float32 operand
    mb = A.nbytes / 1e6
    t_up = best(lambda: (Ad.set(A), dev.finish()), a.repeat)
    buf = np.empty_like(A)
    t_out = best(lambda: Ad.get(out=buf), a.repeat)
    t_new = best(lambda: Ad.get(), a.repeat)

    tr = best(resident, a.repeat)
    nb = host.host_blocks(dev, v, n, n, n)
    tp = best(on_host, a.repeat)
    piped = on_host()
    with dev.tuned(SgemmTuning, host_blocks=0):
        to = best(on_host, a.repeat)
        whole = on_host()

    fl = 2.0 * n ** 3
    print(f"# {dev.caps.renderer}, n = {n}, variant {v.name}, best of {a.repeat}")
    print(f"upload (set) {mb:.0f} MB: {t_up * 1e3:.1f} ms = {mb / t_up / 1e3:.2f} GB/s; "
          f"readback get(out=) {t_out * 1e3:.1f} ms = {mb / t_out / 1e3:.2f} GB/s, "
          f"get() {t_new * 1e3:.1f} ms = {mb / t_new / 1e3:.2f} GB/s")
    print(f"resident: {tr * 1e3:.1f} ms = {fl / tr / 1e9:.0f} GFLOP/s")
    print(f"numpy, pipelined (blocks {nb}; {', '.join(f'{k} {defaults[k]}' for k in SETTINGS)}): "
          f"{tp * 1e3:.1f} ms = {fl / tp / 1e9:.0f} GFLOP/s, {tr / tp:.2f} of resident")
    print(f"numpy, pipelining off: {to * 1e3:.1f} ms = {fl / to / 1e9:.0f} GFLOP/s, "
          f"{tr / to:.2f} of resident; pipelined / off: {to / tp:.2f}x faster")
    lower = t_up + tr
    print(f"bound with the pipelining: upload(B) + resident = {lower * 1e3:.1f} ms "
          f"(ratio <= {tr / lower:.2f}, before one block's upload and readback); serial sum "
          f"2 uploads + resident + readback = {(2 * t_up + tr + t_out) * 1e3:.1f} ms")
    same = np.array_equal(piped, whole)
    print(f"  pipelined == one block: {same}" +
          ("" if same else f" (max |diff| {np.abs(piped - whole).max():.2e})"))
    bad = check_rows(piped, A, B, "pipelined") > 1e-5
    bad |= check_rows(whole, A, B, "pipelining off") > 1e-5

    if not a.no_sweep:
        print("block counts (host_min_work and host_min_block_elems 0; a block's readback "
              "stays >= pbo_min_bytes on GPUs, which may lower the count):")
        seen = set()
        try:
            for want in (2, 3, 4, 6, 8):
                dev.tune(SgemmTuning, host_min_work=0, host_min_block_elems=0, host_blocks=want)
                got = host.host_blocks(dev, v, n, n, n)
                if got in seen:
                    continue
                seen.add(got)
                t = best(on_host, a.repeat)
                print(f"  host_blocks {want}: {got} blocks, {t * 1e3:.1f} ms, "
                      f"{tr / t:.2f} of resident")
        finally:
            dev.tune(tuning)

    if a.profile:
        pr = cProfile.Profile()
        pr.enable()
        on_host()
        pr.disable()
        pstats.Stats(pr).sort_stats("cumulative").print_stats(25)

    if bad:
        print("WRONG: a result differs from float64 by more than 1e-5")
        return 1
    if tr / tp < TARGET:
        print(f"MISSED: numpy / resident = {tr / tp:.2f} < {TARGET}")
        return 1
    print(f"MET: numpy / resident = {tr / tp:.2f} >= {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
