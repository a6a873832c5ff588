"""Pass-count report for the reductions and the SMO trainer: plan against measurement.

``shadergpgpu report svm [--quick] [--out DIR]`` (the reductions' report too).

1. Reductions (sum, arg-max): passes per call for vector lengths n and fan-ins F, the
   registered plan ``max(1, ceil(log_F(ceil(n / 4))))`` next to the pass counter, with the
   time per reduction.
2. SMO: one binary training run per working-set rule; passes per phase (init, select,
   update) from the plan ``svm/smo`` and from the counter, iterations and seconds, with
   the step on the device (``readback_every`` = the default) and on the host (1).

Every timed row (a reduction, an SMO training run) carries the cost model's prediction beside
the measured time (predicted ms, the term the model blames, measured / predicted, ok / MISSED);
the plot draws each prediction dashed.
"""
from __future__ import annotations

import time

import numpy as np

from .. import plans
from ...ops import reduce as R
from ...engine.device import Device
from ..work_recorder import recording
from .common import (Checks, Progress, Timer, device_meta, markdown_table, parser, passes_only,
                     plot_lines, write_outputs)
from .predicted import MODEL_SENTENCE, Predictor, model_summary


def _reduction_rows(dev, sizes, fanins, progress, model=None):
    rows = []
    timer = Timer(dev.finish, repeat=3, warmup=1, model=model)
    rng = np.random.default_rng(0)
    for n in sizes:
        x = dev.array(rng.standard_normal(n).astype(np.float32))
        for F in fanins:
            for kind, fn in (("sum", lambda: R.total_device(dev, x, F).release()),
                             ("argmax", lambda: R.argmax_device(dev, x, fanin=F).release())):
                dev.counter.reset()
                with dev.phase("reduce"):
                    fn()
                measured = dev.counter.snapshot()["reduce"]["passes"]
                plan = plans.get_plan("reduce/sum" if kind == "sum" else "reduce/argbest")
                expected = plan.total(n=n, fanin=F)
                t = timer(fn)
                rows.append({"kind": kind, "n": n, "fanin": F, "passes_plan": expected,
                             "passes_measured": measured, "match": expected == measured,
                             "ms": t.ms, **(t.model or {})})
            progress.step(f"n={n}")
        x.release()
    return rows


def _smo_rows(dev, n, progress, model=None):
    from ...algorithms.svm import SVC
    rng = np.random.default_rng(1)
    X = rng.standard_normal((n, 8))
    y = (X[:, 0] * X[:, 1] + 0.3 * rng.standard_normal(n) > 0).astype(int)
    rows = []
    from ...algorithms.svm import READBACK_EVERY
    for ws in ("second-order", "first-order"):
        for rb in (READBACK_EVERY, 1):   # step on the device / on the host
            with recording(dev) as rec:     # the fit's work, for the model's columns
                dev.counter.reset()
                t0 = time.perf_counter()
                m = SVC(device=dev, working_set=ws, readback_every=rb).fit(X, y)
                dev.finish()
                sec = time.perf_counter() - t0
                snap = rec.snapshot(host=True)
            # the model's columns of the whole run (the timed call), on each of its phase rows
            cols = model.columns(snap, sec) if model is not None else {}
            for r in plans.compare(plans.get_plan("svm/smo"), passes_only(snap), n=n,
                                   n_iter=int(m.n_iter_[0]), working_set=ws,
                                   fanin=R.fanin_for(dev), n_features=X.shape[1],
                                   loop_cap=dev.loop_cap, readback_every=rb,
                                   float_blend=dev.float_blending):
                rows.append({"working_set": ws, "readback_every": rb, "n": n,
                             "n_iter": int(m.n_iter_[0]), "n_sv": int(len(m.support_)),
                             "seconds": sec, **r, **cols})
        progress.step(ws)
    return rows


def main(argv=None) -> int:
    args = parser("svm", "pass counts of the reductions and the SMO trainer").parse_args(argv)
    dev = Device(backend=args.backend)
    sizes = [10, 1000, 100_000] if args.quick else [10, 1000, 10_000, 100_000, 1_000_000]
    fanins = [4, 16] if args.quick else [2, 4, 8, 16, 32, 64]
    n_smo = 400 if args.quick else 4000
    model = Predictor(dev)
    with Progress(len(sizes) + 2, "svm report", enabled=not args.no_progress) as prog:
        red = _reduction_rows(dev, sizes, fanins, prog, model)
        smo = _smo_rows(dev, n_smo, prog, model)
    meta = device_meta(dev)
    out = write_outputs(args.out, "svm", red + smo, meta)
    plotted = False
    if not args.no_plots:
        series, predicts = {}, {}
        for F in fanins:
            rr = [r for r in red if r["fanin"] == F and r["kind"] == "argmax"]
            series[f"argmax F={F}"] = ([r["n"] for r in rr], [r["ms"] for r in rr])
        for F in fanins:
            rr = [r for r in red if r["fanin"] == F and r["kind"] == "argmax"]
            series[f"argmax F={F} predicted"] = ([r["n"] for r in rr],
                                                 [r.get("predicted ms") for r in rr])
            predicts[f"argmax F={F} predicted"] = f"argmax F={F}"
        plotted = plot_lines(out / "reduce_time.png", series, "n (values reduced)",
                             "ms per reduction (median)", "arg-max reduction time by fan-in F",
                             predicts=predicts,
                             note="Dashed: the cost model's prediction of the curve in the "
                                  "same colour.")
    checks = Checks("svm report")
    for r in red:
        checks.plan(f"{r['kind']} n={r['n']} F={r['fanin']}", r["passes_plan"],
                    r["passes_measured"])
    for r in smo:
        if r.get("expected") is not None:
            checks.plan(f"smo {r['working_set']} readback_every={r['readback_every']} "
                        f"phase {r['phase']}", r["expected"], r["measured"])
    big = max(r["n"] for r in red)
    fast = min((r for r in red if r["n"] == big and r["kind"] == "argmax"),
               key=lambda r: r["ms"])
    smo_runs = {(r["working_set"], r["readback_every"]): r for r in smo}
    closing = [f"{checks.passed} of {checks.passed + len(checks.failures)} pass counts match "
               f"their plans. At n = {big:,} the fastest arg-max fan-in is F = {fast['fanin']} "
               f"({fast['passes_measured']} passes, {fast['ms']:.3g} ms)."]
    for (ws, rb), r in smo_runs.items():
        closing.append(f"SMO {ws} (readback_every = {rb}): {r['n_iter']} iterations, "
                       f"{r['n_sv']} support vectors, {r['seconds']:.3g} s.")
    closing.append(model_summary(
        [(f"{r['kind']} n={r['n']} F={r['fanin']}", r) for r in red]
        + [(f"SMO {ws} readback_every={rb}", r) for (ws, rb), r in smo_runs.items()]))
    text = ["# Reductions and SMO: pass plan against the pass counter", "",
            f"Device: {meta['renderer']} ({meta['backend']}), date {meta['date']}"
            f"{' (--quick)' if args.quick else ''}", "", "## Symbols", "",
            "- **n**: values reduced (reductions) or training points (SMO); **F**: fan-in, "
            "texels combined per fragment and pass; **passes_plan / passes_measured**: the "
            "registered plan / the pass counter; **ms**: median of 3 timed calls after a "
            "warm-up.",
            "- SMO: **working_set** = the rule picking the pair (first- or second-order); "
            "**readback_every** = iterations between host read-backs (1: the step on the "
            "host); **n_iter**, **n_sv**: iterations and support vectors; **phase**, "
            "**expected**, **measured**: passes per phase, plan vs counter; **seconds**: "
            "the whole training run, waiting for the device (its model columns are on each of "
            "its phase rows).",
            "- " + MODEL_SENTENCE, "",
            "## reduce (sum and arg-max over a packed vector of n values)", "",
            f"plan: {plans.get_plan('reduce/sum').formula}", "",
            markdown_table(red), "", "## svm/smo (binary, RBF)", "",
            f"plan: {plans.get_plan('svm/smo').formula}", "",
            markdown_table(smo)]
    if plotted:
        text += ["", "## Plot", "", "![arg-max time by fan-in](reduce_time.png)", "",
                 "Time of one arg-max reduction against n, one line per fan-in F, and dashed "
                 "in the same colour the cost model's prediction."]
    text += ["", "## What the numbers show", "", " ".join(closing), "", checks.markdown()]
    (out / "svm.md").write_text("\n".join(text))
    print("\n".join(text))
    dev.release()
    return checks.finish()
