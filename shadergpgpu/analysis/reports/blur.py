"""``shadergpgpu report blur``: passes per schedule (plan vs counter), passes under each device
profile, and time vs sigma.

Every timed row carries the cost model's prediction beside the measured time (predicted ms, the
term the model blames, measured / predicted, ok / MISSED); the plot draws each prediction dashed.
Writes blur.md, blur.csv / blur.json (timings), blur_passes.csv, blur_profiles.csv and
blur_time_vs_sigma.png.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .common import (Checks, Progress, Timer, device_meta, markdown_table, parser, passes_only,
                     plot_lines, write_outputs)
from .predicted import MODEL_COLUMNS, MODEL_SENTENCE, Predictor, model_summary

SPREAD_TARGET = 1.2      # recursive: slowest / fastest median time across sigma
PAPER_MPS = 2030         # source 002: its estimate for V+T+V+T on its GPU, MP/s

SYMBOLS = [
    "- **sigma**: standard deviation of the Gaussian, in pixels (the same on both axes).",
    "- **h x w x c**: image height, width and channels (c = 1: grayscale, packed 4 pixels per "
    "texel; c = 4: RGBA, one pixel per texel).",
    "- **recursive**: the 4th-order recursive (IIR, Deriche-form) filter: a fixed number of "
    "passes whatever sigma. **hv**: filter the rows, then the columns (+1 interleave pass); "
    "**vtvt**: filter the columns, transpose, filter the columns, transpose back (the "
    "source's V+T+V+T schedule).",
    "- **exact**: the separable FIR filter truncated at 4 sigma (2 int(4 sigma + 0.5) + 1 taps "
    "per axis): its cost grows with sigma; measured up to the largest sigma in the table.",
    "- **passes / planned**: passes the pass counter counted / the registered plan predicts; "
    "**fragments**: fragments shaded in all passes; **phases**: passes per phase.",
    "- **ms** (median of repeats), **ms_min..ms_max** (fastest..slowest repeat), **spread** = "
    "slowest / fastest; **MP/s** = h w / median time / 1e6.",
    "- Plot labels: `<method> <schedule> c=<channels>`, e.g. `recursive hv c=1` = recursive "
    "filter, rows then columns, grayscale; `... predicted` (dashed): the cost model's time.",
    "- " + MODEL_SENTENCE,
]


def _passes(dev, blur, plans, sizes):
    rows = []
    for (h, w, c) in sizes:
        gray = c == 1
        shape = (h, w) if gray else (h, w, c)
        img = np.random.default_rng(0).random(shape).astype(np.float32)
        x = dev.array(img) if gray else dev.image(img)
        for schedule in blur.SCHEDULES:
            plan = plans.get_plan(f"blur/recursive-{schedule}")
            for sigma in (1.0, 64.0):
                dev.counter.reset()
                blur.gaussian_blur(x, sigma, schedule=schedule).release()
                snap = passes_only(dev.counter.snapshot())
                cmp = plans.compare(plan, snap, h=h, w=w, gray=gray, device=dev)
                rows.append({"image": f"{h}x{w}x{c}", "schedule": schedule, "sigma": sigma,
                             "passes": sum(v["passes"] for v in snap.values()),
                             "planned": plan.total(h=h, w=w, gray=gray, device=dev),
                             "match": all(r["match"] for r in cmp),
                             "fragments": sum(v["fragments"] for v in snap.values()),
                             "phases": " ".join(f"{k}:{v['passes']}" for k, v in snap.items())})
        dev.counter.reset()
        blur.gaussian_blur(x, 4.0, method="exact").release()
        snap = passes_only(dev.counter.snapshot())
        exact = plans.get_plan("blur/exact")
        params = dict(h=h, w=w, gray=gray, sigma=4.0, device=dev)
        rows.append({"image": f"{h}x{w}x{c}", "schedule": "exact", "sigma": 4.0,
                     "passes": sum(v["passes"] for v in snap.values()),
                     "planned": exact.total(**params),
                     "match": all(r["match"] for r in plans.compare(exact, snap, **params)),
                     "fragments": sum(v["fragments"] for v in snap.values()),
                     "phases": " ".join(f"{k}:{v['passes']}" for k, v in snap.items())})
        x.release()
    return rows


PROFILE_SIZE = 1024


def _label(r) -> str:
    """A timed row in a few words, for the model's sentence."""
    how = r["method"] if r["schedule"] == "-" else f"{r['method']} {r['schedule']}"
    return f"{how} c={r['channels']} sigma {r['sigma']:g}"


def _profile_passes(sg, blur, plans, backend, profiles):
    """Passes per blur call under each device profile: plan vs counter on small images (the
    blur adapts to 4 render targets, a loop cap and no float blending), and the plan at
    PROFILE_SIZE^2."""
    rows = []
    cases = [("recursive", "hv", 1, 3.0), ("recursive", "hv", 4, 3.0),
             ("recursive", "vtvt", 4, 3.0), ("exact", "hv", 1, 4.0), ("exact", "hv", 4, 40.0)]
    for name in profiles:
        d = sg.Device(backend=backend, profile=name)
        try:
            for method, schedule, c, sigma in cases:
                h, w = 37, 53
                img = np.random.default_rng(2).random((h, w) if c == 1 else (h, w, c))
                x = d.array(img) if c == 1 else d.image(img)
                d.counter.reset()
                blur.gaussian_blur(x, sigma, method=method, schedule=schedule).release()
                x.release()
                snap = passes_only(d.counter.snapshot())
                plan = plans.get_plan("blur/exact" if method == "exact"
                                      else f"blur/recursive-{schedule}")
                extra = {"sigma": sigma} if method == "exact" else {}
                gray = c == 1
                cmp = plans.compare(plan, snap, h=h, w=w, gray=gray, device=d, **extra)
                rows.append({
                    "profile": name, "method": method,
                    "schedule": schedule if method == "recursive" else "-", "channels": c,
                    "sigma": sigma, "passes": sum(v["passes"] for v in snap.values()),
                    "planned": plan.total(h=h, w=w, gray=gray, device=d, **extra),
                    "match": all(r["match"] for r in cmp),
                    f"planned {PROFILE_SIZE}^2": plan.total(h=PROFILE_SIZE, w=PROFILE_SIZE,
                                                            gray=gray, device=d, **extra)})
        finally:
            d.release()
    return rows


def _summary(rows, pass_rows, spread, size, quick) -> str:
    s = []
    rec = [r for r in pass_rows if r["schedule"] in ("hv", "vtvt")]
    by = {}
    for r in rec:
        by.setdefault((r["image"], r["schedule"]), set()).add(r["passes"])
    same = all(len(v) == 1 for v in by.values())
    if rec:
        s.append("The recursive schedules draw the same number of passes at sigma 1 and 64 "
                 f"on every image measured ({'yes' if same else 'NO'}: "
                 + ", ".join(f"{sch} {img}: {'/'.join(map(str, sorted(v)))}"
                             for (img, sch), v in by.items()) + ").")
    for r in spread:
        s.append(f"Measured time of recursive {r['schedule']} (c = {r['channels']}) varies "
                 f"from {r['min_ms']:.3g} to {r['max_ms']:.3g} ms across sigma (max/min "
                 f"{r['max/min']:.2f}, target <= {SPREAD_TARGET}"
                 f"{', not checked with --quick' if quick else ''}).")
    for c in sorted({r["channels"] for r in rows}):
        ex = sorted((r for r in rows if r["method"] == "exact" and r["channels"] == c),
                    key=lambda r: r["sigma"])
        if len(ex) >= 2:
            lo, hi = ex[0], ex[-1]
            s.append(f"The exact filter (c = {c}) grows from {lo['ms']:.3g} ms at sigma "
                     f"{lo['sigma']:g} to {hi['ms']:.3g} ms at sigma {hi['sigma']:g} "
                     f"({hi['ms'] / lo['ms']:.2g}x for {hi['sigma'] / lo['sigma']:g}x sigma).")
        rc = {}
        for r in rows:                       # the faster recursive schedule at each sigma
            if r["method"] == "recursive" and r["channels"] == c:
                rc[r["sigma"]] = min(rc.get(r["sigma"], float("inf")), r["ms"])
        fast = [r["sigma"] for r in ex if rc.get(r["sigma"], float("inf")) < r["ms"]]
        if ex:
            s.append(f"With c = {c} a recursive schedule is faster than the exact filter from "
                     f"sigma {min(fast):g} on." if fast else
                     f"With c = {c} the exact filter is faster at every sigma measured.")
    best = max(rows, key=lambda r: r["mp_per_s"]) if rows else None
    if best:
        s.append(f"The best rate at {size}x{size} is {best['mp_per_s']:.3g} MP/s "
                 f"({best['method']}{'' if best['schedule'] == '-' else ' ' + best['schedule']} "
                 f"c={best['channels']}, sigma "
                 f"{best['sigma']:g}); the source (002) estimates ~{PAPER_MPS:,} MP/s for its "
                 "V+T+V+T schedule on its GPU.")
    return " ".join(s)


def main(argv=None) -> int:
    p = parser("blur", "Gaussian blur: passes per schedule and time vs sigma")
    args = p.parse_args(argv)
    import shadergpgpu as sg
    from shadergpgpu.algorithms import blur
    from shadergpgpu.analysis import plans

    dev = sg.Device(backend=args.backend)
    meta = device_meta(dev)
    timer = Timer(dev.finish, repeat=5, warmup=2, min_time=0.05 if args.quick else 0.3,
                  model=Predictor(dev))
    size = 128 if args.quick else 1024
    sigmas = [1.0, 4.0, 16.0] if args.quick else [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]
    exact_max = 4.0 if args.quick else 16.0
    sizes = [(37, 53, 1), (size, size, 1)] if args.quick else \
        [(37, 53, 1), (size, size, 1), (size, size, 4), (4096, 4096, 1)]
    variants = [("recursive", s) for s in blur.SCHEDULES] + [("exact", "hv")]
    channels = (1,) if args.quick else (1, 4)
    total = len(variants) * len(sigmas) * len(channels)
    rows = []
    with Progress(total, "blur", enabled=not args.no_progress) as prog:
        for c in channels:
            shape = (size, size) if c == 1 else (size, size, c)
            img = np.random.default_rng(1).random(shape).astype(np.float32)
            x = dev.array(img) if c == 1 else dev.image(img)
            for method, schedule in variants:
                for sigma in sigmas:
                    prog.step(f"{method} {schedule} c={c} s={sigma}")
                    if method == "exact" and sigma > exact_max:
                        continue

                    def run():
                        blur.gaussian_blur(x, sigma, method=method, schedule=schedule).release()
                    t = timer(run)
                    rows.append({"method": method, "schedule": schedule if method ==
                                 "recursive" else "-", "channels": c, "size": size,
                                 "sigma": sigma, **t.row("ms"),
                                 "mp_per_s": size * size / t.median / 1e6})
            x.release()
    pass_rows = _passes(dev, blur, plans, sizes)
    from shadergpgpu.engine import profiles
    profile_rows = _profile_passes(sg, blur, plans, args.backend, profiles.names())
    out = Path(args.out)
    meta["timing"] = timer.describe()
    write_outputs(out, "blur", rows, meta)
    write_outputs(out, "blur_passes", pass_rows, meta)
    write_outputs(out, "blur_profiles", profile_rows, meta)
    plotted = False
    if not args.no_plots:
        series, bands, predicts, preds = {}, {}, {}, {}
        for r in rows:
            key = (f"{r['method']} {r['schedule']} c={r['channels']}" if r["schedule"] != "-"
                   else f"{r['method']} c={r['channels']}")
            xs, ys = series.setdefault(key, ([], []))
            lo, hi = bands.setdefault(key, ([], []))
            xs.append(r["sigma"])
            ys.append(r["ms"])
            lo.append(r["ms_min"])
            hi.append(r["ms_max"])
            predicts[f"{key} predicted"] = key
            pxs, pys = preds.setdefault(f"{key} predicted", ([], []))
            pxs.append(r["sigma"])
            pys.append(r.get("predicted ms"))
        series.update(preds)
        plotted = plot_lines(
            out / "blur_time_vs_sigma.png", series, "sigma (pixels)",
            "ms per blur (median of repeats)",
            f"Gaussian blur of a {size}x{size} image: time vs sigma", bands=bands,
            predicts=predicts,
            note="recursive = 4th-order IIR filter (fixed passes); exact = FIR filter truncated "
                 "at 4 sigma (taps grow with sigma).\nhv = rows then columns; vtvt = columns, "
                 "transpose, columns, transpose; c = channels (1 gray, 4 RGBA). "
                 "Error bars: fastest..slowest repeat. Dashed: the cost model's prediction.")
    spread = []
    for method, schedule in variants[:2]:
        for c in channels:
            ts = [r["ms"] for r in rows if r["method"] == method and r["schedule"] == schedule
                  and r["channels"] == c]
            if ts:
                spread.append({"method": method, "schedule": schedule, "channels": c,
                               "min_ms": min(ts), "max_ms": max(ts),
                               "max/min": max(ts) / min(ts)})
    md = [f"# Gaussian blur report\n\nDevice: {meta['device']}, GL {meta['gl_version']}; "
          f"date {meta['date']}{' (--quick)' if args.quick else ''}.\n",
          "## Symbols\n", "\n".join(SYMBOLS) + "\n",
          f"Timing: {timer.describe()}.\n",
          "## Passes per schedule (plan vs pass counter; independent of sigma)\n",
          markdown_table(pass_rows, ["image", "schedule", "sigma", "passes", "planned", "match",
                                     "fragments", "phases"]),
          f"\nPlans: `blur/recursive-hv`: {plans.get_plan('blur/recursive-hv').formula}; "
          f"`blur/recursive-vtvt`: {plans.get_plan('blur/recursive-vtvt').formula}.\n",
          "\n## Passes per blur call under each device profile (37x53 images; plan vs "
          f"counter, and the plan at {PROFILE_SIZE}x{PROFILE_SIZE})\n",
          markdown_table(profile_rows),
          f"\n## Time vs sigma ({size}x{size})\n",
          markdown_table(rows, ["method", "schedule", "channels", "sigma", "ms", "ms_min",
                                "ms_max", "spread", "mp_per_s", *MODEL_COLUMNS]
                         + (["model error"] if any("model error" in r for r in rows) else [])),
          f"\n## Recursive time spread across sigma (target: max/min <= {SPREAD_TARGET})\n",
          markdown_table(spread),
          ("" if not args.quick else
           f"\nWith --quick the target is reported, not checked: a {size}x{size} blur takes "
           "about a millisecond, within the timing noise of a shared host.\n"),
          ("\n## Plot\n\n![time vs sigma](blur_time_vs_sigma.png)\n\nTime per blur against "
           "sigma for each method, schedule and channel count (labels: see Symbols), and "
           "dashed in the same colour the cost model's prediction of each.\n"
           if plotted else "")]
    checks = Checks("blur report")
    for r in pass_rows:
        what = f"passes of {r['schedule']} on {r['image']}, sigma {r['sigma']:g}"
        if checks.plan(what, r["planned"], r["passes"]) and not r["match"]:
            checks.require(what, False, "the per-phase counts differ from the plan")
    for r in profile_rows:
        what = (f"passes of {r['method']} {r['schedule']} c={r['channels']} under profile "
                f"{r['profile']}")
        if checks.plan(what, r["planned"], r["passes"]) and not r["match"]:
            checks.require(what, False, "the per-phase counts differ from the plan")
    if not args.quick:
        for r in spread:
            checks.target(f"recursive {r['schedule']} c={r['channels']}: time max/min across "
                          "sigma", r["max/min"], "<=", SPREAD_TARGET)
    md += ["\n## What the numbers show\n", _summary(rows, pass_rows, spread, size, args.quick)
           + " " + model_summary([(_label(r), r) for r in rows]) + "\n"]
    md.append("\n" + checks.markdown())
    (out / "blur.md").write_text("\n".join(md))
    print("\n".join(md))
    dev.release()
    return checks.finish()


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
