"""Sammon mapping report: pass plan against the pass counter, stress history, per-iteration time.

    shadergpgpu report sammon [--quick] [--out DIR] [--no-plots]

For each configuration (source layout rows / columns, distances recomputed / cached, fixed
source step / adaptive step) it fits scikit-learn's digits (a subset with --quick), holds the
passes counted per phase against the registered plan ``sammon/fit``, and records the stress
before and after, the wall time per update pass, and the stress of a float64 numpy run of the
same rule (:func:`shadergpgpu.algorithms.sammon.reference_fit`). Each fit is the timed call:
its wall time stands beside the cost model's prediction for its counted passes (predicted ms,
the term the model blames, measured / predicted, ok / MISSED).
"""
from __future__ import annotations

import time

import numpy as np

from ..work_recorder import recording
from .common import (Checks, Progress, device_meta, markdown_table, parser, passes_only,
                     plot_lines, write_outputs)
from .predicted import MODEL_SENTENCE, Predictor, model_summary


def main(argv=None) -> int:
    p = parser("sammon", __doc__.split("\n\n")[0])
    a = p.parse_args(argv)
    import shadergpgpu as sg
    from shadergpgpu.analysis import plans
    from shadergpgpu.algorithms.sammon import Sammon, pca_init, reference_fit
    from shadergpgpu.analysis.plans.sammon import plan_params
    from sklearn.datasets import load_digits

    n = 200 if a.quick else 1000
    iters = 12 if a.quick else 60
    X = load_digits().data[:n].astype(np.float64)
    Y0 = pca_init(X, 2)
    dev = sg.Device(backend=a.backend)
    plan = plans.get_plan("sammon/fit")
    configs = [(layout, cache, step) for step in ("source", "adaptive")
               for layout, cache in (("rows", False), ("columns", False), ("rows", True))]
    rows, plan_rows, series = [], [], {}
    ref_cache = {}
    model = Predictor(dev)
    with Progress(len(configs), "sammon", enabled=not a.no_progress) as prog:
        for layout, cache, step in configs:
            with recording(dev) as rec:     # the fit's work, for the model's columns
                dev.counter.reset()
                t0 = time.perf_counter()
                s = Sammon(n_iter=iters, step=step, learning_rate=0.5 * n, init=Y0,
                           layout=layout, cache=cache, tol=None, device=dev).fit(X)
                dev.finish()
                fit_s = time.perf_counter() - t0
                snap = rec.snapshot(host=True)
            params = plan_params(s, dev)     # the fit's and the device's (profile's) limits
            cmp = plans.compare(plan, passes_only(snap), **params)
            for r in cmp:
                plan_rows.append({"config": f"{layout}/{'cached' if cache else 'recompute'}/"
                                            f"{step}", **r})
            if step not in ref_cache:
                ref_cache[step] = reference_fit(X, Y0, iters,
                                                learning_rate=0.5 * n, step=step)[1]
            ref_hist = ref_cache[step]
            ev = s.timings_["eval_s"]
            label = f"{layout}/{'cached' if cache else 'recompute'}/{step}"
            rows.append({"config": label, "N": n, "update passes": s.n_iter_,
                         "rejected": s.n_rejected_, "tiled": s.tiled_, "chunks": s.split_,
                         "s/update": float(np.median(ev[1:] if len(ev) > 2 else ev)),
                         "stress start": s.stress_history_[0], "stress end": s.stress_,
                         "numpy float64 end": ref_hist[-1],
                         "plan matches": all(r["match"] for r in cmp),
                         "fit ms": fit_s * 1e3, **model.columns(snap, fit_s)})
            series[label] = (list(range(len(s.stress_history_))), s.stress_history_)
            prog.step(label)
    meta = device_meta(dev)
    meta.update({"plan": plan.formula, "quick": a.quick})
    out = write_outputs(a.out, "sammon", rows, meta)
    write_outputs(out, "sammon_plan", plan_rows, meta)
    text = ["# Sammon mapping report", "",
            f"Device: {meta['renderer']} ({meta['backend']}), date {meta['date']}"
            f"{' (--quick)' if a.quick else ''}; digits N = {n}, {iters} update passes, "
            "lambda = 0.5 N", "", "## Symbols", "",
            "- **N**: points mapped (scikit-learn digits, 64 source dimensions) into m = 2; "
            "**lambda**: learning rate of the update y_i += mu sum_j (dn_ij - dm_ij) / "
            "(dn_ij dm_ij) (y_i - y_j), mu = 2 lambda / sum dn_ij; **dn, dm**: distances in the "
            "source / target space.",
            "- **stress** E = sum_{i<j} (dn_ij - dm_ij)^2 / dn_ij / sum_{i<j} dn_ij; **config** = "
            "layout of the source points (rows / columns) / source distances recomputed each "
            "pass or cached / step rule (source: the fixed step of the source; adaptive: "
            "step halved on a rejected update).",
            "- **s/update**: median wall time of one update pass; **numpy float64 end**: the "
            "stress of the same rule in float64 numpy; **phase / expected / measured**: passes "
            "per phase, plan `sammon/fit` vs the pass counter; **fit ms**: wall time of the "
            "whole fit (setup, every update and stress evaluation), waiting for the device.",
            "- " + MODEL_SENTENCE, "",
            markdown_table(rows), "", "## Pass plan against the counter", "",
            f"plan `sammon/fit`: {plan.formula}", "", markdown_table(plan_rows)]
    plotted = False
    if not a.no_plots:
        # layouts and caching compute the same float32 iterates, so their curves coincide:
        # distinct markers, sizes and dashes keep every curve visible on top of the others
        marks = ["o", "s", "^", "D", "v", "x"]
        dashes = ["-", "--", ":", "-.", (0, (5, 1)), (0, (1, 2))]
        styles = {k: {"marker": marks[i % 6], "ms": 9 - i, "ls": dashes[i % 6],
                      "mfc": "none", "lw": 1.0 + 0.4 * (i % 3)}
                  for i, k in enumerate(series)}
        plotted = plot_lines(out / "sammon_stress.png",
                   {k: ([x + 1 for x in xs], ys) for k, (xs, ys) in series.items()},
                   "accepted iterate + 1", "Sammon stress", "Stress history (digits)",
                   styles=styles,
                   note="Layouts (rows/columns) and cached distances give the same iterates, "
                        "so their curves lie on top of each other\n(markers and dashes "
                        "distinguish them); 'source' and 'adaptive' are the two step rules.")
    checks = Checks("sammon report")
    for r in plan_rows:
        checks.require(f"sammon plan {r['config']} phase {r['phase']}", r["match"] is True,
                       f"plan {r['expected']}, counter {r['measured']}")
    if plotted:
        text += ["", "## Plot", "", "![stress history](sammon_stress.png)", "",
                 "Stress after each accepted update, one curve per configuration."]
    fastest = min(rows, key=lambda r: r["s/update"])
    slowest = max(rows, key=lambda r: r["s/update"])
    gap = max(abs(r["stress end"] - r["numpy float64 end"]) for r in rows)
    text += ["", "## What the numbers show", "",
             f"Stress falls from {rows[0]['stress start']:.4g} to between "
             f"{min(r['stress end'] for r in rows):.4g} and "
             f"{max(r['stress end'] for r in rows):.4g} after {iters} update passes; the "
             f"largest gap to the float64 numpy run is {gap:.2g}. The fastest configuration, "
             f"{fastest['config']}, takes {fastest['s/update']:.3g} s per update, the slowest, "
             f"{slowest['config']}, {slowest['s/update']:.3g} s. "
             f"{sum(r['plan matches'] for r in rows)} of {len(rows)} configurations match "
             "the pass plan in every phase. "
             + model_summary([(r["config"], r) for r in rows]), "", checks.markdown()]
    (out / "sammon.md").write_text("\n".join(text))
    print("\n".join(text))
    dev.release()
    return checks.finish()
