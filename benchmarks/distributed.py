"""Scaling over GPUs: SGEMM and Sammon on a Dask cluster of one worker process per GPU.

    python benchmarks/distributed.py              # SGEMM n = 16,384, Sammon N = 100,000 (GPUs)
    python benchmarks/distributed.py --quick      # small sizes, a few seconds a step (llvmpipe)
    python benchmarks/distributed.py --gpus 0,1   # EGL device indices of the workers

Scaling efficiency ``t_1 / (k t_k)`` with ``k`` workers (default 2; target >= 90 %), where
``t_1`` is the single-device run in this process (the library without Dask, same data) and
``t_k`` the run on the cluster; a 1-worker cluster is timed too, so that the cost of Dask
itself (``t_1 / t_1w``) is visible. A line ``MISSED`` is printed when an efficiency is below
the target.

* SGEMM ``C = A B`` (n x n, float32, random): single device ``sgemm(A, B)`` on numpy operands
  (upload, product, readback). Cluster: ``shadergpgpu.distributed.matmul`` of dask arrays
  already on the workers (A by row blocks, B replicated on every worker: the inputs of a real
  distributed job live on the cluster), result kept on the workers (``persist``): each worker
  uploads its blocks, multiplies on its GPU and reads its part of C back to its memory.
* Sammon (N points, 16 features, two Gaussian blobs -> 2-D, fixed step, ``cache=False``):
  ``Sammon.fit(X)`` on one device vs ``Sammon.fit(X, client=)``; whole fits (setup included)
  and the median time of one evaluation (update passes + stress) are compared.

SGEMM on the cluster also runs once more under ``get_task_stream`` and prints, per worker, when
its work started and ended, its compute and its transfer time; ``--blocks`` times other block
plans beside the default one.

Device names, EGL device index and process id of every worker are printed first (with the GPU
that ``nvidia-smi`` shows each worker process on, where it can tell).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import uuid

import numpy as np

# This file's name would shadow the ``distributed`` package: drop its folder from the path.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.path.insert(0, os.path.join(_HERE, ".."))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu import distributed as sgd  # noqa: E402
from shadergpgpu.algorithms.sammon import Sammon  # noqa: E402
from shadergpgpu.algorithms.sgemm import sgemm  # noqa: E402

TARGET = 0.90


def nvidia_smi_gpus() -> dict:
    """pid -> GPU index from the process table of ``nvidia-smi`` (graphics contexts too)."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {}
    try:
        out = subprocess.run([exe], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    found = {}
    for line in out.splitlines():
        m = re.match(r"\|\s+(\d+)\s+\S+\s+\S+\s+(\d+)\s+(C|G|C\+G)\s", line)
        if m:
            found.setdefault(int(m.group(2)), set()).add(int(m.group(1)))
    return found


def show_workers(client, label):
    info = sgd.device_info(client)
    smi = nvidia_smi_gpus()
    print(f"{label}: {len(info)} worker(s)")
    for i in info:
        gpu = smi.get(i["pid"])
        print(f"  {i['worker']}  pid {i['pid']}  EGL device {i['egl_device']}  "
              f"{i['renderer']}  max texture {i['max_texture_size']}"
              + (f"  nvidia-smi GPU {sorted(gpu)}" if gpu else ""))
    if all(i["is_software"] for i in info) and len(info) > 1:
        print("  (software rendering: the workers share this machine's CPU cores, so no "
              "scaling is expected here)")
    pinned = [tuple(sorted(smi[i['pid']])) for i in info if i["pid"] in smi]
    if len(pinned) == len(info) and len(set(pinned)) < len(pinned):
        print("  WARNING: several workers render on the same GPU (check --gpus / the EGL "
              "device order)")
    return info


def efficiency(name, t1, tk, k, t1w=None):
    eff = t1 / (k * tk)
    line = (f"{name}: t_1 = {t1:.3f} s (one device), t_{k} = {tk:.3f} s ({k} workers), "
            f"efficiency t_1 / ({k} t_{k}) = {100 * eff:.1f} %")
    if t1w is not None:
        line += f"; 1-worker cluster {t1w:.3f} s (Dask overhead x{t1w / t1:.2f})"
    print(line)
    if eff < TARGET:
        print(f"MISSED: {name} scaling efficiency {100 * eff:.1f} % < {100 * TARGET:.0f} %")
    return eff


def best(fn, repeat):
    ts = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return min(ts), out


# ---- SGEMM -------------------------------------------------------------------------------------
def sgemm_single(dev, A, B, repeat):
    sgemm(A[:256, :256], B[:256, :256], device=dev)          # compile
    t, C = best(lambda: sgemm(A, B, device=dev), repeat)
    return t, C


def task_stream_summary(ts, t0):
    """Per worker of a ``get_task_stream`` record: when its first and last work started and
    ended (seconds after ``t0``) and its compute and transfer seconds: where a run's time went."""
    per = {}
    for rec in ts:
        w = per.setdefault(rec.get("worker", "?"), {"compute": 0.0, "transfer": 0.0,
                                                     "first": float("inf"), "last": 0.0,
                                                     "tasks": 0})
        w["tasks"] += 1
        for ss in rec.get("startstops", ()):
            kind = "compute" if ss["action"] == "compute" else "transfer"
            w[kind] += ss["stop"] - ss["start"]
            w["first"] = min(w["first"], ss["start"] - t0)
            w["last"] = max(w["last"], ss["stop"] - t0)
    for name, w in sorted(per.items()):
        print(f"    {name}: {w['tasks']} task(s), work from {w['first']:.3f} s to "
              f"{w['last']:.3f} s, compute {w['compute']:.3f} s, transfers "
              f"{w['transfer']:.3f} s")


def sgemm_cluster(client, A, B, repeat, check, block=None):
    import dask.array as da
    from distributed import futures_of, get_task_stream, wait
    info = sgd.device_info(client)
    n = A.shape[0]
    limit = min(i["max_texture_size"] for i in info)
    bm, bn, bk = block or sgd.plan_blocks(n, n, n, len(info), limit)
    print(f"  blocks {bm} x {bn} x {bk}")
    Ad = client.persist(da.from_array(A, chunks=(bm, bk)))
    Bd = client.persist(da.from_array(B, chunks=(bk, bn)))
    wait([Ad, Bd])
    client.replicate(futures_of(Bd))          # B on every worker, A spread by row blocks

    def run():
        # a new graph name per run: equal keys would be found in memory, not computed
        Cp = client.persist(sgd.matmul(Ad, Bd, client=client, block=(bm, bn, bk),
                                       name=f"bench-matmul-{uuid.uuid4().hex}"))
        wait(Cp)
        return Cp
    sgd.matmul(Ad[:256, :256], Bd[:256, :256], client=client).compute()   # compile
    t, Cp = best(run, repeat)
    with get_task_stream(client) as ts:
        t0 = time.time()
        run()
        print(f"  one more run, traced: {time.time() - t0:.3f} s")
    task_stream_summary(ts.data, t0)
    if check is not None:
        rows = slice(0, min(n, 512))
        got = Cp[rows].compute()
        err = float(np.abs(got - check[rows]).max() / max(np.abs(check[rows]).max(), 1e-30))
        print(f"  cluster C vs single-device C (first rows): max rel diff {err:.2e}")
    return t


def _resident_setup(dev, shard):
    return {"A": dev.array(shard["A"]), "B": dev.array(shard["common"])}


def _resident_product(dev, st):
    C = sgemm(st["A"], st["B"], device=dev)
    dev.finish()
    C.release()
    return None


def sgemm_resident_single(dev, A, B, repeat):
    """Operands already on the device (as in an iterative computation): product only."""
    Ad, Bd = dev.array(A), dev.array(B)
    try:
        def run():
            C = sgemm(Ad, Bd, device=dev)
            dev.finish()
            C.release()
        run()
        return best(run, repeat)[0]
    finally:
        Ad.release()
        Bd.release()


def sgemm_resident_cluster(client, A, B, repeat):
    """A by row shards and B on every worker's device (uploaded once): product only."""
    with sgd.Shards(client, {"A": A}, _resident_setup, common=B) as sh:
        sh.map(_resident_product)                      # upload and compile
        return best(lambda: sh.map(_resident_product), repeat)[0]


# ---- Sammon ------------------------------------------------------------------------------------
def sammon_data(n, d=16, seed=0):
    rng = np.random.default_rng(seed)
    h = n // 2
    return np.vstack([rng.standard_normal((h, d)),
                      rng.standard_normal((n - h, d)) + 4.0]).astype(np.float32)


def sammon_params(iters):
    return dict(n_iter=iters, step="source", cache=False, tol=None, init="pca")


def sammon_fit(X, iters, client=None, device=None):
    est = Sammon(device=device, **sammon_params(iters))
    t0 = time.perf_counter()
    est.fit(X, client=client)
    t = time.perf_counter() - t0
    ev = est.timings_["eval_s"]
    return t, float(np.median(ev[1:] if len(ev) > 1 else ev)), est


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (llvmpipe, CI)")
    ap.add_argument("--workers", type=int, default=2, help="workers of the scaling run")
    ap.add_argument("--gpus", default=None,
                    help="EGL device indices, comma-separated (default: one per nvidia-smi "
                         "GPU, llvmpipe without)")
    ap.add_argument("--sgemm-n", type=int, default=None)
    ap.add_argument("--sammon-n", type=int, default=None)
    ap.add_argument("--iters", type=int, default=None, help="Sammon evaluations")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--skip", default="", help="comma-separated: sgemm, sammon")
    ap.add_argument("--blocks", default="",
                    help="other matmul block plans to time on the cluster, e.g. "
                         "'4096x16384x16384,8192x8192x16384' (bm x bn x bk)")
    args = ap.parse_args(argv)
    n_gemm = args.sgemm_n or (1024 if args.quick else 16384)
    n_sam = args.sammon_n or (2000 if args.quick else 100_000)
    iters = args.iters or (5 if args.quick else 20)
    repeat = args.repeat or (2 if args.quick else 3)
    skip = set(filter(None, args.skip.split(",")))
    gpus = None if args.gpus is None else [int(g) for g in args.gpus.split(",")]
    k = args.workers
    blocks = [tuple(int(v) for v in b.split("x")) for b in args.blocks.split(",") if b]

    dev = sg.Device()
    print(f"this process: {dev.caps.renderer} (EGL device "
          f"{os.environ.get('SHADERGPGPU_EGL_DEVICE', 'default')})")
    rng = np.random.default_rng(0)
    results = {}

    # single-device baselines first (nothing else on the GPUs)
    if "sgemm" not in skip:
        A = rng.standard_normal((n_gemm, n_gemm), dtype=np.float32)
        B = rng.standard_normal((n_gemm, n_gemm), dtype=np.float32)
        t1_gemm, C1 = sgemm_single(dev, A, B, repeat)
        print(f"SGEMM n = {n_gemm}: one device {t1_gemm:.3f} s "
              f"({2 * n_gemm ** 3 / t1_gemm / 1e9:.0f} GFLOP/s) from host memory")
        t1_res = sgemm_resident_single(dev, A, B, repeat)
        print(f"SGEMM n = {n_gemm}: one device {t1_res:.3f} s "
              f"({2 * n_gemm ** 3 / t1_res / 1e9:.0f} GFLOP/s) on resident operands")
    if "sammon" not in skip:
        X = sammon_data(n_sam)
        t1_sam, e1_sam, ref = sammon_fit(X, iters, device=dev)
        print(f"Sammon N = {n_sam}, {iters} evaluations: one device fit {t1_sam:.3f} s, "
              f"evaluation {e1_sam:.4f} s (setup {ref.timings_['setup_s']:.3f} s)")
    dev.release()

    for workers in (1, k):
        client = sgd.local_cluster(workers, gpus=gpus)
        try:
            show_workers(client, f"cluster of {workers}")
            if "sgemm" not in skip:
                t = sgemm_cluster(client, A, B, repeat, C1 if workers == k else None)
                results[("sgemm", workers)] = t
                print(f"SGEMM n = {n_gemm}: {workers} worker(s) {t:.3f} s "
                      f"({2 * n_gemm ** 3 / t / 1e9:.0f} GFLOP/s) from host memory")
                for blk in (blocks if workers == k else ()):
                    t = sgemm_cluster(client, A, B, repeat, None, block=blk)
                    print(f"SGEMM n = {n_gemm}: {workers} worker(s) {t:.3f} s "
                          f"({2 * n_gemm ** 3 / t / 1e9:.0f} GFLOP/s) from host memory, "
                          f"blocks {blk}: efficiency {100 * t1_gemm / (k * t):.1f} %")
                t = sgemm_resident_cluster(client, A, B, repeat)
                results[("resident", workers)] = t
                print(f"SGEMM n = {n_gemm}: {workers} worker(s) {t:.3f} s "
                      f"({2 * n_gemm ** 3 / t / 1e9:.0f} GFLOP/s) on resident operands")
            if "sammon" not in skip:
                t, e, est = sammon_fit(X, iters, client=client)
                results[("sammon", workers)] = (t, e)
                diff = float(np.abs(est.embedding_ - ref.embedding_).max()
                             / np.abs(ref.embedding_).max())
                print(f"Sammon N = {n_sam}: {workers} worker(s) fit {t:.3f} s, evaluation "
                      f"{e:.4f} s, stress {est.stress_:.6f} (one device {ref.stress_:.6f}), "
                      f"embedding max rel diff {diff:.1e}")
        finally:
            client.close()
            client.cluster.close()

    print()
    if "sgemm" not in skip:
        efficiency(f"SGEMM n = {n_gemm} (matmul, from host memory)", t1_gemm,
                   results[("sgemm", k)], k, results[("sgemm", 1)])
        efficiency(f"SGEMM n = {n_gemm} (resident operands)", t1_res,
                   results[("resident", k)], k, results[("resident", 1)])
    if "sammon" not in skip:
        efficiency(f"Sammon N = {n_sam} fit", t1_sam, results[("sammon", k)][0], k,
                   results[("sammon", 1)][0])
        efficiency(f"Sammon N = {n_sam} per evaluation", e1_sam, results[("sammon", k)][1],
                   k, results[("sammon", 1)][1])


if __name__ == "__main__":
    main()
