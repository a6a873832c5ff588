"""``shadergpgpu report sgemm``: the SGEMM pass plan, held against the pass counter, and the
speed of each variant against this device's measured ceilings and numpy.

For each variant and a few shapes: passes per phase (plan vs measured), fragments of the
product passes, texel fetches and flops per fragment, flops per fetch, the relative error against
float64 numpy, and the time of one call (device arrays in and out; median of repeats after a
warm-up, with the spread). The fragment ALU and texel-fetch ceilings are measured in the same
run (:func:`shadergpgpu.analysis.cost_model.calibrate`), and numpy's float32 ``A @ B`` is timed the same
way. Every timed call carries the cost model's prediction beside it (predicted ms, the term the
model blames, measured / predicted, ok / MISSED), dashed in the plot. Writes ``sgemm.md``,
``sgemm.csv``, ``sgemm.json`` (and ``sgemm.png`` unless ``--no-plots``) under ``--out``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import plans
from ...engine.device import Device
from ...algorithms.sgemm import VARIANTS, auto_split, default_variant, sgemm
from ..plans.sgemm import work
from .common import (Checks, Progress, Timer, blas_threads, device_meta, markdown_table, parser,
                     passes_only, plot_lines, write_outputs)
from .predicted import MODEL_COLUMNS, MODEL_SENTENCE, Predictor, model_summary

# numpy's BLAS on one thread: a stable CPU baseline (a multi-threaded BLAS beside the
# renderer's threads on a small shared host runs many times slower than on one core)
NUMPY_THREADS = 1
REL_ERR_MAX = 1e-5          # float32 products of uniform(-1, 1) data against float64 numpy

SYMBOLS = [
    "- **C = A B**: A is M x K, B is K x N, C is M x N (float32; the reference is float64 "
    "numpy).",
    "- **M, N, K**: the matrix sizes; **n**: the side of a square product (M = N = K = n).",
    "- **split**: K slices, product passes summed by additive blending (or ping-pong passes "
    "without float blending); **tile**: rows x columns of C per fragment, and the path A "
    "is read through (buffer texture, 2-D texture, uniform block).",
    "- **passes_plan / passes_measured**: passes the registered plan `sgemm/<variant>` "
    "predicts / the pass counter counted (staging of both inputs included).",
    "- **flops_per_fetch**: useful flops (2 per multiply-add) per texel fetched in the "
    "product pass.",
    "- **ms** (median), **ms_min..ms_max** (fastest..slowest repeat), **spread** = "
    "slowest / fastest; **GFLOP/s** = 2 M N K / median time.",
    "- **ALU ceiling**: fragment multiply-add rate of this device (GFLOP/s); **fetch "
    "ceiling**: cache-resident RGBA32F texel fetches per second (Gtexel/s); **fetch bound** "
    "of a variant = fetch ceiling x flops_per_fetch; **bound** = the lower of the two.",
    f"- **numpy**: float32 `A @ B` on the host CPU (its BLAS on {NUMPY_THREADS} thread), "
    "timed the same way.",
    "- " + MODEL_SENTENCE + " **predicted_gflops** = 2 M N K / predicted time.",
]


def main(argv=None) -> int:
    args = parser("sgemm", __doc__.splitlines()[0]).parse_args(argv)
    from ..cost_model import calibrate

    dev = Device(backend=args.backend)
    meta = device_meta(dev)
    shapes = [(8, 8, 8), (33, 21, 50), (32, 32, 32), (64, 64, 64), (128, 128, 128)] \
        if args.quick else \
        [(8, 8, 8), (33, 21, 50), (128, 128, 128), (256, 256, 256), (512, 512, 512),
         (1024, 1024, 1024), (2048, 64, 1024), (64, 2048, 1024)]
    timer = Timer(dev.finish, repeat=3 if args.quick else 5, warmup=1,
                  min_time=0.02 if args.quick else 0.2, model=Predictor(dev))
    host_timer = Timer(None, timer.repeat, timer.warmup, timer.min_time)
    checks = Checks("sgemm report")
    rng = np.random.default_rng(7)
    rows, numpy_t = [], {}
    cases = [(v, s) for s in shapes for v in VARIANTS]
    with Progress(len(cases) + 1, "sgemm", enabled=not args.no_progress) as prog:
        ceil = calibrate(dev, quick=args.quick, save=False)["speeds"]
        prog.step("ceilings")
        alu = ceil["alu_gflops"]
        texel = ceil["texel_rate_gtexels"]
        for variant, (M, N, K) in cases:
            a = rng.uniform(-1, 1, (M, K))
            b = rng.uniform(-1, 1, (K, N))
            if (M, N, K) not in numpy_t:            # one numpy timing per shape, reused
                a32, b32 = a.astype(np.float32), b.astype(np.float32)
                with blas_threads(NUMPY_THREADS):
                    numpy_t[(M, N, K)] = host_timer(lambda: a32 @ b32)
            A, B = dev.array(a), dev.array(b)
            split = auto_split(dev, VARIANTS[variant], M, N, K)
            dev.counter.reset()
            out = sgemm(A, B, variant=variant, split=split)
            measured = passes_only(dev.counter.snapshot())
            got = out.get()
            out.release()
            ref = a @ b
            err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
            t = timer(lambda: sgemm(A, B, variant=variant, split=split).release())
            # the plan of this device (its loop cap and, under a profile, its limits)
            params = dict(M=M, N=N, K=K, split=split, stage_a=True, stage_b=True, device=dev)
            cmp = plans.compare(plans.get_plan(f"sgemm/{variant}"), measured, **params)
            what = f"sgemm {variant} {M}x{N}x{K}"
            checks.compare(what, cmp)
            checks.target(f"{what} relative error", err, "<=", REL_ERR_MAX)
            w = work(variant, M, N, K, split=split, stage_a=True, stage_b=True, device=dev)
            gflops = 2.0 * M * N * K / t.median / 1e9
            fetch_bound = texel * w["flops_per_fetch"]
            bound = min(alu, fetch_bound)
            tn = numpy_t[(M, N, K)]
            rows.append({
                "variant": variant, "M": M, "N": N, "K": K, "split": w["split"],
                "tile": f"{w['tile_rows']}x{w.get('tile_cols', 4)} A:{w['a_path']}",
                "passes_plan": sum(r["expected"] or 0 for r in cmp),
                "passes_measured": sum(r["measured"] for r in cmp),
                "plan_matches": all(r["match"] for r in cmp),
                "phases": " ".join(f"{r['phase'].split('/')[-1]}={r['measured']}" for r in cmp),
                "product_fragments": w["product_fragments"],
                "fetches_per_fragment": w["fetches_per_fragment"],
                "flops_per_fragment": w["flops_per_fragment"],
                "flops_per_fetch": round(w["flops_per_fetch"], 3),
                "rel_err": err, **t.row("ms"), "gflops": gflops,
                "gflops_min": 2.0 * M * N * K / t.max / 1e9,
                "gflops_max": 2.0 * M * N * K / t.min / 1e9,
                "fetch_bound_gflops": fetch_bound, "pct_alu": 100.0 * gflops / alu,
                "pct_bound": 100.0 * gflops / bound,
                "numpy_ms": tn.ms, "numpy_gflops": 2.0 * M * N * K / tn.median / 1e9,
                "numpy_spread": tn.spread, "gpu/numpy": tn.median / t.median,
                "predicted_gflops": (2.0 * M * N * K / (t.model["predicted ms"] * 1e6)
                                     if (t.model or {}).get("predicted ms") else None)})
            A.release()
            B.release()
            prog.step(f"{variant} {M}x{N}x{K}")
    meta["default_variant"] = default_variant(dev)
    meta["ceilings"] = {"alu_gflops": alu, "texel_rate_gtexels": texel,
                        "buffer_texel_rate_gtexels": ceil.get("buffer_texel_rate_gtexels")}
    meta["timing"] = timer.describe()
    out = write_outputs(args.out, "sgemm", rows, meta)

    plotted = None
    squares = sorted({r["M"] for r in rows if r["M"] == r["N"] == r["K"]})
    if not args.no_plots and squares:
        series, bands, styles, predicts = {}, {}, {}, {}
        for v in VARIANTS:
            rs = [r for r in rows if r["variant"] == v and r["M"] == r["N"] == r["K"]]
            series[v] = ([r["M"] for r in rs], [r["gflops"] for r in rs])
            bands[v] = ([r["gflops_min"] for r in rs], [r["gflops_max"] for r in rs])
        for v in VARIANTS:            # after the measured curves: the legend lists them first
            rs = [r for r in rows if r["variant"] == v and r["M"] == r["N"] == r["K"]]
            series[f"{v} predicted"] = ([r["M"] for r in rs],
                                        [r.get("predicted_gflops") for r in rs])
            predicts[f"{v} predicted"] = v
        dv = meta["default_variant"]
        rs = [r for r in rows if r["variant"] == dv and r["M"] == r["N"] == r["K"]]
        series["numpy float32 (CPU, 1 thread)"] = ([r["M"] for r in rs], [r["numpy_gflops"] for r in rs])
        styles["numpy float32 (CPU, 1 thread)"] = {"color": "k", "ls": "--", "marker": "s"}
        fb = texel * rs[-1]["flops_per_fetch"] if rs else None
        hlines = {f"ALU ceiling {alu:.3g} GFLOP/s": alu,
                  f"fetch bound of {dv} ({texel:.3g} Gtexel/s x "
                  f"{(fb or 0) / texel:.3g} flop/texel)": fb}
        if plot_lines(out / "sgemm.png", series, "n (square products, M = N = K = n)",
                      "GFLOP/s (2 n^3 / median time)", "SGEMM: GFLOP/s per variant vs ceilings",
                      bands=bands, hlines=hlines, styles=styles, predicts=predicts,
                      note="Error bars: fastest..slowest repeat. Dashed horizontal: ceilings "
                           "measured in this run; dashed curves: the cost model's prediction "
                           "of each variant (its colour).\nPoints only at measured n; "
                           "non-square shapes are in the table only."):
            plotted = "sgemm.png"

    lines = ["# SGEMM: pass plan, speed and ceilings", "",
             f"Device: {meta['device']}, GL {meta['gl_version']}; date {meta['date']}"
             f"{' (--quick)' if args.quick else ''}. Default variant here: "
             f"`{meta['default_variant']}`.", "", "## Symbols", "", *SYMBOLS, "",
             "## Plans", ""]
    for name in VARIANTS:
        p = plans.get_plan(f"sgemm/{name}")
        lines.append(f"- **{name}**: passes = {p.formula}. {p.notes}")
    lines += ["", "## Ceilings (measured in this run)", "",
              f"- ALU ceiling: **{alu:.4g} GFLOP/s**; texel-fetch ceiling (2-D texture): "
              f"**{texel:.4g} Gtexel/s**; buffer texture: "
              f"{ceil.get('buffer_texel_rate_gtexels') or 0:.4g} Gtexel/s.",
              "", "## Results", "",
              f"Inputs are device arrays (one staging pass each). Timing: {timer.describe()}; "
              "numpy: the same policy on the host.", "",
              markdown_table(rows, ["variant", "tile", "M", "N", "K", "split", "passes_plan",
                                    "passes_measured", "plan_matches", "phases",
                                    "product_fragments", "fetches_per_fragment",
                                    "flops_per_fragment", "flops_per_fetch", "rel_err"]), "",
              markdown_table(rows, ["variant", "M", "N", "K", "ms", "ms_min", "ms_max",
                                    "spread", "gflops", "pct_alu", "fetch_bound_gflops",
                                    "pct_bound", "numpy_ms", "numpy_gflops", "gpu/numpy"]),
              "", markdown_table(rows, ["variant", "M", "N", "K", "ms", *MODEL_COLUMNS,
                                        "predicted_gflops"]
                                 + (["model error"] if any("model error" in r for r in rows)
                                    else []))]
    if plotted:
        lines += ["", "## Plot", "", f"![SGEMM GFLOP/s vs n]({plotted})", "",
                  "GFLOP/s of each variant at the square sizes measured (error bars: "
                  "fastest..slowest repeat), numpy float32 on the CPU, the ALU ceiling and "
                  "the default variant's fetch bound of this run (dashed lines), and the cost "
                  "model's prediction of each variant (dashed, in its colour)."]
    lines += ["", "## What the numbers show", "", _summary(rows, alu, texel, meta, checks)
              + " " + model_summary([(f"{r['variant']} {r['M']}x{r['N']}x{r['K']}", r)
                                     for r in rows])]
    lines += ["", checks.markdown()]
    text = "\n".join(lines)
    (Path(out) / "sgemm.md").write_text(text)
    print(text)
    dev.release()
    return checks.finish()


def _summary(rows, alu, texel, meta, checks) -> str:
    n_plan = len(rows)
    ok = sum(r["plan_matches"] for r in rows)
    worst = max(r["rel_err"] for r in rows)
    big = max(rows, key=lambda r: (r["M"] * r["N"] * r["K"], r["gflops"]))
    size = (big["M"], big["N"], big["K"])
    at = [r for r in rows if (r["M"], r["N"], r["K"]) == size]
    best = max(at, key=lambda r: r["gflops"])
    sq = "n = %d" % size[0] if size[0] == size[1] == size[2] else "%dx%dx%d" % size
    s = [f"The pass plan matches the counter in {ok} of {n_plan} calls; the largest "
         f"relative error against float64 numpy is {worst:.2g} (limit {REL_ERR_MAX:g}).",
         f"At the largest product measured ({sq}) the fastest variant, `{best['variant']}`, "
         f"runs at {best['gflops']:.3g} GFLOP/s (repeats {best['gflops_min']:.3g}.."
         f"{best['gflops_max']:.3g}): {best['pct_alu']:.0f}% of the ALU ceiling "
         f"({alu:.3g} GFLOP/s) and {best['pct_bound']:.0f}% of its bound (the lower of the ALU "
         f"ceiling and its fetch bound, {best['fetch_bound_gflops']:.3g} GFLOP/s).",
         f"The slowest variant there, `{min(at, key=lambda r: r['gflops'])['variant']}`, "
         f"reaches {min(r['gflops'] for r in at):.3g} GFLOP/s.",
         f"numpy float32 on one CPU thread runs that product at {best['numpy_gflops']:.3g} GFLOP/s: "
         + (f"the fastest variant is {best['gpu/numpy']:.2g}x faster than numpy."
            if best["gpu/numpy"] >= 1 else
            f"numpy is {1 / best['gpu/numpy']:.2g}x faster than the fastest variant.")]
    tiny = [r for r in rows if r["M"] * r["N"] * r["K"] <= 512]
    if tiny:
        t = min(r["ms"] for r in tiny)
        s.append(f"At 8x8x8 a call takes at least {t:.2g} ms whatever the variant: the passes' "
                 "fixed cost, not arithmetic, sets the time of small products.")
    if meta.get("renderer", "").lower().startswith("llvmpipe"):
        s.append("On llvmpipe the 'GPU' is the same CPU as numpy's, so the ceilings are CPU "
                 "rates seen through the fragment pipeline.")
    return " ".join(s)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
