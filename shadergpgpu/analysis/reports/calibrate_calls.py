"""The calibration's call costs (a part of ``shadergpgpu calibrate``,
:mod:`.calibrate`): what a one-liner's call costs the host beyond its ``Device.run``,
and each algorithm's host work per call and per pass of the call (``api:<algorithm>``), fitted
to the part of the calibration calls' time the rest of the model leaves unexplained."""
from __future__ import annotations

import statistics
import time

import numpy as np

from .. import cost_model as M
from . import model_cases as MC
from .calibrate_cases import calibration_cases


def call_cost_us(dev, n: int = 200) -> float:
    """Microseconds an ``ElementwiseKernel`` call on device arrays costs the host beyond the
    ``Device.run`` it makes (whose cost the engine's calibration measured)."""
    from ...ops.elementwise import ElementwiseKernel
    k = ElementwiseKernel("float x", "float y", "y = x * 2.0", "calibrate_double")
    x = dev.array(np.ones((1, 4), np.float32))
    y = dev.empty((1, 4))
    try:
        k(x, y)
        best = float("inf")
        for _ in range(5):
            dev.finish()
            t0 = time.perf_counter()
            for _ in range(n):
                k(x, y)
            best = min(best, (time.perf_counter() - t0) / n)
        return best * 1e6
    finally:
        x.release()
        y.release()


def call_costs(dev, speeds: M.Speeds, cases=None, progress=None,
               timed: list | None = None) -> tuple[dict, dict]:
    """{"api:<algorithm>": us per call, "api:<algorithm>/pass": us per pass of the call},
    fitted over an algorithm's calibration cases (never below 0) to each call's host time
    beyond the rest of the model: for a call that does not wait for the device, its issue time (until it
    returns, the fastest of its repeats after a warm-up) less the engine paths' host time;
    for one that does (a readback inside) or on a software renderer, the part of its wall
    time that the rest of the model (``speeds``, with the kernels' efficiencies) leaves
    unexplained. ``timed``: the cases' times (:func:`.model_cases.timed_rounds`), else
    measured here."""
    if cases is None:
        cases = calibration_cases(dev.is_software)
    if timed is None:
        timed = MC.timed_rounds(cases, dev)
    seen: dict[str, list] = {}
    for case, t in zip(cases, timed):
        if isinstance(t, Exception):   # refused here: kernel_efficiencies said so
            continue
        wall, issue, snap = t[:3]
        calls = {}
        for s in snap.values():
            for kind, n in (s.get("events") or {}).items():
                if kind.startswith("api:"):
                    calls[kind] = calls.get(kind, 0) + n
        if len(calls) != 1:
            continue
        (kind, n), = calls.items()
        passes = sum(q.get("passes", 0) for q in snap.values())
        pred = M.predict(snap, speeds)
        syncs = sum((s.get("events") or {}).get("readback", 0) for s in snap.values())
        if syncs or speeds.overlap == "sum":
            # the call waits for the device inside (or the renderer shares the CPU): the
            # part of its wall time the rest of the model leaves unexplained. That part also
            # holds what the model misses of the device time, which grows with the call, so
            # the fit weighs it against the call's wall time (see _call_fit)
            rest, scale = wall - M.total(pred), wall
        else:
            # nothing waits: the host's time to issue the call, less the engine's paths
            rest = issue - sum(q.get("host_s", 0.0) for q in pred.values())
            scale = None
        seen.setdefault(kind, []).append([passes / n, rest / n * 1e6,
                                          None if scale is None else scale / n * 1e6])
        if progress:
            progress(f"{case.algo} {case.label}: call {rest / n * 1e6:.4g} us")
    out = {}
    for kind, pts in seen.items():
        c0, c1 = _call_fit(pts)
        out[kind] = c0
        if c1:
            out[kind + "/pass"] = c1
    return out, seen


def _call_fit(pts: list) -> tuple[float, float]:
    """(us per call, us per pass of the call) from [[passes, us, wall us or None], ...]:
    least squares, both never below 0 (one size of call: a value per call only; three or
    more residuals without wall times: :func:`_repeated_median`).
    A point with its call's wall time is weighed by 1 / wall: a large call's residual holds
    device time the model misses, which must not price a small call's host work (plain
    squares: an SGEMM 384's 4.3 ms residual set 2.5 ms of host work on an SGEMM 128 that took
    1.8 ms in all), while a residual that grows with the call (the recursive blur's kernels
    the calibration cannot time one by one) must still reach the sizes between (1 / wall^2,
    the share of each call's time: the 256^2 check stood at x0.97-1.44 in eleven llvmpipe runs,
    1 / wall at x0.94-1.31 on the same records)."""
    ps = [q[0] for q in pts]
    us = [q[1] for q in pts]
    ws = [1.0 / q[2] if len(q) > 2 and q[2] else 1.0 for q in pts]
    if len(pts) > 1 and any(len(q) < 3 or not q[2] for q in pts):
        ws = [1.0] * len(pts)   # residuals of two kinds: no common scale, plain squares
    sw = sum(ws)
    mean = sum(w * u for w, u in zip(ws, us)) / sw
    # one value per call: unweighted, the median (a stray sample moves it least)
    centre = mean if len(set(ws)) > 1 else float(statistics.median(us))
    if len(pts) < 2 or max(ps) <= min(ps) * 1.5:
        return max(centre, 0.0), 0.0
    if len(pts) > 2 and all(len(q) < 3 or not q[2] for q in pts):
        return _repeated_median(ps, us, centre)
    mp = sum(w * p for w, p in zip(ws, ps)) / sw
    c1 = (sum(w * (p - mp) * (u - mean) for w, p, u in zip(ws, ps, us))
          / sum(w * (p - mp) ** 2 for w, p in zip(ws, ps)))
    c0 = mean - c1 * mp
    if c1 < 0:
        return max(centre, 0.0), 0.0
    if c0 < 0:
        return 0.0, max(sum(w * p * u for w, p, u in zip(ws, ps, us))
                        / sum(w * p * p for w, p in zip(ws, ps)), 0.0)
    return c0, c1


def _repeated_median(ps: list, us: list, centre: float) -> tuple[float, float]:
    """(us per call, us per pass) through three or more issue-time residuals without wall
    times (a GPU's): the repeated median line, per point the median of its slopes to the
    others, their median the slope, the median of what it leaves the intercept: one sample
    far off the others moves it little, where least squares follows it (and one call issued
    behind the device would set the cost per pass of every call). Both never below 0."""
    meds = []
    for i, (p, u) in enumerate(zip(ps, us)):
        sl = [(u2 - u) / (p2 - p) for p2, u2 in zip(ps, us) if p2 != p]
        if sl:
            meds.append(statistics.median(sl))
    c1 = float(statistics.median(meds))
    if c1 < 0:
        return max(centre, 0.0), 0.0
    c0 = float(statistics.median(u - c1 * p for p, u in zip(ps, us)))
    # the call with the most passes is where a cost per pass shows most: the slope must be
    # borne out there (at least half of what it adds), else the residuals show no cost per
    # pass (a few calls that issue slowly in every round would otherwise set a cost per pass
    # that the largest call, and the checks, do not show)
    top = max(ps)
    at_top = statistics.median(u for p, u in zip(ps, us) if p == top)
    if at_top < c0 + 0.5 * c1 * top:
        return max(centre, 0.0), 0.0
    return max(c0, 0.0), c1
