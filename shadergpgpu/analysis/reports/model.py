"""``shadergpgpu report model``: the cost model against measured time; the paper's GPU in time.

1. For each algorithm's configurations: measured time of one call (the fastest of the
   repeats, waiting for the device) beside the time the cost model predicts from the call's
   passes and declared work (:mod:`shadergpgpu.analysis.cost_model`, speeds measured by
   ``shadergpgpu calibrate``), per phase and in total, the ratio, and MISSED where the
   prediction is off by more than 30 % (with the term that is wrong, from the per-phase GPU
   time of a ``timing=True`` run).
2. The paper's configuration (backprop 2-64-1, N = 1024, paper schedule, packed and unpacked)
   predicted on the GeForce 7800 GTX's published speeds (``profiles/geforce-7800gtx.json``),
   against the paper's 0.008 s and 0.026 s; Fig. 3 (MH sweep) and Fig. 4 (N sweep) redrawn with
   the predicted 7800 GTX curves, the curves measured on this machine and the paper's points.

``predict_main`` is ``shadergpgpu predict ALGORITHM ...``: predicted time on this device and on a
profile, numpy's measured time, and the N where the device overtakes numpy.

The cases and their measurement live in :mod:`.model_cases`, ``predict`` and ``calibrate`` in
:mod:`.predict`; this module re-exports them.
"""
from __future__ import annotations

import time
from pathlib import Path

from .. import cost_model as M
from .common import (Progress, device_meta, markdown_table, parser, plot_lines,
                     write_outputs)
from .model_cases import (GPU_PROFILE, MAKERS, PAPER, PAPER_N, PAPER_SIZES,  # noqa: F401
                          Case, backprop_case, blur_case, compare_case, count, default_cases,
                          measure_case, numpy_time, predict_on_profile, profile_speeds,
                          sammon_case, sgemm_case, svm_case)
from .predict import calibrate_main, predict_case, predict_main  # noqa: F401
from .predicted import predicted_columns  # noqa: F401


# ---- the paper's GPU in time --------------------------------------------------------------------
def paper_device():
    """A device counting passes as the paper ran them on the 7800 GTX: the profile's limits,
    except that an accumulating pass costs ONE pass (the paper's passes read the running sum
    and write the next one, ping-pong, one pass per term: its formula MI+MH+MO+N/2+4 counts
    them so). The engine's own emulation of accumulation without float32 blending (draw into
    a temporary, combine, copy back: 3 passes) is what ``Device(profile="geforce-7800gtx")``
    counts; :func:`paper_prediction` shows both."""
    import dataclasses

    from ...engine import profiles
    from ...engine.device import Device
    p = profiles.load(GPU_PROFILE)
    p = dataclasses.replace(p, name=f"{p.name}-paper-accumulation",
                            limits=dict(p.limits, float32_blend=True))
    return Device(profile=p)


def paper_prediction() -> list[dict]:
    """The paper's configuration predicted on the 7800 GTX's speeds, beside the paper's times:
    passes counted as the paper ran them (:func:`paper_device`) and as the engine emulates the
    7800 GTX (accumulation by 3 ping-pong passes)."""
    from ...engine.device import Device
    sp = profile_speeds(GPU_PROFILE)
    rows, paper_passes = [], {}
    for how, dev in (("paper's passes", paper_device()),
                     ("engine emulation", Device(profile=GPU_PROFILE))):
        try:
            for packed in (True, False):
                case = backprop_case(PAPER_SIZES, PAPER_N, "paper", packed)
                snap = count(case, dev)
                pred = M.predict(snap, sp)
                t = M.total(pred)
                paper = PAPER["packed" if packed else "unpacked"]
                over = sum(q["overhead_s"] for q in pred.values())
                passes = sum(s["passes"] for s in snap.values())
                if how == "paper's passes":
                    verdict = M.verdict(paper, t)
                    paper_passes[packed] = passes
                else:   # another pass structure than the paper's: no check of the model
                    verdict = f"{passes / paper_passes[packed]:.1f}x the paper's passes"
                rows.append({"counting": how, "variant": ("packed" if packed else "unpacked"),
                             "passes": passes,
                             "predicted s": t, "overhead s": over, "work s": t - over,
                             "alu s": sum(q["alu_s"] for q in pred.values()),
                             "fetch s": sum(q["fetch_s"] for q in pred.values()),
                             "write s": sum(q["write_s"] for q in pred.values()),
                             "paper s": paper, "predicted / paper": t / paper,
                             "verdict": verdict})
            if how == "engine emulation":
                case = backprop_case(PAPER_SIZES, PAPER_N, "fused", True)
                snap = count(case, dev)
                pred = M.predict(snap, sp)
                t = M.total(pred)
                over = sum(q["overhead_s"] for q in pred.values())
                rows.append({"counting": how, "variant": "fused (this library's schedule)",
                             "passes": sum(s["passes"] for s in snap.values()),
                             "predicted s": t, "overhead s": over, "work s": t - over,
                             "alu s": sum(q["alu_s"] for q in pred.values()),
                             "fetch s": sum(q["fetch_s"] for q in pred.values()),
                             "write s": sum(q["write_s"] for q in pred.values()),
                             "paper s": None, "predicted / paper": None, "verdict": ""})
        finally:
            dev.release()
    return rows


def paper_sweeps(quick: bool, dev=None, measure_here: bool = True, progress=True) -> dict:
    """Fig. 3 (MH sweep, N = 1024) and Fig. 4 (N sweep, MH = 64) rows: predicted 7800 GTX
    (paper schedule, packed / unpacked), measured here (same) and numpy."""
    if quick:
        mh_list, n_list = [4, 64, 256], [16, 256, 1024]
    else:
        mh_list, n_list = [2 ** k for k in range(2, 11)], [2 ** k for k in range(2, 15, 2)]
    from ...engine.device import Device
    jobs = [("fig3", mh, PAPER_N) for mh in mh_list] + [("fig4", 64, n) for n in n_list]
    gdev = paper_device()
    edev = Device(profile=GPU_PROFILE)       # the fused schedule as this library runs it there
    sp = profile_speeds(GPU_PROFILE)
    out = {"fig3": [], "fig4": []}
    try:
        with Progress(len(jobs), "paper sweeps", progress) as prog:
            for fig, mh, n in jobs:
                row = {"MH": mh, "N": n}
                for packed in (True, False):
                    tag = "packed" if packed else "unpacked"
                    case = backprop_case((2, mh, 1), n, "paper", packed)
                    row[f"7800GTX predicted {tag} s"] = M.total(M.predict(count(case, gdev),
                                                                          sp))
                    if measure_here and dev is not None:
                        row[f"here measured {tag} s"] = measure_case(case, dev, repeat=3,
                                                                     min_time=0.0)[0]
                try:
                    fused = backprop_case((2, mh, 1), n, "fused", True)
                    row["7800GTX predicted fused s"] = M.total(M.predict(count(fused, edev),
                                                                         sp))
                except Exception:  # noqa: BLE001 - a configuration the profile refuses
                    row["7800GTX predicted fused s"] = None
                row["numpy s"] = numpy_time(backprop_case((2, mh, 1), n))
                if (2, mh, 1) == PAPER_SIZES and n == PAPER_N:
                    row["paper packed s"], row["paper unpacked s"] = PAPER["packed"], \
                        PAPER["unpacked"]
                out[fig].append(row)
                prog.step(f"{fig} MH={mh} N={n}")
    finally:
        gdev.release()
        edev.release()
    return out


def paper_plots(out: Path, figs: dict) -> list[str]:
    made = []
    for fig, key, title, xlabel in (("fig3", "MH", "Fig. 3: MI=2, MO=1, N=1024", "hidden units MH"),
                                    ("fig4", "N", "Fig. 4: MI=2, MH=64, MO=1",
                                     "training vectors N")):
        rows = figs.get(fig) or []
        if not rows:
            continue
        xs = [r[key] for r in rows]
        series = {}
        for col in ("7800GTX predicted packed s", "7800GTX predicted unpacked s",
                    "7800GTX predicted fused s", "here measured packed s",
                    "here measured unpacked s", "numpy s"):
            if any(r.get(col) for r in rows):
                series[col[:-2]] = (xs, [r.get(col) for r in rows])
        at = PAPER_N if fig == "fig4" else PAPER_SIZES[1]
        series["paper 7800GTX packed"] = ([at], [PAPER["packed"]])
        series["paper 7800GTX unpacked"] = ([at], [PAPER["unpacked"]])
        name = f"{fig}_predicted_7800gtx.png"
        if plot_lines(out / name, series, xlabel, "seconds per learning step", title):
            made.append(name)
    return made


def coverage_rows() -> list[dict]:
    from ...engine import kernels
    from .. import plans, kernel_work as work
    plans.load_all()
    cov = work.coverage(kernels.REGISTRY.kernels.values())
    return [{"kind": k, "kernels": len(v), "names": ", ".join(v) if k in ("declared", "estimated")
             else ""} for k, v in cov.items()]


def main(argv=None) -> int:
    p = parser("model", __doc__.split("\n")[0])
    p.add_argument("--recalibrate", action="store_true", help="measure the speeds again")
    p.add_argument("--no-paper", action="store_true", help="skip the 7800 GTX sweeps")
    p.add_argument("--algorithms", default="", help="comma list (default: all)")
    args = p.parse_args(argv)
    from ...engine.device import Device

    dev = Device(backend=args.backend)
    meta = device_meta(dev)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    prof = M.calibrate(dev) if args.recalibrate else None
    speeds = M.Speeds.from_dict(prof["speeds"]) if prof else M.measured_speeds(dev)
    try:
        tdev = Device(backend=args.backend, timing=True)
    except Exception:  # noqa: BLE001
        tdev = None
    cases = default_cases(dev.is_software)
    if args.quick:
        cases = [c for c in cases if c.algo in ("backprop", "sgemm")][:4]
    if args.algorithms:
        keep = set(args.algorithms.split(","))
        cases = [c for c in cases if c.algo in keep]
    rows, phases = [], []
    with Progress(len(cases), "model", not args.no_progress) as prog:
        for case in cases:
            try:
                r = compare_case(case, dev, speeds, tdev)
                rows.append(r["row"])
                phases += r["phases"]
            except Exception as e:  # noqa: BLE001 - report the failure, go on
                rows.append({"algorithm": case.algo, "case": case.label,
                             "verdict": "ERROR", "diagnosis": f"{type(e).__name__}: {e}"})
            prog.step(case.label)
    write_outputs(out, "model", rows, meta)
    write_outputs(out, "model_phases", phases, meta)
    paper = [] if args.no_paper else paper_prediction()
    figs = {} if args.no_paper else paper_sweeps(args.quick, dev, True, not args.no_progress)
    if paper:
        write_outputs(out, "paper_7800gtx", paper, meta)
    for fig, rs in figs.items():
        write_outputs(out, f"{fig}_7800gtx", rs, meta)
    plots = [] if args.no_plots or not figs else paper_plots(out, figs)
    cov = coverage_rows()
    missed = [r for r in rows if r.get("verdict") != "ok"]
    md = ["# The cost model: predicted vs measured time\n",
          f"Device: {meta['renderer']} ({meta['backend']}), GL {meta['gl_version']}, "
          f"{meta['date']}{' (--quick)' if args.quick else ''}.\n",
          "Speeds (measured by `shadergpgpu calibrate`): " + ", ".join(
              f"{k} = {getattr(speeds, k):.4g}" for k in M.SPEED_KEYS) +
          f", overlap = {speeds.overlap}.\n",
          "Predicted time of a pass = overhead + the largest (GPU) or the sum (software "
          "renderer) of its ALU, fetch and write times; summed per phase. MISSED: more than "
          "30 % off the measured time (the diagnosis names the term).\n",
          "## Per configuration\n",
          markdown_table(rows, ["algorithm", "case", "passes", "measured ms", "predicted ms",
                                "measured / predicted", "verdict", "dominant", "diagnosis"],
                         floatfmt=".3g"),
          f"\n{len(rows) - len(missed)} of {len(rows)} within +-30 %.\n",
          "## Per phase\n", markdown_table(phases, floatfmt=".3g")]
    if paper:
        md += ["\n## The paper's GPU: 2-64-1, N = 1024 on the GeForce 7800 GTX\n",
               "Passes and work counted by running the paper schedule here under the 7800 GTX "
               "profile's limits (loop cap 255, 4 draw buffers); time from its published speeds "
               "(`profiles/geforce-7800gtx.json`). \"paper's passes\": one pass per "
               "accumulated term, as the paper counts them (its passes read the running sum); "
               "\"engine emulation\": the engine's accumulation without float32 blending "
               "(temporary + combine + copy: 3 passes per term). The pass overhead (12 us) was "
               "itself estimated from the paper's two times, so the agreement checks consistency; "
               "the independent part is the work: at the 7800 GTX's peak rates the arithmetic, "
               "fetches and writes of this configuration take under 0.3 ms, so the paper's "
               "times are almost entirely per-pass overhead.\n",
               markdown_table(paper, floatfmt=".3g")]
    for fig, title in (("fig3", "Fig. 3 (MH sweep, N = 1024)"),
                       ("fig4", "Fig. 4 (N sweep, MH = 64)")):
        if figs.get(fig):
            md += [f"\n## {title}: predicted 7800 GTX, measured here, numpy\n",
                   markdown_table(figs[fig], floatfmt=".3g")]
    if plots:
        md += ["\n## Plots\n"] + [f"![{x}]({x})\n" for x in plots]
    md += ["\n## Work declarations\n", markdown_table(cov)]
    md.append(f"\n(report took {time.perf_counter() - t0:.1f} s)\n")
    (out / "model.md").write_text("\n".join(md))
    print("\n".join(md))
    print(f"written to {out}/")
    if tdev is not None:
        tdev.release()
    dev.release()
    return 0 if not missed else 1


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.exit(main())
