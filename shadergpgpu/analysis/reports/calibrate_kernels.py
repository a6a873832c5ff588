"""The kernels' efficiencies (a part of ``shadergpgpu calibrate``, :mod:`.calibrate`): what the
engine's probes cannot measure of a kernel.

Each algorithm runs its calibration configurations (:mod:`.calibrate_cases`: sizes that the
model's checks in ``benchmarks/model.py`` do NOT use, so the model is judged on configurations it
was not fitted to) on a device with ``timing=True``; for every kernel, the device time its draws
took against the time its declared work takes at the calibrated rates with efficiency 1
(:func:`work_time`, with the occupancy of its passes) is its efficiency: register pressure of
the tiled products, the recursive filters' serial loops, integer work.

* :func:`kernel_efficiencies`: from the per-draw timings (:func:`counted_round`), from whole
  calls a kernel dominates (:func:`_dominant_sample`), from a GPU's latency-bound calls
  (:func:`_latency_sample`). Kernels whose passes are too short to tell (their device time
  within twice the per-pass floor) keep 1.
* :func:`whole_call_efficiencies`: a software renderer's dominant kernels priced by their
  calls' wall time once the calls' costs are fitted.
* :func:`residual_efficiencies`: a software renderer's kernels that no timing prices take a
  share of their calls' unexplained time: a kernel keeps efficiency 1 when its draws are too
  short to time one by one and it is never the bulk of a calibration call, yet such kernels can
  cost many times their declared work there (the recursive blur's carry and interleave passes,
  at every image size). What a call's wall time leaves beyond the rest of the model is shared
  by its unpriced kernels, in proportion to their modelled time, but never more than their own
  per-draw timings say they took beyond that time. A call whose residual is under
  :data:`RESIDUAL_SHARE` of its wall time gives nothing: there the residual is noise. Each
  kernel gets one efficiency from all the calls it ran in.

All are written into the device's measured profile (``speeds.efficiency``,
``speeds.floor_factor``) by :func:`.calibrate.calibrate_and_time`.
"""
from __future__ import annotations

import statistics

import numpy as np

from .. import cost_model as M
from . import model_cases as MC
from .calibrate_cases import calibration_cases
from .rounds import rank, rank_share


#: A kernel whose timed passes average less than this (seconds) keeps efficiency 1 (unless
#: it dominates a calibration call, see _dominant_sample): a timer query around a short draw
#: serializes it with its neighbours (the device overlaps short independent draws when nothing
#: brackets them), so its time says more about the query.
MIN_TIMED_PASS_S = 200e-6
#: The same on a software renderer, whose short timed draws read more than they cost: a
#: fused backprop draw of 256 fragments read 2.1-3.0 times its work per draw where its 1,024
#: fragments read 1.3-1.7, and the 2-256-1 check (256 fragments) missed x0.70 on it.
MIN_TIMED_PASS_SOFTWARE_S = 300e-6


#: A call whose passes the host needs at least this share of the device time to issue (by
#: the calibrated host costs) is host-bound: its device time gives no per-pass floor sample
#: (see _dominant_sample).
HOST_BOUND = 0.9


#: On a software renderer a kernel's whole-call sample needs its modelled work to be at
#: least this share of the call's wall time (:func:`_dominant_sample`): else the sample is
#: mostly the error of the rest of the call's model (an elementwise 128^2 call, its draw a
#: tenth of the call, read efficiencies of 0.04-0.08 and the 256^2 check missed x1.55-1.70).
WALL_SHARE = 0.25


def work_time(speeds: M.Speeds, name: str, k: dict) -> float:
    """The device time the model gives a kernel's draws with efficiency 1 and no floor."""
    sp = M.Speeds(**{**M.asdict_speeds(speeds), "efficiency": {}, "pass_gpu_us": 0.0,
                     "pass_gpu_us_per_kfragment": 0.0, "pass_gpu_us_per_tile": 0.0})
    return M.kernel_device(sp, name, k)[0]


def _timed_floor(tdev) -> float:
    """Seconds a timed empty pass takes on ``tdev`` (timing=True): the timing's own cost
    (on a software renderer the finish around each draw hands over to the rasterizer
    threads; on a GPU the queries bracket each draw)."""
    from ...engine.builtin import COPY     # the engine's own copy kernel, loaded on use
    a = tdev.array(np.ones((1, 4), np.float32))
    b = tdev.empty((1, 4))
    try:
        best = float("inf")
        for _ in range(3):
            tdev.counter.reset()
            for _ in range(20):
                tdev.run(COPY, b, inputs={"X": a})
            snap = tdev.counter.snapshot()
            ms = sum(v["gpu_ms"] for v in snap.values())
            best = min(best, ms * 1e-3 / 20)
        return best
    finally:
        a.release()
        b.release()
        tdev.counter.reset()


def counted_round(cases: list, tdev, timed: list, counted: list | None = None,
                  calls: int = 3, share: float | None = None) -> list:
    """One round of per-draw timings of ``cases`` on ``tdev`` (a ``timing=True`` device):
    per case [counter snapshot with each kernel's device time, timed empty pass, the rounds'
    readings] (or the exception the case raised), going on from ``counted`` (a previous
    round's result). Over the rounds each kernel's time and the empty pass are their readings
    at :func:`.rounds.rank`, as the whole calls' are (the fastest of each round's ``calls``
    calls). The empty pass is timed beside each case: a software renderer's hand-off to its
    threads (what a timed pass pays beyond its work) moves over seconds. Cases whose
    ``timed`` entry is an exception are not run. ``share``: the rank's share of the rounds
    (:func:`.rounds.rank`; by default ``tdev``'s)."""
    share = rank_share(tdev) if share is None else share
    out = [None] * len(cases) if counted is None else list(counted)
    for i, (case, t) in enumerate(zip(cases, timed)):
        if isinstance(out[i], Exception):
            continue
        try:
            if isinstance(t, Exception):
                raise t
            floor = _timed_floor(tdev)
            snap = MC.count_warm(case, tdev, rounds=calls)
        except Exception as e:  # noqa: BLE001 - kernel_efficiencies says so
            out[i] = e
            continue
        if out[i] is None:
            out[i] = [snap, floor, {"floor": [], "ms": {}}]
        best, _, seen = out[i]
        seen["floor"].append(floor)
        for label, s in snap.items():
            for name, k in (s.get("kernels") or {}).items():
                b = best.get(label, {}).get("kernels", {}).get(name)
                if b is None:
                    continue
                ms = seen["ms"].setdefault((label, name), [])
                ms.append(k["gpu_ms"])
                b["gpu_ms"] = sorted(ms)[rank(len(ms), share)]
        out[i][1] = sorted(seen["floor"])[rank(len(seen["floor"]), share)]
    return out


def kernel_efficiencies(dev, speeds: M.Speeds, cases=None, progress=None,
                        timed: list | None = None, counted: list | None = None) -> dict:
    """({kernel name: [[fragments per pass, efficiency], ...]}, the raw samples, {kernel name:
    [[fragments per pass, floor factor], ...]}) measured on the calibration cases (see the
    module docstring; the model interpolates between sizes). ``timed``: the cases' whole-call
    times (:func:`.model_cases.timed_rounds`, one entry per case), else measured here;
    ``counted``: their per-draw timings (:func:`counted_round`), else measured here."""
    from ...engine.device import Device
    cases = calibration_cases(dev.is_software) if cases is None else cases
    if timed is None:
        timed = MC.timed_rounds(cases, dev)
    seen: dict[str, list] = {}
    dominant: dict[str, list] = {}
    floor_seen: dict[str, list] = {}
    latency: dict[str, list] = {}
    shortest = MIN_TIMED_PASS_SOFTWARE_S if dev.is_software else MIN_TIMED_PASS_S
    if counted is None:
        tdev = Device(timing=True)
        try:
            counted = counted_round(cases, tdev, timed, calls=5 if dev.is_software else 3)
        finally:
            tdev.release()
    for case, t, c in zip(cases, timed, counted):
        try:
            if isinstance(t, Exception):
                raise t
            if isinstance(c, Exception):
                raise c
            snap, floor = c[:2]
        except Exception as e:  # noqa: BLE001 - a case this device refuses: say so, go on
            if progress:
                progress(f"{case.algo} {case.label}: skipped ({type(e).__name__}: {e})")
            continue
        top = _dominant_sample(dev, case, speeds, t)
        if top is not None:
            (dominant if top[1] == "work" else floor_seen).setdefault(
                top[0], []).append(list(top[2:]))
        elif not dev.is_software:
            for name, frags, factor in _latency_sample(speeds, t) or ():
                latency.setdefault(name, []).append([frags, factor])
        for label, s in snap.items():
            for name, k in (s.get("kernels") or {}).items():
                if top is not None and name == top[0]:
                    continue
                work = work_time(speeds, name, k)
                n = k.get("passes", 0)
                raw = k.get("gpu_ms", 0.0) * 1e-3
                gpu = raw - n * floor
                # passes whose timed cost is mostly the timing's own (a timed empty pass)
                # or the device's per-pass floor say nothing about the kernel's work
                # and passes whose modelled work is under the timing's own cost are
                # latency: an efficiency (a factor on the work) would not carry to a size
                if work <= 0 or n == 0 or raw < n * max(3 * floor, shortest) or \
                        gpu <= 2 * n * speeds.pass_gpu_us * 1e-6 or work < n * floor:
                    continue
                frags = sum(f * m for f, m, *_ in k.get("draws", ()))
                drawn = sum(m for _, m, *_ in k.get("draws", ())) or 1
                seen.setdefault(name, []).append([frags / drawn, gpu / work])
        if progress:
            progress(f"{case.algo} {case.label}")
    # a kernel measured as the bulk of whole calls keeps those samples only (a per-draw
    # timer query serializes short draws, so its samples read several times the whole-call
    # ones, and a check fitted on both misses)
    seen.update(dominant)
    # a kernel known only from calls of latency-bound passes: what those calls say
    for name, v in latency.items():
        seen.setdefault(name, v)
    eff = {name: _by_size(v) for name, v in seen.items()}
    return eff, seen, {name: _by_size(v) for name, v in floor_seen.items()}


def _dominant_sample(dev, case, speeds: M.Speeds, timed: tuple, share: float = 0.6,
                     rest_speeds: M.Speeds | None = None):
    """(kernel, "work" or "floor", fragments per pass, factor) for the kernel taking at least
    ``share`` of a call's predicted device time (efficiency 1), from the device time of whole
    calls (one timer query around each, the fastest of 3 after a warm-up: no per-draw query
    serializes its draws; on a software renderer the wall time of whole calls, less the
    predicted rest of the call): what the other kernels and the per-pass terms do not take, over
    the kernel's work (its efficiency) or, where its per-pass floor is what the model gives it
    (passes accumulating one after another), over that floor; None without such a kernel. On
    a GPU also None for a call that waits for the device more than once (the query spans the
    host's work between the waits) and, for a floor, for a call whose host issues its passes
    no faster than the device drew them (:data:`HOST_BOUND`: the device kept the host's pace).
    ``timed``: the case's (wall, issue, snapshot, device) (:func:`.model_cases.timed_rounds`).
    ``rest_speeds`` (a software renderer, once the calls' costs are fitted): the speeds that
    price the rest of the call, the other kernels' efficiencies and the call's own host work
    included; with them a software renderer's call gives a "work" sample too."""
    sw = dev.is_software
    wall, _, snap, device = timed
    # no timer query sees a software renderer's threads: there the wall time
    best = wall if sw else device
    # a timer query around a call spans the host's work between its waits for the device
    # (readbacks inside the call): those calls' kernels keep their per-draw samples
    if not sw and M.syncs(snap) > 1:
        return None
    sp = M.Speeds(**{**M.asdict_speeds(speeds), "efficiency": {}, "floor_factor": {}})
    times, works, floors = {}, {}, {}
    for s in snap.values():
        for name, k in (s.get("kernels") or {}).items():
            t, terms = M.kernel_device(sp, name, k)
            times[name] = times.get(name, 0.0) + t
            floors[name] = floors.get(name, 0.0) + terms["floor"]
            works[name] = works.get(name, 0.0) + work_time(speeds, name, k)
    total = sum(times.values())
    if not total:
        return None
    name = max(times, key=times.get)
    if times[name] < share * total:
        return None
    others = 0.0
    frags = drawn = 0
    rests = {}
    for lb, s in snap.items():
        k = (s.get("kernels") or {}).get(name)
        # the phase without the kernel: its passes too (else the model prices them as passes
        # of no declared work, at the empty pass's floor each)
        rests[lb] = dict(s, kernels={n: kk for n, kk in (s.get("kernels") or {}).items()
                                     if n != name},
                         passes=s.get("passes", 0) - (k or {}).get("passes", 0))
        if k:
            frags += sum(f * m for f, m, *_ in k.get("draws", ()))
            drawn += sum(m for _, m, *_ in k.get("draws", ()))
    if sw:   # the rest of the call's time: host, transfers, calls and the other kernels
        others = M.total(M.predict(rests, rest_speeds or sp))
    else:    # the rest of the device time
        others = sum(M.predict({"x": dict(r, events={}, paths={})}, sp)["x"]["device_s"]
                     for r in rests.values())
    left = best - others
    if left <= 0:
        return None
    if works[name] >= floors[name]:
        if sw and rest_speeds is None:   # the rest of a call (its Python, calibrated
            return None                   # after this) is in ``left``
        if sw and works[name] < WALL_SHARE * best:
            # the kernel's work a small part of the call: the sample would be mostly what
            # the model misses of the rest
            return None
        return name, "work", frags / max(drawn, 1), left / works[name]
    if not sw and not M.syncs(snap) and \
            sum(q["host_s"] for q in M.predict(snap, sp).values()) >= HOST_BOUND * best:
        # the host issues the passes no faster than the device drew them: the device time
        # measured is the host's pace, not the passes' floor (the time the host took to
        # issue them says nothing here: a device behind it holds the host back)
        return None
    return name, "floor", frags / max(drawn, 1), left / floors[name]


def _latency_sample(speeds: M.Speeds, timed: tuple) -> list | None:
    """[(kernel, fragments per pass, factor), ...] from a GPU call whose every draw is under
    ``saturation_fragments`` (its loops run at their latency, the model's roughest term) and
    whose passes no kernel dominates: one timer query around whole calls, less the device's
    other terms, over the kernels' predicted time, shared by every kernel whose work is above
    its floor. None for a call that waits for the device more than once, one whose host
    issues it no faster than the device drew it (:data:`HOST_BOUND`), or one with larger
    draws. (Small passes overlap on a GPU, so a call of them takes less than the sum of
    their latency terms.)"""
    wall, _, snap, device = timed
    sat = speeds.saturation_fragments
    if not sat or M.syncs(snap) > 1 or not device or device == float("inf"):
        return None
    sp = M.Speeds(**{**M.asdict_speeds(speeds), "efficiency": {}, "floor_factor": {}})
    pred = M.predict(snap, sp)
    if sum(q["host_s"] for q in pred.values()) >= HOST_BOUND * device:
        return None
    kern, out = 0.0, []
    for s in snap.values():
        for name, k in (s.get("kernels") or {}).items():
            draws = k.get("draws", ())
            if not draws or any(d[0] >= sat for d in draws):
                return None
            t, terms = M.kernel_device(sp, name, k)
            kern += t
            if t > terms["floor"]:
                drawn = sum(n for _, n, *_ in draws)
                out.append((name, sum(f * n for f, n, *_ in draws) / drawn))
    rest = sum(q["device_s"] for q in pred.values()) - kern
    if not out or kern <= 0 or device - rest <= 0:
        return None
    factor = (device - rest) / kern
    return [(name, frags, factor) for name, frags in out]


def whole_call_efficiencies(dev, speeds: M.Speeds, cases: list, timed: list,
                            seen: dict) -> dict:
    """A software renderer's efficiencies once the calls' costs are fitted (``speeds``): a
    kernel that takes the bulk of a calibration call's device time is priced by the call's
    wall time, less the rest of the call at ``speeds`` (:func:`_dominant_sample`), instead of
    by its per-draw timings, which a finish around each draw inflates beyond what the draw
    costs inside a call (a short draw timed alone can read more than its whole call).
    ``seen``: the first fit's samples {kernel: [[fragments, efficiency],
    ...]}, updated; returns the efficiencies by size."""
    whole: dict[str, list] = {}
    for case, t in zip(cases, timed):
        if isinstance(t, Exception):
            continue
        top = _dominant_sample(dev, case, speeds, t, rest_speeds=speeds)
        if top is not None and top[1] == "work":
            whole.setdefault(top[0], []).append(list(top[2:]))
    seen.update(whole)
    return {name: _by_size(v) for name, v in seen.items()}


def _by_size(samples: list) -> list:
    """[[fragments per pass, efficiency], ...] sorted by size, the samples of one size (within
    10 %) merged by their median."""
    out = []
    for f, e in sorted(samples):
        if out and f <= out[-1][0] * 1.1:
            out[-1][2].append(e)
        else:
            out.append([f, 0.0, [e]])
    return [[round(f, 1), round(float(statistics.median(es)), 4)] for f, _, es in out]


#: A calibration call's residual (its wall time less the model's prediction) must be at least
#: this share of its wall time to price its unpriced kernels (:func:`residual_efficiencies`).
RESIDUAL_SHARE = 0.05


def _per_draw_excess(counted, name: str) -> float:
    """Seconds kernel ``name``'s timed draws took beyond the timed empty pass, from one case's
    per-draw timings ``counted`` ([snapshot, empty pass seconds])."""
    snap, floor = counted[:2]
    out = 0.0
    for s in snap.values():
        k = (s.get("kernels") or {}).get(name)
        if k:
            out += max(k.get("gpu_ms", 0.0) * 1e-3 - k.get("passes", 0) * floor, 0.0)
    return out


def residual_efficiencies(speeds: M.Speeds, cases: list, timed: list, counted: list,
                          priced) -> dict:
    """{kernel: [[fragments per pass, efficiency]]} for the kernels of the calibration calls
    that ``priced`` (the kernels with a measured efficiency) does not hold, from the calls'
    residuals at ``speeds`` (the calls' costs fitted; module docstring): each call's share (its
    residual, up to what its unpriced kernels' per-draw timings took beyond their modelled
    time) split among those kernels by their modelled time; per kernel, 1 + its shares over its
    modelled time in all the calls it ran in, those with no share included (the fragments
    per pass of its largest). ``timed``: the
    cases' (wall, issue, snapshot, ...) tuples; ``counted``: their per-draw timings
    (:func:`counted_round`). Kernels whose per-pass floor is their modelled
    time are left to it."""
    out: dict[str, list] = {}
    for _, t, c in zip(cases, timed, counted):
        if isinstance(t, Exception) or isinstance(c, Exception) or c is None:
            continue
        wall, _, snap = t[:3]
        unpriced = {}
        for s in snap.values():
            for name, k in (s.get("kernels") or {}).items():
                draws = k.get("draws", ())
                drawn = sum(n for _, n, *_ in draws)
                if name in priced or not drawn:
                    continue
                work = work_time(speeds, name, k)
                if work < M.kernel_device(speeds, name, k)[1]["floor"]:
                    continue      # priced by its per-pass floor: an efficiency does not reach it
                frags = sum(f * n for f, n, *_ in draws) / drawn
                was = unpriced.get(name, (0.0, frags))
                unpriced[name] = (was[0] + work, frags)
        modelled = sum(v[0] for v in unpriced.values())
        if not unpriced or modelled <= 0:
            continue
        residual = wall - M.total(M.predict(snap, speeds))
        share = 0.0
        if residual >= RESIDUAL_SHARE * wall:
            excess = sum(_per_draw_excess(c, name) for name in unpriced) - modelled
            share = max(min(residual, excess), 0.0)
        for name, (m, frags) in unpriced.items():
            # [modelled time, its share of the residual, fragments per pass]: a call that
            # leaves nothing to share counts too, with none
            out.setdefault(name, []).append([m, share * m / modelled, frags])
    # one efficiency per kernel over all its calls: their shares over their modelled time
    # (the largest calls weigh most; per call, a small call's share swung the recursive
    # blur's carry factor between 2.5 and 7.4 from run to run), the calls that left nothing
    # included (counting only the calls that left a residual, a reduction's small passes
    # took the larger of its two calls' residuals about the call cost fitted between them,
    # and a sum 256^2 check swung x0.69-1.23 over 100 fits on recorded calibrations)
    return {name: [[max(pts)[2], 1.0 + sum(q[1] for q in pts) / sum(q[0] for q in pts)]]
            for name, pts in out.items() if sum(q[1] for q in pts) > 0}
