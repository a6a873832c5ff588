"""``shadergpgpu report backprop``: pass counts and timing of backpropagation learning.

1. Formula vs measured passes per phase for a grid of networks (MI, MH, MO, N) that includes the
   paper's 2-64-1 with N = 1024: paper schedule packed and unpacked, and the fused schedule.
2. The paper's Fig. 3 (time per learning step vs MH = 4..1024; MI = 2, MO = 1, N = 1024) and
   Fig. 4 (time per step vs N = 2^2..2^14 for MH = 4, 64, 256, 1024) for the paper schedule
   packed and unpacked, the fused schedule and a numpy CPU implementation of the same algorithm.

Writes ``backprop.md``, CSV + JSON for each table and log-log PNG plots into ``--out``.
``--profile NAME`` runs everything under a device profile (e.g. ``geforce-7800gtx``, the
paper's GPU): the schedules adapt to its limits (accumulation by ping-pong passes without
float32 blending, loops cut at its loop cap, at most its draw buffers per pass, arrays wrapped
at its texture size) and the pass table shows the structure those limits force.
The "paper" figures are Takizawa et al.'s GeForce 7800 GTX: 0.008 s (packed) and 0.026 s
(unpacked) per step at MI = 2, MH = 64, MO = 1, N = 1024.

Every timed GPU step carries the cost model's prediction beside it (predicted ms, the term the
model blames, measured / predicted, ok / MISSED), dashed in the plots. Under ``--profile
geforce-7800gtx`` the report also redraws Fig. 3 and 4 with the 7800 GTX's predicted curves
against the paper's published points (:func:`_redraw_7800gtx`).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ...algorithms import backprop as bp
from ..plans import backprop as bplan
from .common import (Checks, Progress, Timer, blas_threads, device_meta, markdown_table, parser,
                     passes_only, plot_lines, write_outputs)
from .predicted import MODEL_COLUMNS, MODEL_SENTENCE, Predictor, model_summary

PAPER = {"paper-packed": 0.008, "paper-unpacked": 0.026}   # s per step, GeForce 7800 GTX
PAPER_CONFIG = (2, 64, 1, 1024)
VARIANTS = (("paper-packed", "paper", True), ("paper-unpacked", "paper", False),
            ("fused", "fused", True))
IMPLS = ("paper-packed", "paper-unpacked", "fused", "numpy")
GPU_PROFILE = "geforce-7800gtx"     # the paper's GPU: its redrawn figures (see the docstring)

SYMBOLS = [
    "\n## Symbols\n",
    "- **MI, MH, MO**: input, hidden and output neurons of the 3-layer net (a net is written "
    "MI-MH-MO; deeper nets list every layer); **K**: weight layers (2 for MI-MH-MO).",
    "- **N**: training vectors (full-batch learning: one step = forward, error backpropagation "
    "and weight update over all N).",
    "- **paper-packed / paper-unpacked**: the paper's schedule with 4 values per RGBA texel / "
    "one; **fused**: this library's schedule of few passes; **numpy**: the same algorithm in "
    "float32 on the CPU, one BLAS thread.",
    "- **passes**: render passes per learning step counted by the pass counter; **paper "
    "formula**: MI+MH+MO+2N+4 (unpacked), MI+MH+MO+N/2+4 (packed).",
    "- **s**: seconds per learning step, the median of repeats after one warm-up step, waiting "
    "for the GPU after each; **spread**: slowest / fastest repeat; each configuration is "
    "measured once and shared by the tables and plots that show it (Fig. 3 at N = 1024 and "
    "Fig. 4 at the same MH).",
    "- **paper 7800GTX**: Takizawa et al.'s GeForce 7800 GTX, 0.008 s (packed) and 0.026 s "
    "(unpacked) at MI=2, MH=64, MO=1, N=1024, the only configuration their text gives as "
    "numbers.",
    "- **<schedule> predicted ms / bound / measured / predicted / model**: the cost model "
    "beside each GPU schedule's measured step: " + MODEL_SENTENCE + "\n",
]


def _closing(passes, figs, quick) -> str:
    """What this run's numbers show, in a few sentences."""
    s = []
    mi, mh, mo, n = PAPER_CONFIG
    net = f"{mi}-{mh}-{mo}"
    pr = {r["variant"]: r for r in passes if r["net"] == net and r["N"] == n}
    if "paper-packed" in pr and "paper-unpacked" in pr:
        saved = pr["paper-unpacked"]["measured (counted)"] - pr["paper-packed"][
            "measured (counted)"]
        s.append(f"At {net}, N = {n}, packing saves {saved:,} passes per step here (the "
                 f"paper: 3N/2 = {3 * n // 2:,}): {pr['paper-unpacked']['measured (counted)']:,}"
                 f" -> {pr['paper-packed']['measured (counted)']:,} counted passes.")
    if "fused" in pr:
        s.append(f"The fused schedule draws {pr['fused']['total measured']} passes per step "
                 "there, all phases included.")
    bad = [r for r in passes if not r["match"]]
    s.append(f"{len(passes) - len(bad)} of {len(passes)} pass counts match their plans.")
    cfg = [r for r in figs.get("fig3", []) if (r["MI"], r["MH"], r["MO"], r["N"])
           == PAPER_CONFIG]
    if cfg:
        r = cfg[0]
        s.append(f"Measured at that configuration: packed {r['paper-packed s']:.3g} s, unpacked "
                 f"{r['paper-unpacked s']:.3g} s (packing {r['paper-unpacked s'] / r['paper-packed s']:.2g}x "
                 f"faster; the paper: {PAPER['paper-unpacked'] / PAPER['paper-packed']:.2g}x), "
                 f"fused {r['fused s']:.3g} s, numpy {r['numpy s']:.3g} s per step.")
    f3 = sorted(figs.get("fig3", []), key=lambda r: r["MH"])
    if f3:
        gpu = lambda r: min(r[f"{i} s"] for i in IMPLS[:3])
        wins = [r["MH"] for r in f3 if gpu(r) < r["numpy s"]]
        if wins and all(gpu(r) < r["numpy s"] for r in f3 if r["MH"] >= wins[0]):
            s.append(f"In Fig. 3 the fastest GPU schedule passes numpy at MH = {wins[0]} and "
                     f"stays ahead up to MH = {f3[-1]['MH']}.")
        elif wins:
            s.append("In Fig. 3 the fastest GPU schedule beats numpy at MH = "
                     + ", ".join(map(str, wins)) + " only.")
        else:
            s.append(f"In Fig. 3 numpy is faster than every GPU schedule at every MH measured "
                     f"(up to {f3[-1]['MH']}).")
    for mh in sorted({r["MH"] for r in figs.get("fig4", [])}):
        rs = sorted((r for r in figs["fig4"] if r["MH"] == mh), key=lambda r: r["N"])
        ratio = [r["paper-unpacked s"] / r["paper-packed s"] for r in rs]
        w = [r["N"] for r in rs if r["paper-packed s"] < r["numpy s"]]
        s.append(f"Fig. 4, MH = {mh}: packing's advantage goes from {ratio[0]:.2g}x at N = "
                 f"{rs[0]['N']} to {ratio[-1]:.2g}x at N = {rs[-1]['N']}; packed beats numpy "
                 + (f"from N = {w[0]}." if w else "at no N measured."))
    spreads = [(r[f"{i} spread"], i, r["MH"], r["N"]) for f in figs.values() for r in f
               for i in IMPLS if r.get(f"{i} spread")]
    if spreads:
        sp = max(spreads)
        s.append(f"The widest spread of repeats is {sp[0]:.2g}x ({sp[1]}, MH = {sp[2]}, "
                 f"N = {sp[3]})" + ("; --quick times are few repeats of short steps." if quick
                                    else "."))
    return " ".join(s)

GRID_FULL = [(2, 64, 1, 1024), (2, 4, 1, 4), (1, 1, 1, 1), (1, 1, 1, 5), (3, 5, 2, 7),
             (8, 16, 4, 30), (2, 256, 1, 1000), (16, 128, 10, 4096), ((4, 8, 6), 3, 10)]
GRID_QUICK = [(2, 64, 1, 1024), (2, 4, 1, 4), (1, 1, 1, 5), (3, 5, 2, 7), ((4, 8, 6), 3, 10)]


def _sizes(cfg):
    if isinstance(cfg[0], tuple):           # deeper nets: ((MI, H1, H2), MO, N)
        return list(cfg[0]) + [cfg[1]], cfg[2]
    mi, mh, mo, n = cfg
    return [mi, mh, mo], n


def _data(sizes, n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.0, 1.0, (n, sizes[0])), rng.uniform(0.0, 1.0, (n, sizes[-1]))


def pass_table(dev, grid, progress) -> list[dict]:
    rows = []
    for cfg in grid:
        sizes, n = _sizes(cfg)
        X, T = _data(sizes, n)
        for name, schedule, packed in VARIANTS:
            net = bp.BackpropNet(dev, sizes, X, T, lr=0.1, schedule=schedule, packed=packed)
            dev.counter.reset()
            net.step()
            measured = {k: v["passes"] for k, v in passes_only(dev.counter.snapshot()).items()}
            expected = bplan.passes_per_step(net)
            net.release()
            row = {"net": "-".join(map(str, sizes)), "N": n, "variant": name}
            for ph in ("forward", "backprop", "update", "output-error", "apply"):
                row[f"{ph} plan"] = expected.get(ph, 0)
                row[f"{ph} measured"] = measured.get(ph, 0)
            if schedule == "paper":
                mi, mo = sizes[0], sizes[-1]
                mh = sum(sizes[1:-1])
                k = len(sizes) - 1
                upd = -(-n // 4) if packed else n
                # the paper's closed form, generalised to K weight layers (K = 2: the paper)
                row["paper formula"] = (mi + mh + mo + 2 * k + k * upd
                                        + sum(sizes[2:-1]))
                row["formula"] = ("MI+MH+MO+N/2+4" if packed else "MI+MH+MO+2N+4") \
                    if k == 2 else "sum(L_m+2) + L_2..L_K + K*upd"
            else:
                row["paper formula"] = None
                row["formula"] = "4K-3 .. 6K-2"
            row["measured (counted)"] = sum(measured.get(p, 0) for p in bplan.PAPER_PHASES)
            row["extra (uncounted)"] = sum(measured.get(p, 0) for p in bplan.EXTRA_PHASES)
            row["total measured"] = sum(measured.values())
            # the paper's closed form counts one pass per accumulation (blending): without
            # float32 blending each accumulating pass is drawn as ping-pong passes
            blending = dev.float_blending
            row["ping-pong extra"] = (row["measured (counted)"] - row["paper formula"]
                                      if row["paper formula"] is not None else 0)
            row["match"] = measured == expected and (
                row["paper formula"] is None or not blending
                or row["paper formula"] == row["measured (counted)"])
            rows.append(row)
            progress.step(f"{row['net']} N={n} {name}")
    return rows


def time_step(dev, impl, sizes, n, repeat, min_time, model=None):
    """One learning step's :class:`~.common.Timing` (median of repeats after a warm-up step,
    with the fastest and slowest); numpy on one BLAS thread (see ``common.blas_threads``); a
    GPU step gets the cost model's columns (``Timing.model``) from ``model``, a Predictor."""
    X, T = _data(sizes, n)
    lr = 0.5 / n
    if impl == "numpy":
        cpu = bp.NumpyMLP(sizes, X, T, lr, dtype=np.float32)
        with blas_threads(1):
            return Timer(None, repeat, 1, min_time)(cpu.step)
    schedule, packed = {"paper-packed": ("paper", True), "paper-unpacked": ("paper", False),
                        "fused": ("fused", True)}[impl]
    net = bp.BackpropNet(dev, sizes, X, T, lr=lr, schedule=schedule, packed=packed)
    try:
        return Timer(dev.finish, repeat, 1, min_time, model=model)(net.step)
    finally:
        net.release()


def sweeps(dev, quick, progress_enabled, mh_max, n_max, model=None):
    if quick:
        fig3_mh = [4, 64]
        fig4 = {4: [4, 64, 1024], 64: [4, 64, 1024]}
        repeat, min_time = 3, 0.02
    else:
        fig3_mh = [2 ** k for k in range(2, 11)]
        fig4 = {mh: [2 ** k for k in range(2, 15)] for mh in (4, 64, 256, 1024)}
        repeat, min_time = 5, 0.2
    fig3_mh = [m for m in fig3_mh if m <= mh_max]
    fig4 = {mh: [n for n in ns if n <= n_max] for mh, ns in fig4.items() if mh <= mh_max}
    jobs = [("fig3", 2, mh, 1, 1024, impl) for mh in fig3_mh for impl in IMPLS]
    jobs += [("fig4", 2, mh, 1, n, impl) for mh, ns in fig4.items() for n in ns for impl in IMPLS]
    rows = {"fig3": {}, "fig4": {}}
    cache = {}      # one measurement per configuration: Fig. 3 and Fig. 4 share theirs
    with Progress(len(jobs), "timing", progress_enabled) as prog:
        for fig, mi, mh, mo, n, impl in jobs:
            ck = (impl, mi, mh, mo, n)
            if ck not in cache:
                cache[ck] = time_step(dev, impl, [mi, mh, mo], n, repeat, min_time, model)
            t = cache[ck]
            key = (mh, n)
            r = rows[fig].setdefault(key, {"MI": mi, "MH": mh, "MO": mo, "N": n})
            r[f"{impl} s"] = t.median
            r[f"{impl} s min"] = t.min
            r[f"{impl} s max"] = t.max
            r[f"{impl} spread"] = t.spread
            for k, v in (t.model or {}).items():     # the cost model's columns, per schedule
                r[f"{impl} {k}"] = v
            prog.step(f"{fig} MH={mh} N={n} {impl}")
    out = {}
    for fig, d in rows.items():
        lst = list(d.values())
        for r in lst:
            cfg = (r["MI"], r["MH"], r["MO"], r["N"])
            for name, v in PAPER.items():
                r[f"paper 7800GTX {name} s"] = v if cfg == PAPER_CONFIG else None
            if r.get("numpy s"):
                for impl in IMPLS[:3]:
                    if r.get(f"{impl} s"):
                        r[f"speed-up {impl} vs numpy"] = r["numpy s"] / r[f"{impl} s"]
        out[fig] = lst
    return out


PLOT_NOTE = ("Error bars: fastest..slowest repeat (the point: median). numpy: the same "
             "algorithm in float32 on one CPU thread. Dashed: the cost model's prediction of "
             "the schedule in the same colour.\nStars: the paper's measured "
             "configuration (GeForce 7800 GTX; MI=2, MH=64, MO=1, N=1024), the only point its "
             "text gives as a number.")


def _paper_series(series, styles, x):
    for name, label in (("paper-packed", "paper 7800GTX packed"),
                        ("paper-unpacked", "paper 7800GTX unpacked")):
        series[label] = ([x], [PAPER[name]])
        styles[label] = {"ls": "none", "marker": "*", "ms": 11}


def _predicted_series(series, rs, key) -> dict:
    """Adds each GPU schedule's predicted curve (s) to ``series``; returns ``predicts``."""
    predicts = {}
    for impl in IMPLS[:3]:
        ys = [r.get(f"{impl} predicted ms") for r in rs]
        if any(y is not None for y in ys):
            series[f"{impl} predicted"] = ([r[key] for r in rs],
                                           [None if y is None else y * 1e-3 for y in ys])
            predicts[f"{impl} predicted"] = impl
    return predicts


def _model_items(figs) -> list:
    """(label, the cost model's columns) of every timed GPU step, each configuration once."""
    rows = {(i, r["MH"], r["N"]): r for f in figs.values() for r in f for i in IMPLS[:3]}
    cols = (*MODEL_COLUMNS, "model error")
    return [(f"{i} MH={mh} N={n}", {c: r.get(f"{i} {c}") for c in cols})
            for (i, mh, n), r in rows.items() if r.get(f"{i} model")]


def _bands(rs):
    return {impl: ([r.get(f"{impl} s min") for r in rs], [r.get(f"{impl} s max") for r in rs])
            for impl in IMPLS}


def _plots(out: Path, figs: dict) -> list[str]:
    made = []
    f3 = figs.get("fig3", [])
    if f3:
        series = {impl: ([r["MH"] for r in f3], [r[f"{impl} s"] for r in f3]) for impl in IMPLS}
        styles = {}
        predicts = _predicted_series(series, f3, "MH")
        _paper_series(series, styles, 64)
        if plot_lines(out / "fig3_time_vs_mh.png", series, "hidden units MH",
                      "seconds per learning step", "Fig. 3: MI=2, MO=1, N=1024",
                      bands=_bands(f3), styles=styles, note=PLOT_NOTE, predicts=predicts):
            made.append("fig3_time_vs_mh.png")
    for mh in sorted({r["MH"] for r in figs.get("fig4", [])}):
        rs = [r for r in figs["fig4"] if r["MH"] == mh]
        series = {impl: ([r["N"] for r in rs], [r[f"{impl} s"] for r in rs]) for impl in IMPLS}
        styles = {}
        predicts = _predicted_series(series, rs, "N")
        if mh == 64:
            _paper_series(series, styles, 1024)
        name = f"fig4_time_vs_n_mh{mh}.png"
        if plot_lines(out / name, series, "training vectors N", "seconds per learning step",
                      f"Fig. 4: MI=2, MH={mh}, MO=1", bands=_bands(rs), styles=styles,
                      note=PLOT_NOTE, predicts=predicts):
            made.append(name)
    return made


def _paper_summary(figs) -> list[dict]:
    rows = []
    for fig in ("fig3", "fig4"):
        for r in figs.get(fig, []):
            if (r["MI"], r["MH"], r["MO"], r["N"]) == PAPER_CONFIG:
                for impl in IMPLS:
                    ours = r[f"{impl} s"]
                    paper = PAPER.get(impl)
                    pred = r.get(f"{impl} predicted ms")
                    rows.append({"implementation": impl, "ours s/step": ours,
                                 "ours predicted s/step": None if pred is None else pred * 1e-3,
                                 "model": r.get(f"{impl} model"),
                                 "paper 7800GTX s/step": paper,
                                 "paper / ours": (paper / ours) if paper else None})
                return rows
    return rows


def _profile_notes(dev, passes) -> list[str]:
    """What the device profile changes in the pass structure (nothing for native)."""
    prof = dev.profile
    if prof.is_native:
        return []
    lim = bp.limits(device=dev)
    out = [f"\n**Under device profile `{prof.name}`** ({prof.description})\n",
           f"- loop cap {lim.loop_cap or 'none'}, at most {lim.max_outputs} render targets per "
           f"pass, textures up to {dev.max_texture_size} texels (arrays wrap past it), float32 "
           f"blending: {'yes' if lim.float_blending else 'no'}.\n"]
    if not lim.float_blending:
        out.append(
            "- **The paper's count assumes something this GPU lacks.** Its closed form "
            "(MI+MH+MO+N/2+4 packed) counts one pass per accumulated term: forward, error "
            "backpropagation and weight update all add into float32 targets by additive "
            "blending. This GPU blends only fp16 surfaces, so each accumulating pass is drawn "
            "here as 3 passes (draw into a temporary, combine with the target into a second "
            "temporary, copy back): the column 'ping-pong extra' is what that costs on top of "
            "the paper's count. The fused schedule's split loops accumulate the same way "
            "(1 + 2R passes per extra slice of an R-target product).\n")
        pp = [r for r in passes if r["variant"] == "paper-packed" and r["net"] == "2-64-1"
              and r["N"] == 1024]
        if pp:
            r = pp[0]
            out.append(f"- At the paper's configuration (2-64-1, N = 1024, packed) the paper "
                       f"counts {r['paper formula']} passes; with ping-pong accumulation the "
                       f"same schedule draws {r['measured (counted)']} "
                       f"(+{r['ping-pong extra']}), {r['total measured']} with the passes "
                       "the paper leaves out.\n")
    if lim.loop_cap is not None:
        out.append(f"- Loops longer than {lim.loop_cap} iterations (fused forward, backprop, "
                   "apply and loss) are cut into extra passes; the paper schedule has no "
                   "loops.\n")
    if lim.max_outputs < 8:
        out.append(f"- The fused schedule's register tiles use at most {lim.max_outputs} "
                   "rows (one render target each).\n")
    return out


def _redraw_7800gtx(args, out, meta, checks) -> tuple[list[str], list[str]]:
    """The paper's Fig. 3 (MH sweep, N = 1024) and Fig. 4 (N sweep, MH = 64) with the cost
    model's 7800 GTX curves (paper schedule packed / unpacked; fused) and numpy against the
    paper's two points (``report model``'s sweeps and plots): markdown lines, plots written."""
    from .model import paper_plots, paper_sweeps
    try:
        figs = paper_sweeps(args.quick, None, False, not args.no_progress)
    except Exception as e:  # noqa: BLE001 - the report goes on, the failure is loud
        checks.require("the paper's figures redrawn on the 7800 GTX", False,
                       f"{type(e).__name__}: {e}")
        return [], []
    for fig, rows in figs.items():
        write_outputs(out, f"{fig}_7800gtx", rows, meta)
    made = [] if args.no_plots else paper_plots(out, figs)
    at = [r for r in figs.get("fig3", []) if r["MH"] == PAPER_CONFIG[1]]
    md = ["\n## The paper's figures on the GeForce 7800 GTX: predicted against its points\n",
          "Passes and work counted here under the 7800 GTX profile's limits (one pass per "
          "accumulated term, as the paper counts them), time from the card's published speeds "
          "(`profiles/geforce-7800gtx.json`) by the cost model of `docs/model.md`; dashed: "
          "predicted (paper schedule packed, unpacked; fused), numpy measured here.\n"]
    if at:
        r = at[0]
        pk, un = r["7800GTX predicted packed s"], r["7800GTX predicted unpacked s"]
        md.append(f"At 2-64-1, N = 1024 the model predicts {pk * 1e3:.3g} ms packed and "
                  f"{un * 1e3:.3g} ms unpacked per step against the paper's "
                  f"{PAPER['paper-packed'] * 1e3:g} / {PAPER['paper-unpacked'] * 1e3:g} ms "
                  f"(predicted / paper {pk / PAPER['paper-packed']:.2f} and "
                  f"{un / PAPER['paper-unpacked']:.2f}).\n")
    for fig, title in (("fig3", "Fig. 3 (MH sweep, N = 1024)"),
                       ("fig4", "Fig. 4 (N sweep, MH = 64)")):
        if figs.get(fig):
            md += [f"\n{title}, 7800 GTX:\n", markdown_table(figs[fig], floatfmt=".3g")]
    return md, made


def main(argv=None) -> int:
    p = parser("backprop", __doc__.split("\n")[0])
    p.add_argument("--mh-max", type=int, default=1024, help="largest MH in the sweeps")
    p.add_argument("--n-max", type=int, default=2 ** 14, help="largest N in the Fig. 4 sweep")
    p.add_argument("--no-timing", action="store_true", help="pass-count table only")
    p.add_argument("--profile", default=None,
                   help="device profile to run under (e.g. geforce-7800gtx, the paper's GPU; "
                        "webgl2, mali-gles31, raspberrypi4, or a .json path)")
    args = p.parse_args(argv)
    from ...engine.device import Device

    dev = Device(backend=args.backend, profile=args.profile)
    meta = device_meta(dev)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    grid = GRID_QUICK if args.quick else GRID_FULL
    with Progress(len(grid) * len(VARIANTS), "passes", not args.no_progress) as prog:
        passes = pass_table(dev, grid, prog)
    write_outputs(out, "passes", passes, meta)
    figs = {}
    if not args.no_timing:
        figs = sweeps(dev, args.quick, not args.no_progress, args.mh_max, args.n_max,
                      Predictor(dev))
        for fig, rows in figs.items():
            write_outputs(out, fig, rows, meta)
    summary = _paper_summary(figs)
    if summary:
        write_outputs(out, "paper_config", summary, meta)
    plots = [] if args.no_plots or not figs else _plots(out, figs)

    ok = all(r["match"] for r in passes)
    checks = Checks("backprop report")
    redraw, made = _redraw_7800gtx(args, out, meta, checks) if (
        dev.profile.name == GPU_PROFILE and not args.no_timing) else ([], [])
    plots += made
    for r in passes:
        checks.require(f"passes of {r['variant']} {r['net']} N={r['N']}", r["match"],
                       f"counted {r['total measured']} passes, the plan and the paper's "
                       "formula disagree (see the table)")
    md = [f"# Backpropagation on render passes: pass counts and timing\n",
          f"Device: {meta['renderer']} ({meta['backend']}), GL {meta['gl_version']}, "
          f"{meta['date']}{' (--quick)' if args.quick else ''}"
          f"{'' if dev.profile.is_native else f', under profile {dev.profile.name}'}.\n",
          *SYMBOLS,
          "## Passes per learning step: plan vs measured\n",
          "Paper schedule: forward, backprop and update are what the paper counts "
          "(MI+MH+MO+2N+4 unpacked, MI+MH+MO+N/2+4 packed; with N not divisible by 4 the "
          "packed update takes ceil(N/4) passes per weight layer). output-error and apply are "
          "passes the paper does not count, reported apart. Fused: per weight layer 1 or 2 "
          "forward passes (direct, or register-tiled product + gather), 1 or 2 backprop, 1 "
          "update and 1 apply, less the first hidden layer's backprop pass (upper layer of at "
          "most 4 neurons) and forward pass (at most 3 inputs), which the consumers make "
          "themselves: 4K-3 to 6K-2 for K >= 2 weight layers (5 for the paper's 2-64-1), "
          "independent of N while every loop fits the loop cap.\n",
          *_profile_notes(dev, passes),
          markdown_table(passes, ["net", "N", "variant", "formula", "paper formula",
                                  "measured (counted)", "ping-pong extra",
                                  "extra (uncounted)", "forward measured",
                                  "backprop measured", "update measured", "output-error measured",
                                  "apply measured", "total measured", "match"]),
          f"\nAll measured counts match their plans: **{'yes' if ok else 'NO'}**.\n"]
    if summary:
        md += ["\n## The paper's configuration (MI=2, MH=64, MO=1, N=1024)\n",
               markdown_table(summary, floatfmt=".3g")]
    for fig, title in (("fig3", "Fig. 3: time per step vs MH (MI=2, MO=1, N=1024)"),
                       ("fig4", "Fig. 4: time per step vs N (MI=2, MO=1)")):
        if figs.get(fig):
            cols = ["MH", "N"] + [f"{i} s" for i in IMPLS] + \
                   [f"{i} spread" for i in IMPLS] + \
                   [f"speed-up {i} vs numpy" for i in IMPLS[:3]] + \
                   [f"paper 7800GTX {n} s" for n in PAPER]
            md += [f"\n## {title}\n", markdown_table(figs[fig], cols, floatfmt=".3g")]
            cols = ["MH", "N"] + [f"{i} {c}" for i in IMPLS[:3]
                                  for c in ("s", "predicted ms", "measured / predicted",
                                            "bound", "model")]
            cols += [f"{i} model error" for i in IMPLS[:3] if any(f"{i} model error" in r
                                                                   for r in figs[fig])]
            md += [f"\n{title.split(':')[0]}, the cost model beside each measured GPU step "
                   "(see Symbols):\n", markdown_table(figs[fig], cols, floatfmt=".3g")]
    md += redraw
    if plots:
        md += ["\n## Plots\n"] + [f"![{p}]({p})\n" for p in plots]
    md += ["\n## What the numbers show\n", _closing(passes, figs, args.quick)
           + (" " + model_summary(_model_items(figs)) if figs else "") + "\n",
           "\n" + checks.markdown()]
    md.append(f"\n(report took {time.perf_counter() - t0:.1f} s)\n")
    (out / "backprop.md").write_text("\n".join(md))
    print("\n".join(md))
    print(f"written to {out}/")
    dev.release()
    return checks.finish()


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(main())
