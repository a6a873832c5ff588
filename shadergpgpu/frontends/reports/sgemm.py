"""``shadergpgpu report sgemm``: the SGEMM pass plan, held against the pass counter.

For each variant and a few shapes: passes per phase (plan vs measured), fragments of the
product passes, texel fetches and flops per fragment, flops per fetch, the relative error against
float64 numpy, and the time of one call (device arrays in and out). Writes ``sgemm.md``,
``sgemm.csv``, ``sgemm.json`` (and ``sgemm.png`` unless ``--no-plots``) under ``--out``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ...engine import plans
from ...engine.device import Device
from ...algorithms.sgemm import VARIANTS, auto_split, default_variant, sgemm, work
from .common import (Progress, device_meta, markdown_table, parser, plot_lines, time_call,
                     write_outputs)


def main(argv=None) -> int:
    args = parser("sgemm", __doc__.splitlines()[0]).parse_args(argv)
    dev = Device(backend=args.backend)
    shapes = [(8, 8, 8), (33, 21, 50), (128, 128, 128)] if args.quick else \
        [(8, 8, 8), (33, 21, 50), (256, 256, 256), (512, 512, 512), (1024, 1024, 1024),
         (2048, 64, 1024), (64, 2048, 1024)]
    rng = np.random.default_rng(7)
    rows = []
    cases = [(v, s) for s in shapes for v in VARIANTS]
    with Progress(len(cases), "sgemm", enabled=not args.no_progress) as prog:
        for variant, (M, N, K) in cases:
            a = rng.uniform(-1, 1, (M, K))
            b = rng.uniform(-1, 1, (K, N))
            A, B = dev.array(a), dev.array(b)
            split = auto_split(dev, VARIANTS[variant], M, N, K)
            dev.counter.reset()
            out = sgemm(A, B, variant=variant, split=split)
            measured = dev.counter.snapshot()
            got = out.get()
            out.release()
            ref = a @ b
            err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
            t = time_call(lambda: sgemm(A, B, variant=variant, split=split).release(),
                          dev.finish, repeat=1 if args.quick else 3)
            # the plan of this device (its loop cap and, under a profile, its limits)
            params = dict(M=M, N=N, K=K, split=split, stage_a=True, stage_b=True, device=dev)
            cmp = plans.compare(plans.get_plan(f"sgemm/{variant}"), measured, **params)
            w = work(variant, M, N, K, split=split, stage_a=True, stage_b=True, device=dev)
            rows.append({
                "variant": variant, "M": M, "N": N, "K": K, "split": w["split"],
                "tile": f"{w['tile_rows']}x4 A:{w['a_path']}",
                "passes_plan": sum(r["expected"] or 0 for r in cmp),
                "passes_measured": sum(r["measured"] for r in cmp),
                "plan_matches": all(r["match"] for r in cmp),
                "phases": " ".join(f"{r['phase'].split('/')[-1]}={r['measured']}" for r in cmp),
                "product_fragments": w["product_fragments"],
                "fetches_per_fragment": w["fetches_per_fragment"],
                "flops_per_fragment": w["flops_per_fragment"],
                "flops_per_fetch": round(w["flops_per_fetch"], 3),
                "rel_err": err, "ms": t * 1e3, "gflops": 2.0 * M * N * K / t / 1e9})
            A.release()
            B.release()
            prog.step(f"{variant} {M}x{N}x{K}")
    meta = device_meta(dev)
    meta["default_variant"] = default_variant(dev)
    out = write_outputs(args.out, "sgemm", rows, meta)
    cols = ["variant", "tile", "M", "N", "K", "split", "passes_plan", "passes_measured", "plan_matches",
            "phases", "product_fragments", "fetches_per_fragment", "flops_per_fragment",
            "flops_per_fetch", "rel_err", "ms", "gflops"]
    lines = [f"# SGEMM pass plan ({meta['renderer']}, {meta['date']})", ""]
    for name in VARIANTS:
        p = plans.get_plan(f"sgemm/{name}")
        lines.append(f"- **{name}**: passes = {p.formula}. {p.notes}")
    lines += ["", "Inputs are device arrays (one staging pass each); `split` = K slices "
              "(product passes summed by additive blending).", "",
              markdown_table(rows, cols)]
    text = "\n".join(lines)
    (Path(out) / "sgemm.md").write_text(text)
    print(text)
    if not args.no_plots:
        series = {}
        for v in VARIANTS:
            pts = [(r["M"], r["gflops"]) for r in rows if r["variant"] == v and r["M"] == r["N"]
                   == r["K"]]
            if pts:
                series[v] = ([x for x, _ in pts], [y for _, y in pts])
        plot_lines(Path(out) / "sgemm.png", series, "n (square)", "GFLOP/s",
                   f"SGEMM on {meta['renderer'][:40]}")
    bad = [r for r in rows if not r["plan_matches"] or r["rel_err"] > 1e-5]
    dev.release()
    return 1 if bad else 0
