"""Benchmark of the one-line kernels: elementwise bandwidth, scan and sort throughput.

    python benchmarks/ops.py [--quick] [--repeat N]

* **Elementwise**: ``z = x * y + a`` (two arrays in, one out) in GB/s moved, against the
  fragment copy bandwidth (``engine.builtin.COPY``, one in, one out) measured in the same run
  on the same arrays. Target: >= 80 % of the copy bandwidth.
* **Scan** (``cumsum`` per row and flattened) and **sort** (``sort`` per row, ``argsort``
  flattened) in elements/s against numpy on the host (and torch on a CUDA GPU when importable),
  in the same run. Target on a hardware GPU: at least numpy's throughput; on a software
  renderer (llvmpipe) the numbers are reported without a target.

A missed target prints ``MISSED`` and the script exits with status 1.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.engine.builtin import COPY  # noqa: E402
from shadergpgpu.analysis.reports.common import markdown_table  # noqa: E402
from shadergpgpu.ops.elementwise import ElementwiseKernel  # noqa: E402
from shadergpgpu.ops.scan import cumsum  # noqa: E402
from shadergpgpu.ops.sort import argsort, sort  # noqa: E402

FMA = ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z", "z = x * y + a",
                        name="bench_fma")


def best(fn, repeat: int, sync=lambda: None) -> float:
    """Best wall time of ``fn`` over ``repeat`` runs (after one warm-up), synchronised."""
    fn()
    sync()
    t = float("inf")
    for _ in range(repeat):
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        t = min(t, time.perf_counter() - t0)
    return t


def torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    ap.add_argument("--repeat", type=int, default=None, help="timed runs per case (best kept)")
    a = ap.parse_args(argv)
    repeat = a.repeat or (3 if a.quick else 5)
    dev = sg.Device()
    hw = not dev.is_software
    print(f"device: {dev.caps.renderer} ({'hardware' if hw else 'software renderer'})")
    sync = dev.finish
    rng = np.random.default_rng(0)
    missed = []

    # ---- elementwise vs copy -------------------------------------------------------------
    side = 1024 if a.quick else 4096
    passes = 5 if a.quick else 20
    x = dev.array(rng.standard_normal((side, side)))
    y = dev.array(rng.standard_normal((side, side)))
    z = dev.empty_like(x)
    nbytes = side * side * 4

    def copy():
        for _ in range(passes):
            dev.run(COPY, z, inputs={"X": x})

    def ew():
        for _ in range(passes):
            FMA(x, y, 0.5, z)

    # interleaved, best of each: both see the same machine load
    t_copy = t_ew = float("inf")
    for _ in range(repeat):
        t_copy = min(t_copy, best(copy, 1, sync) / passes)
        t_ew = min(t_ew, best(ew, 1, sync) / passes)
    np.testing.assert_allclose(z.get()[:2, :8], (x.get() * y.get() + np.float32(0.5))[:2, :8],
                               rtol=1e-5)
    gb_copy, gb_ew = 2 * nbytes / t_copy / 1e9, 3 * nbytes / t_ew / 1e9
    ratio = gb_ew / gb_copy
    ok = ratio >= 0.80
    rows = [{"case": f"copy {side}x{side}", "GB/s": gb_copy, "ms/pass": t_copy * 1e3},
            {"case": f"elementwise z = x*y + a {side}x{side}", "GB/s": gb_ew,
             "ms/pass": t_ew * 1e3, "vs copy": ratio, "target": ">= 0.80",
             "status": "MET" if ok else "MISSED"}]
    if not ok:
        missed.append(f"elementwise bandwidth {ratio:.2f} of copy (target >= 0.80)")
    for arr in (x, y, z):
        arr.release()

    # ---- scan and sort vs numpy (and torch) -----------------------------------------------
    r, c = (256, 1024) if a.quick else (1024, 4096)
    h = rng.standard_normal((r, c)).astype(np.float32)
    th = torch_cuda()
    cases = [
        ("cumsum per row", lambda d: cumsum(d, axis=1), lambda m: np.cumsum(m, axis=1),
         lambda t, m: th.cumsum(m, dim=1)),
        ("cumsum flattened", lambda d: cumsum(d), lambda m: np.cumsum(m),
         lambda t, m: th.cumsum(m.flatten(), dim=0)),
        ("sort per row", lambda d: sort(d), lambda m: np.sort(m, axis=-1),
         lambda t, m: th.sort(m, dim=-1)),
        ("argsort flattened (stable)", lambda d: argsort(d, axis=None),
         lambda m: np.argsort(m, axis=None, kind="stable"),
         lambda t, m: th.sort(m.flatten(), stable=True)),
    ]
    X = dev.array(h)
    tm = th.from_numpy(h).cuda() if th is not None else None
    for name, ours, ref, tor in cases:
        def run_ours():
            out = ours(X)
            sync()
            out.release()
        t_ours = best(run_ours, repeat, sync)
        t_np = best(lambda: ref(h), repeat)
        row = {"case": f"{name} {r}x{c}", "ours Melem/s": h.size / t_ours / 1e6,
               "numpy Melem/s": h.size / t_np / 1e6, "ours / numpy": t_np / t_ours}
        if tm is not None:
            t_t = best(lambda: tor(th, tm), repeat, th.cuda.synchronize)
            row["torch-cuda Melem/s"] = h.size / t_t / 1e6
        if hw:
            row["target"] = ">= 1.0"
            row["status"] = "MET" if t_np / t_ours >= 1.0 else "MISSED"
            if row["status"] == "MISSED":
                missed.append(f"{name}: {t_np / t_ours:.2f}x numpy (target >= 1.0)")
        else:
            row["target"] = "n/a (software renderer)"
        rows.append(row)
    X.release()
    cols = ["case", "GB/s", "ms/pass", "vs copy", "ours Melem/s", "numpy Melem/s",
            "ours / numpy", "torch-cuda Melem/s", "target", "status"]
    print(markdown_table(rows, [k for k in cols if any(k in rw for rw in rows)], ".3g"))
    if missed:
        print("\n".join(["", "!" * 60] + [f"MISSED: {m}" for m in missed] + ["!" * 60]))
        return 1
    print("\nall targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
