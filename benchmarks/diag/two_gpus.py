"""What two GPUs of one host give without Dask (issue 20, the 2-GPU matmul): one process per
GPU, each the half of an n x n SGEMM by row blocks of C, timed alone (the other process
waiting) and both at once (started together at a barrier).

    python benchmarks/diag/two_gpus.py [--n 16384] [--gpus 0,1] [--repeat 2]

Per process and mode: the resident product (operands on the device, product only) and the
product from host memory (``sgemm(numpy, numpy)``: upload, product, readback). If the
concurrent times equal the lone ones, two GPUs of this host scale by 2 and what a Dask run
loses is Dask's (transfers, scheduling); if not, the host (PCIe, memory bandwidth, CPU) bounds
both processes together.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])


def _child(rank, gpu, n, repeat, barrier, out):
    os.environ["SHADERGPGPU_EGL_DEVICE"] = str(gpu)
    sys.path.insert(0, ROOT)
    import numpy as np

    import shadergpgpu as sg
    from shadergpgpu.algorithms.sgemm import sgemm
    rng = np.random.default_rng(rank)
    half = n // 2
    A = rng.standard_normal((half, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    dev = sg.Device()
    Ad, Bd = dev.array(A), dev.array(B)
    sgemm(A[:256, :256], B[:256, :256], device=dev)              # compile

    def resident():
        C = sgemm(Ad, Bd, device=dev)
        dev.finish()
        C.release()

    def host():
        sgemm(A, B, device=dev)

    resident()
    host()

    def best(fn):
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return min(ts)

    res = {"renderer": dev.caps.renderer, "gpu": gpu}
    for mode in ("alone", "together"):
        for name, fn in (("resident", resident), ("host", host)):
            if mode == "alone":
                for turn in range(2):
                    barrier.wait()
                    if turn == rank:
                        res[f"{name} alone"] = best(fn)
            else:
                barrier.wait()
                res[f"{name} together"] = best(fn)
    barrier.wait()
    out.put((rank, res))
    Ad.release()
    Bd.release()
    dev.release()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--gpus", default="0,1")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args(argv)
    gpus = [int(g) for g in a.gpus.split(",")]
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(gpus))
    out = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(r, g, a.n, a.repeat, barrier, out))
             for r, g in enumerate(gpus)]
    for p in procs:
        p.start()
    got = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    flop = 2 * (a.n // 2) * a.n * a.n
    print(f"half of SGEMM n = {a.n} per process ({flop / 1e12:.2f} TFLOP each)")
    for r in sorted(got):
        g = got[r]
        print(f"process {r} EGL device {g['gpu']} {g['renderer']}")
        for k in ("resident alone", "resident together", "host alone", "host together"):
            print(f"  {k:20} {g[k]:.3f} s  {flop / g[k] / 1e9:7.0f} GFLOP/s")
    for name in ("resident", "host"):
        alone = max(got[r][f"{name} alone"] for r in got)
        both = max(got[r][f"{name} together"] for r in got)
        print(f"{name}: slowest process alone {alone:.3f} s, together {both:.3f} s, "
              f"together / alone = {both / alone:.3f}")


if __name__ == "__main__":
    main()
