"""``shadergpgpu report backprop``: pass counts and timing of backpropagation learning.

1. Formula vs measured passes per phase for a grid of networks (MI, MH, MO, N) that includes the
   paper's 2-64-1 with N = 1024: paper schedule packed and unpacked, and the fused schedule.
2. The paper's Fig. 3 (time per learning step vs MH = 4..1024; MI = 2, MO = 1, N = 1024) and
   Fig. 4 (time per step vs N = 2^2..2^14 for MH = 4, 64, 256, 1024) for the paper schedule
   packed and unpacked, the fused schedule and a numpy CPU implementation of the same algorithm.

Writes ``backprop.md``, CSV + JSON for each table and log-log PNG plots into ``--out``.
The "paper" figures are Takizawa et al.'s GeForce 7800 GTX: 0.008 s (packed) and 0.026 s
(unpacked) per step at MI = 2, MH = 64, MO = 1, N = 1024.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ...algorithms import backprop as bp
from .common import (Progress, device_meta, markdown_table, parser, plot_lines, time_call,
                     write_outputs)

PAPER = {"paper-packed": 0.008, "paper-unpacked": 0.026}   # s per step, GeForce 7800 GTX
PAPER_CONFIG = (2, 64, 1, 1024)
VARIANTS = (("paper-packed", "paper", True), ("paper-unpacked", "paper", False),
            ("fused", "fused", True))
IMPLS = ("paper-packed", "paper-unpacked", "fused", "numpy")

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
            measured = {k: v["passes"] for k, v in dev.counter.snapshot().items()}
            expected = net.passes_per_step()
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
                row["formula"] = "4K-1"
            row["measured (counted)"] = sum(measured.get(p, 0) for p in bp.PAPER_PHASES)
            row["extra (uncounted)"] = sum(measured.get(p, 0) for p in bp.EXTRA_PHASES)
            row["total measured"] = sum(measured.values())
            row["match"] = measured == expected and (
                row["paper formula"] is None or row["paper formula"] == row["measured (counted)"])
            rows.append(row)
            progress.step(f"{row['net']} N={n} {name}")
    return rows


def time_step(dev, impl, sizes, n, repeat, min_time) -> float:
    X, T = _data(sizes, n)
    lr = 0.5 / n
    if impl == "numpy":
        cpu = bp.NumpyMLP(sizes, X, T, lr, dtype=np.float32)
        return time_call(cpu.step, lambda: None, repeat=repeat, min_time=min_time)
    schedule, packed = {"paper-packed": ("paper", True), "paper-unpacked": ("paper", False),
                        "fused": ("fused", True)}[impl]
    net = bp.BackpropNet(dev, sizes, X, T, lr=lr, schedule=schedule, packed=packed)
    try:
        return time_call(net.step, dev.finish, repeat=repeat, min_time=min_time)
    finally:
        net.release()


def sweeps(dev, quick, progress_enabled, mh_max, n_max):
    if quick:
        fig3_mh = [4, 64]
        fig4 = {4: [4, 64, 1024], 64: [4, 64, 1024]}
        repeat, min_time = 2, 0.0
    else:
        fig3_mh = [2 ** k for k in range(2, 11)]
        fig4 = {mh: [2 ** k for k in range(2, 15)] for mh in (4, 64, 256, 1024)}
        repeat, min_time = 3, 0.2
    fig3_mh = [m for m in fig3_mh if m <= mh_max]
    fig4 = {mh: [n for n in ns if n <= n_max] for mh, ns in fig4.items() if mh <= mh_max}
    jobs = [("fig3", 2, mh, 1, 1024, impl) for mh in fig3_mh for impl in IMPLS]
    jobs += [("fig4", 2, mh, 1, n, impl) for mh, ns in fig4.items() for n in ns for impl in IMPLS]
    rows = {"fig3": {}, "fig4": {}}
    with Progress(len(jobs), "timing", progress_enabled) as prog:
        for fig, mi, mh, mo, n, impl in jobs:
            t = time_step(dev, impl, [mi, mh, mo], n, repeat, min_time)
            key = (mh, n)
            r = rows[fig].setdefault(key, {"MI": mi, "MH": mh, "MO": mo, "N": n})
            r[f"{impl} s"] = t
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


def _plots(out: Path, figs: dict) -> list[str]:
    made = []
    f3 = figs.get("fig3", [])
    if f3:
        series = {impl: ([r["MH"] for r in f3], [r[f"{impl} s"] for r in f3]) for impl in IMPLS}
        series["paper 7800GTX packed"] = ([64], [PAPER["paper-packed"]])
        series["paper 7800GTX unpacked"] = ([64], [PAPER["paper-unpacked"]])
        if plot_lines(out / "fig3_time_vs_mh.png", series, "hidden units MH",
                      "seconds per learning step", "Fig. 3: MI=2, MO=1, N=1024"):
            made.append("fig3_time_vs_mh.png")
    for mh in sorted({r["MH"] for r in figs.get("fig4", [])}):
        rs = [r for r in figs["fig4"] if r["MH"] == mh]
        series = {impl: ([r["N"] for r in rs], [r[f"{impl} s"] for r in rs]) for impl in IMPLS}
        if mh == 64:
            series["paper 7800GTX packed"] = ([1024], [PAPER["paper-packed"]])
            series["paper 7800GTX unpacked"] = ([1024], [PAPER["paper-unpacked"]])
        name = f"fig4_time_vs_n_mh{mh}.png"
        if plot_lines(out / name, series, "training vectors N", "seconds per learning step",
                      f"Fig. 4: MI=2, MH={mh}, MO=1"):
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
                    rows.append({"implementation": impl, "ours s/step": ours,
                                 "paper 7800GTX s/step": paper,
                                 "paper / ours": (paper / ours) if paper else None})
                return rows
    return rows


def main(argv=None) -> int:
    p = parser("backprop", __doc__.split("\n")[0])
    p.add_argument("--mh-max", type=int, default=1024, help="largest MH in the sweeps")
    p.add_argument("--n-max", type=int, default=2 ** 14, help="largest N in the Fig. 4 sweep")
    p.add_argument("--no-timing", action="store_true", help="pass-count table only")
    args = p.parse_args(argv)
    from ...engine.device import Device

    dev = Device(backend=args.backend)
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
        figs = sweeps(dev, args.quick, not args.no_progress, args.mh_max, args.n_max)
        for fig, rows in figs.items():
            write_outputs(out, fig, rows, meta)
    summary = _paper_summary(figs)
    if summary:
        write_outputs(out, "paper_config", summary, meta)
    plots = [] if args.no_plots or not figs else _plots(out, figs)

    ok = all(r["match"] for r in passes)
    md = [f"# Backpropagation on render passes: pass counts and timing\n",
          f"Device: {meta['renderer']} ({meta['backend']}), GL {meta['gl_version']}, "
          f"{meta['date']}{' (--quick)' if args.quick else ''}.\n",
          "## Passes per learning step: plan vs measured\n",
          "Paper schedule: forward, backprop and update are what the paper counts "
          "(MI+MH+MO+2N+4 unpacked, MI+MH+MO+N/2+4 packed; with N not divisible by 4 the "
          "packed update takes ceil(N/4) passes per weight layer). output-error and apply are "
          "passes the paper does not count, reported apart. Fused: 4K-1 passes for K weight "
          "layers, independent of N and of the widths.\n",
          markdown_table(passes, ["net", "N", "variant", "formula", "paper formula",
                                  "measured (counted)", "extra (uncounted)", "forward measured",
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
                   [f"speed-up {i} vs numpy" for i in IMPLS[:3]] + \
                   [f"paper 7800GTX {n} s" for n in PAPER]
            md += [f"\n## {title}\n", markdown_table(figs[fig], cols, floatfmt=".3g")]
    if plots:
        md += ["\n## Plots\n"] + [f"![{p}]({p})\n" for p in plots]
    md.append(f"\n(report took {time.perf_counter() - t0:.1f} s)\n")
    (out / "backprop.md").write_text("\n".join(md))
    print("\n".join(md))
    print(f"written to {out}/")
    dev.release()
    return 0 if ok else 1


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(main())
