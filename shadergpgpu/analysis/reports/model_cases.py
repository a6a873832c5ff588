"""The cost model's cases: one call of an algorithm built on a device, and measuring it.

:class:`Case` and its makers (``backprop_case``, ``sgemm_case``, ``blur_case``, ``svm_case``,
``sammon_case``; :data:`MAKERS` by algorithm), :func:`default_cases` (the benchmark
configurations), and one case counted (:func:`count`), timed (:func:`measure_case`), predicted on a
profile (:func:`predict_on_profile`) and compared with its prediction (:func:`compare_case`);
many cases timed in rounds over the whole list (:func:`timed_rounds`, :func:`default_rounds`);
(the model's columns beside a report's timing rows are :mod:`.predicted`'s). The paper's configuration
(:data:`PAPER`, :data:`PAPER_SIZES`, :data:`PAPER_N`, :data:`GPU_PROFILE`) lives here because the
makers' defaults use it.
"""
from __future__ import annotations

import contextlib
import math
import time
import warnings

import numpy as np

from .. import cost_model as M
from ..work_recorder import recording
from .common import measure

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


def keeping_last(make, inputs):
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
        return keeping_last(lambda: S.sgemm(a, b, variant=variant, device=dev), [a, b])

    return Case("sgemm", f"{n}x{n}x{n} {variant}", build, lambda: (lambda: A @ B),
                dict(n=n, variant=variant))


def blur_case(shape=(256, 256), sigma=3.0, method="recursive"):
    from ...algorithms import blur as B
    img = np.random.default_rng(0).random(shape, dtype=np.float32)

    def build(dev):
        x = dev.array(img)
        return keeping_last(lambda: B.gaussian_blur(x, sigma, method=method, device=dev), [x])

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

        def call():     # SMO stops at max_iter on purpose here: no warning for it
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "SMO stopped at max_iter")
                return est.fit(X, y)
        return call, (lambda: None)

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


def elementwise_case(n=256):
    """A one-liner on device arrays: ``z = x * y + 1`` over n x n."""
    from ...ops.elementwise import ElementwiseKernel
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, n)).astype(np.float32)
    Y = rng.standard_normal((n, n)).astype(np.float32)
    k = ElementwiseKernel("float x, float y", "float z", "z = x * y + 1.0", "model_fma")

    def build(dev):
        x, y = dev.array(X), dev.array(Y)
        return keeping_last(lambda: k(x, y), [x, y])

    return Case("one-liner", f"elementwise {n}x{n}", build, lambda: (lambda: X * Y + 1.0),
                dict(n=n, op="elementwise"))


def reduction_case(n=256):
    """A one-liner reduction to the host: ``sg.sum`` of an n x n device array."""
    from ...ops.reduce import sum as dsum
    X = np.random.default_rng(0).standard_normal((n, n)).astype(np.float32)

    def build(dev):
        x = dev.array(X)
        return (lambda: dsum(x)), x.release

    return Case("one-liner", f"sum {n}x{n}", build, lambda: (lambda: X.sum()),
                dict(n=n, op="sum"))


MAKERS = {"backprop": backprop_case, "sgemm": sgemm_case, "blur": blur_case, "svm": svm_case,
          "sammon": sammon_case, "elementwise": elementwise_case, "sum": reduction_case}


def default_cases(software: bool = True) -> list[Case]:
    """The benchmark configurations: small ones for a software renderer, the real ones else."""
    if software:
        return [backprop_case(n=1024, packed=True), backprop_case(n=1024, packed=False),
                backprop_case(n=1024, schedule="fused"),
                backprop_case(sizes=(2, 256, 1), n=256, schedule="fused"),
                sgemm_case(128), sgemm_case(256),
                blur_case((256, 256), 3.0), blur_case((256, 256), 3.0, "exact"),
                svm_case(256, 8, 50), sammon_case(256, 8, 5),
                elementwise_case(256), reduction_case(256)]
    return [backprop_case(n=1024, packed=True), backprop_case(n=1024, packed=False),
            backprop_case(n=1024, schedule="fused"),
            backprop_case(sizes=(2, 1024, 1), n=16384, schedule="fused"),
            backprop_case(sizes=(2, 1024, 1), n=16384, packed=True),
            sgemm_case(1024), sgemm_case(4096),
            blur_case((2048, 2048), 8.0), blur_case((2048, 2048), 3.0, "exact"),
            svm_case(4096, 32, 200), sammon_case(2048, 16, 10),
            elementwise_case(4096), reduction_case(4096)]


# ---- measuring and predicting one case ----------------------------------------------------------
def count(case: Case, dev, finish: bool = True) -> dict:
    """Counter snapshot of ONE call of ``case`` on ``dev`` (after a warm-up call), with the
    wait for the device after it, or without (``finish=False``: a call of a run, as
    :func:`timed_call` snapshots it on a GPU)."""
    call, release = case.build(dev)
    try:
        call()
        dev.finish()
        return snapshot_of_call(call, dev, finish)
    finally:
        release()


def snapshot_of_call(call, dev, finish: bool) -> dict:
    """Counter snapshot of one call of ``call``, taken after the wait for the device that
    follows it (``finish``) or before it (a call of a run); the device is idle after."""
    with recording(dev) as rec:
        dev.counter.reset()
        call()
        snap = None if finish else rec.snapshot(host=True)
        dev.finish()
        return rec.snapshot(host=True) if finish else snap


#: the former private name (``benchmarks/diag/clock_state.py`` still calls it)
_snapshot_of_call = snapshot_of_call


def finishes(snapshot: dict) -> int:
    """The waits for the device (finish events) in a counter snapshot."""
    return sum((s.get("events") or {}).get("finish", 0) for s in snapshot.values())


def measure_case(case: Case, dev, repeat: int = 5, min_time: float = 0.05) -> tuple:
    """(seconds of one call, counter snapshot of one call) on ``dev``: the fastest of the
    repeats (waiting for the device after each), as the calibration takes the fastest of its
    repeats, so that a machine shared with other jobs disturbs both sides alike."""
    call, release = case.build(dev)
    try:
        warm(call, dev)
        t = measure(call, dev.finish, repeat=repeat, warmup=1, min_time=min_time)
        return t.min, snapshot_of_call(call, dev, True)
    finally:
        release()


def warm(call, dev, seconds: float | None = None) -> float:
    """Call ``call`` (waiting for the device) for ``seconds`` (0.2 s on a GPU, 0.05 s on a
    software renderer): a GPU raises its clocks under load, and a cold call measures a
    slower device than the one the calibration measured. Returns the mean seconds of a call
    while warming up."""
    seconds = (0.05 if dev.is_software else 0.2) if seconds is None else seconds
    t0 = time.perf_counter()
    n = 0
    while True:
        call()
        dev.finish()
        n += 1
        t = time.perf_counter() - t0
        if t >= seconds:
            return t / n


#: On a GPU a measured call is one of a run of calls issued back to back, the run taking at
#: least this long (at most :data:`RUN_CALLS` calls): a call alone after a wait also pays the
#: driver's and the GPU's wake-up from idle, which varies from host to host by up to 2x where
#: calls in a row take the same time on each. A software renderer has no such wake-up: one
#: call at a time there.
RUN_SECONDS = 0.02
RUN_CALLS = 32


def run_length(dev, call_s: float) -> int:
    """Calls per timed run on ``dev`` for a call of about ``call_s`` seconds
    (:data:`RUN_SECONDS`): 1 on a software renderer."""
    if dev.is_software or call_s <= 0:
        return 1
    return max(1, min(RUN_CALLS, int(math.ceil(RUN_SECONDS / call_s))))


#: On a software renderer a case is timed at least this long per round (at most
#: :data:`SOFTWARE_REPEATS` calls): its rasterizer threads' hand-offs make one call of a few
#: milliseconds take 1-2x its fastest (an SGEMM 256 read 5.4-9.5 ms call to call).
SOFTWARE_SECONDS = 0.1
SOFTWARE_REPEATS = 40


def repeats(dev, call_s: float, repeat: int) -> int:
    """Timed runs per round of a call of about ``call_s`` seconds: ``repeat``, and on a
    software renderer enough for :data:`SOFTWARE_SECONDS` (at most :data:`SOFTWARE_REPEATS`)."""
    if not dev.is_software or call_s <= 0:
        return repeat
    return max(repeat, min(SOFTWARE_REPEATS, int(math.ceil(SOFTWARE_SECONDS / call_s))))


def call_times(call, dev, repeat: int = 5, device: bool = False) -> dict:
    """After :func:`warm`, the fastest of ``repeat`` timed runs of ``call`` (more for a short
    call on a software renderer, :func:`repeats`), per call:
    ``wall`` (until the device is done), ``issue`` (until the calls return) and, with
    ``device`` on a GPU, ``device`` (one timer query around a whole run: the device's busy
    time, with no per-draw query serializing its draws; inf on a software renderer). A run is
    :func:`run_length` calls issued back to back (one on a software renderer); ``calls``
    says how many."""
    call_s = warm(call, dev)
    k = run_length(dev, call_s)
    out = {"wall": float("inf"), "issue": float("inf"), "device": float("inf"), "calls": k}
    for _ in range(repeats(dev, call_s, repeat)):
        issue, wall, _ = run_times(call, dev, k)
        out["wall"] = min(out["wall"], wall)
        out["issue"] = min(out["issue"], issue)
        if device and not dev.is_software:
            out["device"] = min(out["device"], run_times(call, dev, k, query=True)[2])
    return out


def run_times(call, dev, k: int, query: bool = False, idle: bool = True) -> tuple:
    """(issue, wall, device) seconds per call of ``k`` calls of ``call`` issued back to back
    on ``dev`` (idle first, unless ``idle`` is off: then behind what it was given before):
    until the calls return, until the device is done, and with ``query`` one timer query
    around the run (else inf)."""
    if idle:
        dev.finish()
    q = dev.ctx.query(time=True) if query else contextlib.nullcontext()
    t0 = time.perf_counter()
    with q:
        for _ in range(k):
            call()
    t1 = time.perf_counter()
    dev.finish()
    t2 = time.perf_counter()
    return (t1 - t0) / k, (t2 - t0) / k, q.elapsed * 1e-9 / k if query else float("inf")


def timed_call(case: Case, dev, repeat: int = 5, device: bool = False) -> tuple:
    """(fastest wall time, fastest issue time, counter snapshot) of one call of ``case``
    after warming up: issue = until the call returns, wall = until the device is done, per
    call of a run on a GPU (:func:`call_times`); with ``device``, a fourth item: the device
    time of a call."""
    call, release = case.build(dev)
    try:
        t = call_times(call, dev, repeat, device=device)
        # a call of a run (see call_times) does not wait for the device after it: its
        # snapshot stops before the finish
        out = (t["wall"], t["issue"], snapshot_of_call(call, dev, finish=t["calls"] == 1))
        return out + (t["device"],) if device else out
    finally:
        release()


def default_rounds(dev) -> int:
    """Rounds over all cases for :func:`timed_rounds`: 3 on a software renderer (it shares the
    CPU with everything else on the machine, whose bursts last seconds), 1 on a GPU. (A GPU's
    short calls move between two states, about 2x apart, within a lease: a second round
    catches the faster state for the cases but not for the checks, which the fit then
    predicts too fast.)"""
    return 3 if dev.is_software else 1


def timed_rounds(cases: list, dev, rounds: int = 1, repeat: int = 5,
                 device: bool = True) -> list:
    """:func:`timed_call` of every case, ``rounds`` times over the whole list (round-robin),
    per case the fastest wall, issue and device time over the rounds with the snapshot of its
    first round: a disturbance of the machine lasting seconds slows one round of a case, not
    all of its repeats. One entry per case, in order: the tuple, or the exception that case
    raised."""
    best: list = [None] * len(cases)
    for _ in range(max(1, int(rounds))):
        for i, case in enumerate(cases):
            if isinstance(best[i], Exception):
                continue
            try:
                t = timed_call(case, dev, repeat=repeat, device=device)
            except Exception as e:  # noqa: BLE001 - the caller reports or skips the case
                best[i] = e
                continue
            b = best[i]
            best[i] = t if b is None else (min(b[0], t[0]), min(b[1], t[1]), b[2],
                                           *((min(b[3], t[3]),) if device else ()))
    return best


def count_warm(case: Case, tdev, rounds: int = 3) -> dict:
    """The counter snapshot of a call of ``case`` on ``tdev`` (a ``timing=True`` device) after
    :func:`warm`, with per kernel the fastest device time of ``rounds`` calls."""
    call, release = case.build(tdev)
    try:
        warm(call, tdev)
        best = None
        for _ in range(rounds):
            snap = snapshot_of_call(call, tdev, True)
            if best is None:
                best = snap
                continue
            for label, s in snap.items():
                for name, k in (s.get("kernels") or {}).items():
                    b = best.get(label, {}).get("kernels", {}).get(name)
                    if b is not None and k["gpu_ms"] < b["gpu_ms"]:
                        b["gpu_ms"] = k["gpu_ms"]
        return best
    finally:
        release()
        tdev.counter.reset()


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


def compare_case(case: Case, dev, speeds: M.Speeds, timing_dev=None, repeat=5,
                 timed: tuple | None = None) -> dict:
    """Measured vs predicted for one case: a row (total), per-phase rows, and the record
    (``snapshot``, ``gpu_snapshot``, ``wall_s``, ``issue_s``) to study the model offline.
    ``timed``: the case's (wall, issue, snapshot, device) measured already
    (:func:`timed_rounds`), else measured here."""
    measured, issue, snap, device = timed if timed is not None else \
        timed_call(case, dev, repeat=repeat, device=True)
    pred = M.predict(snap, speeds)
    p = M.total(pred)
    gsnap = None
    if timing_dev is not None:
        try:
            gsnap = count_warm(case, timing_dev)
        except Exception:  # noqa: BLE001 - timing queries are optional
            gsnap = None
    row = {"algorithm": case.algo, "case": case.label, "passes":
           sum(s["passes"] for s in snap.values()), "measured ms": measured * 1e3,
           "predicted ms": p * 1e3, "measured / predicted": measured / p if p else None,
           "verdict": M.verdict(measured, p),
           "dominant": max(pred.values(), key=lambda x: x["predicted_s"])["dominant"]
           if pred else "",
           "diagnosis": M.diagnose(snap, pred, measured, speeds, gsnap, device, issue)}
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
    return {"row": row, "phases": phases, "snapshot": snap, "gpu_snapshot": gsnap,
            "wall_s": measured, "issue_s": issue,
            "device_s": device if device != float("inf") else None}


def numpy_time(case: Case) -> float | None:
    """Seconds of the case's CPU reference (the fastest of its repeats), or None."""
    if case.numpy is None:
        return None
    try:
        fn = case.numpy()
    except Exception:  # noqa: BLE001 - a missing optional reference
        return None
    return measure(fn, None, repeat=5, warmup=1, min_time=0.02).min
