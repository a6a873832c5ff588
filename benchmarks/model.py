"""The cost model against measured times: every algorithm's benchmark configurations.

    python benchmarks/model.py [--gpu-sizes] [--algorithms backprop,sgemm] [--no-calibrate]
                               [--repeat 5] [--out DIR]
    python benchmarks/model.py --random K [--seed S] [--quick] [--no-calibrate] [--out DIR]

``--random K`` judges the model on configurations drawn at random in this run
(:mod:`shadergpgpu.analysis.reports.model_random`): K per algorithm (backprop nets and N,
SGEMM m/n/k, variants and transposes, blur sizes, sigmas and methods, SVM, RBF rows, Sammon,
k-means n/k, one-liners and reductions), from a seed printed at the start (drawn from the
clock unless ``--seed`` is given: ``--seed S`` draws the same configurations again). The
device is calibrated in the same run, its rounds interleaved with the configurations' timings
(``--rounds``; 2 with ``--quick``), or with ``--no-calibrate`` the device's saved calibration
is loaded (as ``shadergpgpu predict`` does). Each configuration is measured (the fastest of its
timed calls after a warm-up, at the calibration's rank of the rounds) and predicted; the run
prints the distribution of measured / predicted per algorithm and overall (10th, 25th, 50th,
75th, 90th percentiles, the worst, the median |log| as a factor, the share within 2x), and
``MISSED`` with exit status 1 when the overall distribution misses the stated bound
(``model_random.BOUND``): 80 % of the configurations within 2x and half within 1.5x.

Calibrates this device (``shadergpgpu calibrate``: pass overhead, ALU, fetch and write
rates, kernels' efficiencies, calls' costs, measured in the same run so that a loaded machine
slows both sides alike) and measures for each configuration the fastest of its timed calls
(waiting for the device; on a GPU per call of a run of calls issued back to back, at least
20 ms long or 32 calls: a call alone after a wait also pays the driver's wake-up, which moves
from host to host; in the calibration's rounds, interleaved with them, ``--rounds``, so that
a burst of other work on the machine or a GPU's slower state slows one round of a case, not
all of it, and calibration and checks keep their fastest of the same spells) and predicts it
from the call's passes and declared work (:mod:`shadergpgpu.analysis.cost_model`): measured /
predicted, and MISSED where the prediction is more than 30 % off, with the term the per-phase
GPU time (a ``timing=True`` run) blames. Small configurations by default (llvmpipe); the real
ones with ``--gpu-sizes`` (the default on a hardware device).

Also prints the paper's configuration (backprop 2-64-1, N = 1024, paper schedule) predicted on
the GeForce 7800 GTX's published speeds beside the paper's 0.008 s / 0.026 s.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.analysis import cost_model as M  # noqa: E402
from shadergpgpu.analysis.reports import model as R  # noqa: E402
from shadergpgpu.analysis.reports import model_cases as MC  # noqa: E402
from shadergpgpu.analysis.reports.common import device_meta, markdown_table, write_outputs  # noqa: E402
from shadergpgpu.analysis.reports.hostload import cpu_times, steal_share  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--gpu-sizes", action="store_true", help="the real configurations")
    p.add_argument("--small", action="store_true", help="the small configurations (llvmpipe)")
    p.add_argument("--algorithms", default="", help="comma list (default: all)")
    p.add_argument("--no-calibrate", action="store_true", help="use the cached speeds")
    p.add_argument("--no-timing-run", action="store_true",
                   help="skip the timing=True run (no per-phase GPU time for the diagnosis)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--rounds", type=int, default=None,
                   help="rounds of the calibration, each timing every case once, each case "
                        "keeping its reading at 30 %% of them from the fastest (default: 8 on "
                        "a software renderer; 5 on a GPU, keeping the fastest; with "
                        "--no-calibrate 3 and 1)")
    p.add_argument("--out", default="", help="also write CSV / JSON here")
    p.add_argument("--random", type=int, default=0, metavar="K",
                   help="K configurations per algorithm drawn at random (see the docstring)")
    p.add_argument("--seed", type=int, default=None,
                   help="with --random: the seed (default: drawn from the clock, printed)")
    p.add_argument("--quick", action="store_true",
                   help="with --random: smaller spaces and 2 calibration rounds (minutes on "
                        "llvmpipe)")
    a = p.parse_args(argv)
    dev = sg.Device()
    if a.random:
        try:
            return random_main(a, dev)
        finally:
            dev.release()
    meta = device_meta(dev)
    small = a.small or (dev.is_software and not a.gpu_sizes)
    cases = R.default_cases(small)
    if a.algorithms:
        keep = set(a.algorithms.split(","))
        cases = [c for c in cases if c.algo in keep]
    rounds = a.rounds or MC.default_rounds(dev)
    t0 = cpu_times()
    if a.no_calibrate:
        speeds = M.measured_speeds(dev)
        timed = MC.timed_rounds(cases, dev, rounds, repeat=a.repeat)
    else:
        # the calibration and the checks' timing interleaved: each round times both, each
        # keeps its fastest (calibrate_and_time)
        from shadergpgpu.analysis.reports.calibrate import calibrate_and_time, calibration_rounds
        rounds = a.rounds or calibration_rounds(dev)
        prof, timed = calibrate_and_time(dev, cases, rounds=rounds)
        speeds = M.Speeds.from_dict(prof["speeds"], prof["description"])
    from shadergpgpu.analysis.reports.calibrate_cases import calibration_cases
    print("calibrated on (held out from the checks below): "
          + "; ".join(f"{c.algo} {c.label}" for c in calibration_cases(dev.is_software)))
    print(f"# cost model on {meta['renderer']} ({meta['date']})\n")
    print("speeds: " + ", ".join(f"{k} {getattr(speeds, k):.4g}" for k in M.SPEED_KEYS)
          + f", overlap {speeds.overlap}")
    print("host us: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(speeds.host_us.items()))
          + "\n")
    tdev = None if a.no_timing_run else sg.Device(timing=True)
    rows, phases, records = [], [], []
    print(f"measured: the fastest of {a.repeat} calls, in {rounds} round(s) over all cases"
          + ("" if a.no_calibrate else ", interleaved with the calibration's rounds") + "\n")
    stolen = steal_share(t0, cpu_times())
    for case, t in zip(cases, timed):
        try:
            if isinstance(t, Exception):
                raise t
            r = R.compare_case(case, dev, speeds, tdev, repeat=a.repeat, timed=t)
        except Exception as e:  # noqa: BLE001 - report the failure, go on
            rows.append({"algorithm": case.algo, "case": case.label, "verdict": "ERROR",
                         "diagnosis": f"{type(e).__name__}: {e}"})
            continue
        rows.append(r["row"])
        phases += r["phases"]
        records.append({"case": f"{case.algo} {case.label}", "wall_s": r["wall_s"],
                        "issue_s": r["issue_s"], "device_s": r["device_s"],
                        "snapshot": r["snapshot"],
                        "gpu_snapshot": r["gpu_snapshot"]})
        x = r["row"]
        print(f"{x['algorithm']:9} {x['case']:40} {x['measured ms']:9.3f} ms measured "
              f"{x['predicted ms']:9.3f} ms predicted  x{x['measured / predicted']:.2f} "
              f"{x['verdict']}  {x['diagnosis']}", flush=True)
    print()
    print(markdown_table(rows, ["algorithm", "case", "passes", "measured ms", "predicted ms",
                                "measured / predicted", "verdict", "dominant", "diagnosis"],
                         floatfmt=".3g"))
    ok = sum(r.get("verdict") == "ok" for r in rows)
    logs = [abs(math.log(r["measured / predicted"])) for r in rows
            if r.get("measured / predicted")]
    med = statistics.median(logs) if logs else float("nan")
    print(f"\n{ok} of {len(rows)} configurations within +-30 %; median |log(measured / "
          f"predicted)| = {med:.3f} (x{math.exp(med):.2f}).")
    if stolen is not None:
        print(f"CPU time stolen by the host's other guests while the calibration and the "
              f"cases were timed: "
              f"{100 * stolen:.0f} %" + (" (a software renderer's times move with it: "
                                         "benchmarks/diag/model_noise.py)"
                                         if dev.is_software and stolen > 0.05 else ""))
    for r in rows:
        if r.get("verdict") != "ok":
            print(f"MISSED: {r['algorithm']} {r['case']}: {r.get('diagnosis', '')}")
    print()
    paper = R.paper_prediction()
    print("## The paper's configuration on the GeForce 7800 GTX (published speeds)\n")
    print(markdown_table(paper, floatfmt=".3g"))
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        write_outputs(out, "model", rows, meta | {"cpu_steal": stolen})
        write_outputs(out, "model_phases", phases, meta)
        write_outputs(out, "paper_7800gtx", paper, meta)
        # the raw record (counter snapshots, wall and issue times) with the speeds used
        import json
        (out / "model_record.json").write_text(json.dumps(
            {"meta": meta, "speeds": M.asdict_speeds(speeds), "cases": records}, default=str))
    if tdev is not None:
        tdev.release()
    dev.release()
    return 0 if ok == len(rows) else 1


def random_main(a, dev) -> int:
    """``--random K``: the model's error on configurations drawn at random in this run."""
    import os
    import time

    from shadergpgpu.analysis.reports import model_random as MR
    from shadergpgpu.analysis.reports.calibrate import calibrate_and_time
    seed = a.seed if a.seed is not None else time.time_ns() % 2**31
    algos = set(a.algorithms.split(",")) if a.algorithms else None
    cases = MR.draw(a.random, seed, quick=a.quick,
                    algorithms=algos)
    meta = device_meta(dev)
    load0 = os.getloadavg()
    t0, w0 = cpu_times(), time.perf_counter()
    print(f"# cost model on configurations drawn at random: {meta['device']}, {meta['date']}")
    print(f"seed {seed} (again: python benchmarks/model.py --random {a.random} --seed {seed}"
          + (" --quick" if a.quick else "") + (f" --algorithms {a.algorithms}"
                                               if a.algorithms else "") + ")")
    print(f"{len(cases)} configurations, {a.random} per algorithm; host: {os.cpu_count()} "
          f"CPUs, load average {load0[0]:.2f} {load0[1]:.2f} {load0[2]:.2f} at the start\n",
          flush=True)
    if a.no_calibrate:
        speeds = M.measured_speeds(dev)
        how = "the device's saved calibration"
        if not speeds.efficiency:
            how += " (it holds no kernel efficiencies: an engine-only calibration)"
        timed = MC.timed_rounds(cases, dev, a.rounds or 1, repeat=a.repeat)
    else:
        from shadergpgpu.analysis.reports.calibrate import calibration_rounds
        rounds = a.rounds or (2 if a.quick else calibration_rounds(dev))
        prof, timed = calibrate_and_time(dev, cases, rounds=rounds, save=False)
        speeds = M.Speeds.from_dict(prof["speeds"], prof["description"])
        how = f"calibrated in this run, {rounds} round(s) interleaved with the timings"
    print(f"speeds: {how}\n")
    rows = []
    for case, t in zip(cases, timed):
        try:
            if isinstance(t, Exception):
                raise t
            r = R.compare_case(case, dev, speeds, None, repeat=a.repeat, timed=t)["row"]
        except Exception as e:  # noqa: BLE001 - report the failure, go on
            rows.append({"algorithm": case.algo, "case": case.label, "verdict": "ERROR",
                         "diagnosis": f"{type(e).__name__}: {e}"[:200]})
            print(f"{case.algo:9} {case.label:44} ERROR {rows[-1]['diagnosis']}", flush=True)
            continue
        rows.append(r)
        print(f"{r['algorithm']:9} {r['case']:44} {r['measured ms']:9.3f} ms measured "
              f"{r['predicted ms']:9.3f} ms predicted  x{r['measured / predicted']:.2f}",
              flush=True)
    stolen = steal_share(t0, cpu_times())
    load1 = os.getloadavg()
    dist = MR.distribution([r for r in rows if r.get("verdict") != "ERROR"])
    print(f"\n## measured / predicted on {len(rows)} random configurations "
          f"(seed {seed})\n")
    print(markdown_table(dist, MR.DIST_COLUMNS, floatfmt=".3g"))
    print("the worst configuration of each algorithm (measured / predicted, the term the "
          "model blames):")
    for w in MR.worst_by_algorithm([r for r in rows if r.get("verdict") != "ERROR"]):
        print(f"  {w['algorithm']:9} {w['case']:44} x{w['measured / predicted']:.2f} "
              f"{w.get('dominant', '')}")
    print()
    errors = [r for r in rows if r.get("verdict") == "ERROR"]
    print(f"{meta['device']}, {meta['date']}; {time.perf_counter() - w0:.0f} s; load average "
          f"{load0[0]:.2f} at the start, {load1[0]:.2f} at the end (1 min)"
          + (f"; CPU stolen by other guests {100 * stolen:.0f} %" if stolen is not None
             else "") + (f"; {len(errors)} configuration(s) raised" if errors else ""))
    print(f"bound: {MR.BOUND_TEXT}")
    missed = MR.verdict(dist[-1]) + [f"{r['algorithm']} {r['case']} raised: {r['diagnosis']}"
                                     for r in errors]
    for m in missed:
        print(f"MISSED: {m}")
    if not missed:
        print("within the bound")
    if a.out:
        out = Path(a.out)
        extra = meta | {"seed": seed, "k": a.random, "quick": a.quick, "speeds": how,
                        "load_start": load0, "load_end": load1, "cpu_steal": stolen,
                        "bound": MR.BOUND_TEXT}
        write_outputs(out, "model_random", rows, extra)
        write_outputs(out, "model_random_distribution", dist, extra)
        # the speeds the predictions used (this run's calibration): to study a miss offline
        import json
        (out / "model_random_speeds.json").write_text(json.dumps(M.asdict_speeds(speeds),
                                                                 default=str, indent=1))
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
