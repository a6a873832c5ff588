"""``shadergpgpu report model``: the cost model against measured time; the paper's GPU in time.

1. For each algorithm's configurations: measured time of one call (the fastest of the
   repeats, waiting for the device) beside the time the cost model predicts from the call's
   passes and declared work (:mod:`shadergpgpu.engine.model`, speeds measured by
   ``shadergpgpu calibrate``), per phase and in total, the ratio, and MISSED where the
   prediction is off by more than 30 % (with the term that is wrong, from the per-phase GPU
   time of a ``timing=True`` run).
2. The paper's configuration (backprop 2-64-1, N = 1024, paper schedule, packed and unpacked)
   predicted on the GeForce 7800 GTX's published speeds (``profiles/geforce-7800gtx.json``),
   against the paper's 0.008 s and 0.026 s; Fig. 3 (MH sweep) and Fig. 4 (N sweep) redrawn with
   the predicted 7800 GTX curves, the curves measured on this machine and the paper's points.

``predict_main`` is ``shadergpgpu predict ALGORITHM ...``: predicted time on this device and on a
profile, numpy's measured time, and the N where the device overtakes numpy.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from ...engine import model as M
from .common import (Progress, device_meta, markdown_table, measure, parser, plot_lines,
                     write_outputs)

PAPER = {"packed": 0.008, "unpacked": 0.026}     # s per step, GeForce 7800 GTX (seed 004)
PAPER_SIZES = (2, 64, 1)
PAPER_N = 1024
GPU_PROFILE = "geforce-7800gtx"


# ---- cases: one call of an algorithm, built on a device ------------------------------------------
class Case:
    """One configuration: ``build(dev) -> (call, release)``, and ``numpy() -> callable`` (the
    CPU reference of the same work, or None)."""

    def __init__(self, algo: str, label: str, build, numpy=None, params=None):
        self.algo, self.label, self.build, self.numpy = algo, label, build, numpy
        self.params = params or {}

    def __repr__(self):
        return f"Case({self.algo} {self.label})"


def backprop_case(sizes=PAPER_SIZES, n=PAPER_N, schedule="paper", packed=True, steps=1):
    from ...algorithms import backprop as bp
    sizes = [int(s) for s in sizes]
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (n, sizes[0]))
    T = rng.uniform(0, 1, (n, sizes[-1]))

    def build(dev):
        net = bp.BackpropNet(dev, sizes, X, T, lr=0.5 / n, schedule=schedule, packed=packed)
        return (lambda: net.step(steps)), net.release

    def numpy():
        cpu = bp.NumpyMLP(sizes, X, T, 0.5 / n, dtype=np.float32)
        return lambda: cpu.step(steps)

    label = f"{'-'.join(map(str, sizes))} N={n} {schedule}{'' if packed else ' unpacked'}"
    return Case("backprop", label, build, numpy,
                dict(sizes=sizes, n=n, schedule=schedule, packed=packed))


def _keeping_last(make, inputs):
    """(call, release) for a case whose call returns a new device array: the call keeps only
    the latest result (memory stays flat over repeats); release frees it and ``inputs``."""
    out = []

    def call():
        out.append(make())
        while len(out) > 1:
            out.pop(0).release()

    def release():
        for x in out + list(inputs):
            x.release()
    return call, release


def sgemm_case(n=256, variant="auto"):
    from ...algorithms import sgemm as S
    rng = np.random.default_rng(0)
    A = rng.standard_normal((n, n)).astype(np.float32)
    B = rng.standard_normal((n, n)).astype(np.float32)

    def build(dev):
        a, b = dev.array(A), dev.array(B)
        return _keeping_last(lambda: S.sgemm(a, b, variant=variant, device=dev), [a, b])

    return Case("sgemm", f"{n}x{n}x{n} {variant}", build, lambda: (lambda: A @ B),
                dict(n=n, variant=variant))


def blur_case(shape=(256, 256), sigma=3.0, method="recursive"):
    from ...algorithms import blur as B
    img = np.random.default_rng(0).random(shape, dtype=np.float32)

    def build(dev):
        x = dev.array(img)
        return _keeping_last(lambda: B.gaussian_blur(x, sigma, method=method, device=dev), [x])

    def numpy():
        from scipy.ndimage import gaussian_filter
        return lambda: gaussian_filter(img, sigma, mode="reflect")

    return Case("blur", f"{shape[0]}x{shape[1]} sigma={sigma} {method}", build, numpy,
                dict(shape=tuple(shape), sigma=sigma, method=method))


def svm_case(n=256, d=8, max_iter=50):
    from ...algorithms.svm import SVC
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)).astype(np.float32)
    y = (X[:, 0] + 0.3 * rng.standard_normal(n) > 0).astype(int)

    def build(dev):
        est = SVC(max_iter=max_iter, device=dev)
        return (lambda: est.fit(X, y)), (lambda: None)

    def numpy():
        from sklearn.svm import SVC as SK
        return lambda: SK(max_iter=max_iter).fit(X, y)

    return Case("svm", f"n={n} d={d} {max_iter} SMO iterations", build, numpy,
                dict(n=n, d=d, max_iter=max_iter))


def sammon_case(n=256, d=8, n_iter=10):
    from ...algorithms import sammon as SM
    X = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)

    def build(dev):
        est = SM.Sammon(n_iter=n_iter, device=dev, random_state=0)
        return (lambda: est.fit_transform(X)), (lambda: None)

    def numpy():
        Y0 = SM.pca_init(X, 2)
        return lambda: SM.reference_fit(X, Y0, n_iter)

    return Case("sammon", f"n={n} d={d} {n_iter} iterations", build, numpy,
                dict(n=n, d=d, n_iter=n_iter))


MAKERS = {"backprop": backprop_case, "sgemm": sgemm_case, "blur": blur_case, "svm": svm_case,
          "sammon": sammon_case}


def default_cases(software: bool = True) -> list[Case]:
    """The benchmark configurations: small ones for a software renderer, the real ones else."""
    if software:
        return [backprop_case(n=1024, packed=True), backprop_case(n=1024, packed=False),
                backprop_case(n=1024, schedule="fused"),
                backprop_case(sizes=(2, 256, 1), n=256, schedule="fused"),
                sgemm_case(128), sgemm_case(256),
                blur_case((256, 256), 3.0), blur_case((256, 256), 3.0, "exact"),
                svm_case(256, 8, 50), sammon_case(256, 8, 5)]
    return [backprop_case(n=1024, packed=True), backprop_case(n=1024, packed=False),
            backprop_case(n=1024, schedule="fused"),
            backprop_case(sizes=(2, 1024, 1), n=16384, schedule="fused"),
            backprop_case(sizes=(2, 1024, 1), n=16384, packed=True),
            sgemm_case(1024), sgemm_case(4096),
            blur_case((2048, 2048), 8.0), blur_case((2048, 2048), 3.0, "exact"),
            svm_case(4096, 32, 200), sammon_case(2048, 16, 10)]


# ---- measuring and predicting one case ----------------------------------------------------------
def count(case: Case, dev) -> dict:
    """Counter snapshot of ONE call of ``case`` on ``dev`` (after a warm-up call)."""
    call, release = case.build(dev)
    try:
        call()
        dev.finish()
        dev.counter.reset()
        call()
        dev.finish()
        return dev.counter.snapshot()
    finally:
        release()


def measure_case(case: Case, dev, repeat: int = 5, min_time: float = 0.05) -> tuple:
    """(seconds of one call, counter snapshot of one call) on ``dev``: the fastest of the
    repeats (waiting for the device after each), as the calibration takes the fastest of its
    repeats, so that a machine shared with other jobs disturbs both sides alike."""
    call, release = case.build(dev)
    try:
        t = measure(call, dev.finish, repeat=repeat, warmup=1, min_time=min_time)
        dev.counter.reset()
        call()
        dev.finish()
        return t.min, dev.counter.snapshot()
    finally:
        release()


def profile_speeds(name: str) -> M.Speeds:
    from ...engine import profiles
    p = profiles.load(name)
    if not p.speeds:
        raise ValueError(f"profile {name!r} has no speeds")
    return M.Speeds.from_dict(p.speeds, p.name)


def predict_on_profile(case: Case, profile: str, counting_device=None) -> tuple:
    """(predicted seconds, per-phase prediction, snapshot) of ``case`` on a profile's GPU: the
    passes and work are counted by running it here under the profile's limits (its loop cap,
    blending, draw buffers), the speeds are the profile's."""
    from ...engine.device import Device
    dev = counting_device or Device(profile=profile)
    try:
        snap = count(case, dev)
    finally:
        if counting_device is None:
            dev.release()
    pred = M.predict(snap, profile_speeds(profile))
    return M.total(pred), pred, snap


def compare_case(case: Case, dev, speeds: M.Speeds, timing_dev=None, repeat=5) -> dict:
    """Measured vs predicted for one case: a row (total) and per-phase rows."""
    measured, snap = measure_case(case, dev, repeat=repeat)
    pred = M.predict(snap, speeds)
    p = M.total(pred)
    gsnap = None
    if timing_dev is not None:
        try:
            gsnap = count(case, timing_dev)
        except Exception:  # noqa: BLE001 - timing queries are optional
            gsnap = None
    row = {"algorithm": case.algo, "case": case.label, "passes":
           sum(s["passes"] for s in snap.values()), "measured ms": measured * 1e3,
           "predicted ms": p * 1e3, "measured / predicted": measured / p if p else None,
           "verdict": M.verdict(measured, p),
           "dominant": max(pred.values(), key=lambda x: x["predicted_s"])["dominant"]
           if pred else "", "diagnosis": M.diagnose(snap, pred, measured, speeds, gsnap)}
    phases = []
    dev_over = min(speeds.pass_gpu_us, speeds.pass_overhead_us) * 1e-6
    for label, q in pred.items():
        g = (gsnap or {}).get(label, {}).get("gpu_ms")
        on_dev = q["work_s"] + q["passes"] * dev_over     # the predicted device-side time
        phases.append({"case": f"{case.algo} {case.label}", "phase": label,
                       "passes": q["passes"], "predicted ms": q["predicted_s"] * 1e3,
                       "overhead ms": q["overhead_s"] * 1e3, "alu ms": q["alu_s"] * 1e3,
                       "fetch ms": q["fetch_s"] * 1e3, "write ms": q["write_s"] * 1e3,
                       "GPU ms (timing run)": g,
                       "GPU / predicted on device": (g * 1e-3 / on_dev) if g and on_dev
                       else None, "dominant": q["dominant"]})
    return {"row": row, "phases": phases, "snapshot": snap}


def predicted_columns(dev, snapshot: dict, measured_s: float | None = None,
                      speeds: M.Speeds | None = None) -> dict:
    """Columns any report can add to a timing row: the model's prediction for a counter
    ``snapshot`` of one call on ``dev`` (its measured speeds), beside the ``measured_s``."""
    speeds = speeds or M.measured_speeds(dev)
    pred = M.predict(snapshot, speeds)
    p = M.total(pred)
    row = {"predicted ms": p * 1e3, "bound": _bound(pred)}
    if measured_s:
        row["measured / predicted"] = measured_s / p if p else None
        row["model"] = M.verdict(measured_s, p)
    return row


# ---- `shadergpgpu predict` -----------------------------------------------------------------------
def _numpy_time(case: Case) -> float | None:
    if case.numpy is None:
        return None
    try:
        fn = case.numpy()
    except Exception:  # noqa: BLE001 - a missing optional reference
        return None
    return measure(fn, None, repeat=5, warmup=1, min_time=0.02).min


def _sweep_param(algo: str) -> str:
    return {"backprop": "n", "sgemm": "n", "blur": "shape", "svm": "n", "sammon": "n"}[algo]


def _with(case: Case, value) -> Case:
    params = dict(case.params)
    key = _sweep_param(case.algo)
    params[key] = (value, value) if key == "shape" else value
    return MAKERS[case.algo](**params)


def predict_case(case: Case, dev=None, profiles=(GPU_PROFILE,), sweep=None) -> dict:
    """Predicted seconds of ``case`` on this device (measured speeds) and on each profile, the
    measured time here and numpy's; with ``sweep`` (values of N, or of the image side for the
    blur) the same at each value and the first value where each device beats numpy."""
    from ...engine.device import Device
    own = dev is None
    dev = dev or Device()
    try:
        speeds = M.measured_speeds(dev)
        res = {"case": f"{case.algo} {case.label}", "rows": []}
        points = [None] + list(sweep or [])
        for v in points:
            c = case if v is None else _with(case, v)
            snap = count(c, dev)
            pred = M.predict(snap, speeds)
            row = {"N" if case.algo != "blur" else "side": v if v is not None else
                   _point(case), "this device predicted s": M.total(pred)}
            if v is None:
                row["this device bound"] = _bound(pred)
            for prof in profiles:
                t, ppred, _ = predict_on_profile(c, prof)
                row[f"{_short(prof)} predicted s"] = t
                if v is None:
                    row[f"{_short(prof)} bound"] = _bound(ppred)
            row["numpy s"] = _numpy_time(c)
            if v is None:
                row["this device measured s"] = measure_case(c, dev, repeat=3)[0]
            res["rows"].append(row)
        res["crossings"] = _crossings(res["rows"][1:] if sweep else [], profiles)
        return res
    finally:
        if own:
            dev.release()


def _short(profile) -> str:
    return Path(str(profile)).stem


def _bound(pred: dict) -> str:
    """What limits a predicted run: the term with the most time summed over its phases."""
    tot = {"overhead": sum(q["overhead_s"] for q in pred.values())}
    for k in ("alu", "fetch", "write"):
        tot[k] = sum(q[f"{k}_s"] for q in pred.values())
    k = max(tot, key=tot.get)
    n = sum(q["passes"] for q in pred.values())
    return f"{k}-bound ({n} passes)" if k == "overhead" else f"{k}-bound"


def _point(case: Case):
    k = _sweep_param(case.algo)
    v = case.params.get(k)
    return v[0] if k == "shape" else v


def _crossings(rows, profiles) -> dict:
    out = {}
    if not rows:
        return out
    key = next(iter(rows[0]))
    for col in ["this device predicted s"] + [f"{_short(p)} predicted s" for p in profiles]:
        win = [r[key] for r in rows if r.get("numpy s") and r[col] < r["numpy s"]]
        lose = [r[key] for r in rows if r.get("numpy s") and r[col] >= r["numpy s"]]
        if win and lose:
            out[col] = f"faster than numpy from {key} = {min(win)}" if min(win) > max(lose) \
                else f"faster than numpy at {key} in {sorted(win)}"
        elif win:
            out[col] = "faster than numpy at every point"
        else:
            out[col] = "never faster than numpy in the sweep"
    return out


def predict_main(argv=None) -> int:
    """``shadergpgpu predict ALGORITHM [options]``."""
    p = argparse.ArgumentParser(prog="shadergpgpu predict",
                                description="predicted time of an algorithm on this device and "
                                            "on a profile's GPU, beside numpy's")
    p.add_argument("algorithm", choices=sorted(MAKERS))
    p.add_argument("--sizes", default="2,64,1", help="backprop layer sizes")
    p.add_argument("--n", type=int, default=None, help="N (backprop, svm, sammon) or matrix size")
    p.add_argument("--schedule", default="paper", choices=("paper", "fused"))
    p.add_argument("--unpacked", action="store_true")
    p.add_argument("--shape", default="256,256", help="blur image shape H,W")
    p.add_argument("--sigma", type=float, default=3.0)
    p.add_argument("--method", default="recursive", choices=("recursive", "exact"))
    p.add_argument("--profile", action="append", default=None,
                   help=f"profile with speeds (repeatable; default {GPU_PROFILE})")
    p.add_argument("--sweep", default="auto",
                   help="comma list of N (or image sides) to find the crossing; 'none' to skip")
    a = p.parse_args(argv)
    algo = a.algorithm
    if algo == "backprop":
        case = backprop_case([int(s) for s in a.sizes.split(",")], a.n or PAPER_N, a.schedule,
                             not a.unpacked)
        auto = [2 ** k for k in range(4, 15, 2)]
    elif algo == "sgemm":
        case = sgemm_case(a.n or 256)
        auto = [32, 64, 128, 256, 512]
    elif algo == "blur":
        case = blur_case(tuple(int(s) for s in a.shape.split(",")), a.sigma, a.method)
        auto = [64, 128, 256, 512]
    elif algo == "svm":
        case = svm_case(a.n or 256)
        auto = [64, 128, 256, 512]
    else:
        case = sammon_case(a.n or 256)
        auto = [64, 128, 256, 512]
    sweep = None if a.sweep == "none" else auto if a.sweep == "auto" else \
        [int(s) for s in a.sweep.split(",")]
    res = predict_case(case, profiles=tuple(a.profile or [GPU_PROFILE]), sweep=sweep)
    first = res["rows"][0]
    print(f"{res['case']}:")
    for k, v in first.items():
        if k not in ("N", "side"):
            print(f"  {k:<34} {v if isinstance(v, str) else _fmt_s(v)}")
    if sweep:
        print("\nsweep:")
        print(markdown_table(res["rows"][1:], floatfmt=".3g"))
        for k, v in res["crossings"].items():
            print(f"  {k}: {v}")
    return 0


def calibrate_main(argv=None) -> int:
    """``shadergpgpu calibrate``: measure this device's speeds and store the measured profile."""
    p = argparse.ArgumentParser(prog="shadergpgpu calibrate",
                                description="measure this device's pass overhead, ALU, fetch, "
                                            "write, upload and readback rates (a few seconds) "
                                            "and store them as a profile in the cache folder")
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    p.add_argument("--backend", default=None, help="GL backend (default: the library's)")
    p.add_argument("--no-save", action="store_true", help="print only")
    a = p.parse_args(argv)
    from ...engine.device import Device
    dev = Device(backend=a.backend) if a.backend else Device()
    try:
        t0 = time.perf_counter()
        prof = M.calibrate(dev, quick=a.quick, save=not a.no_save)
        took = time.perf_counter() - t0
    finally:
        dev.release()
    print(prof["description"])
    units = {"pass_overhead_us": "us", "pass_gpu_us": "us", "dependent_pass_us": "us",
             "alu_gflops": "GFLOPS", "texel_rate_gtexels": "Gtexel/s",
             "buffer_texel_rate_gtexels": "Gtexel/s", "write_gbs": "GB/s", "upload_gbs": "GB/s",
             "readback_gbs": "GB/s"}
    for k, v in prof["speeds"].items():
        print(f"  {k:<28} {v:.4g} {units.get(k, '')}" if isinstance(v, float) else
              f"  {k:<28} {v}")
    print(f"(measured in {took:.1f} s)")
    if prof.get("path"):
        print(f"written to {prof['path']}")
    return 0


def _fmt_s(v) -> str:
    if v is None:
        return "n/a"
    return f"{v * 1e3:.3g} ms" if v < 1 else f"{v:.3g} s"


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
    rows = []
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
                rows.append({"counting": how, "variant": ("packed" if packed else "unpacked"),
                             "passes": sum(s["passes"] for s in snap.values()),
                             "predicted s": t, "overhead s": over, "work s": t - over,
                             "alu s": sum(q["alu_s"] for q in pred.values()),
                             "fetch s": sum(q["fetch_s"] for q in pred.values()),
                             "write s": sum(q["write_s"] for q in pred.values()),
                             "paper s": paper, "predicted / paper": t / paper,
                             "verdict": M.verdict(paper, t)})
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
                row["numpy s"] = _numpy_time(backprop_case((2, mh, 1), n))
                if (2, mh, 1) == PAPER_SIZES and n == PAPER_N:
                    row["paper packed s"], row["paper unpacked s"] = PAPER["packed"], \
                        PAPER["unpacked"]
                out[fig].append(row)
                prog.step(f"{fig} MH={mh} N={n}")
    finally:
        gdev.release()
        edev.release()
    return out


def _paper_plots(out: Path, figs: dict) -> list[str]:
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
    from ...engine import kernels, plans, work
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
    plots = [] if args.no_plots or not figs else _paper_plots(out, figs)
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
