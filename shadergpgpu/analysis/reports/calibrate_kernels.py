"""The second half of ``shadergpgpu calibrate``: what the engine's probes cannot measure.

* **Per-kernel efficiency.** Each algorithm runs its calibration configurations
  (:mod:`.calibrate_cases`: sizes that the model's checks in ``benchmarks/model.py`` do NOT
  use, so the model is judged on configurations it was not fitted to) on a device with
  ``timing=True``; for every kernel, the device time its draws took against the time its
  declared work takes at the calibrated rates (with the occupancy of its passes) is its
  efficiency: register pressure of the tiled products, the recursive filters' serial loops,
  integer work. Kernels whose passes are too short to tell (their device time within twice the
  per-pass floor) keep 1, except on a software renderer, where they take a share of their
  calls' unexplained time (:mod:`.calibrate_residual`).
* **The one-liners' call cost** and **each algorithm's call cost** (``api:<algorithm>``):
  :mod:`.calibrate_calls`.
* **Rounds** (:func:`calibrate_and_time`): the engine's probes, the calibration cases and the
  checks the model is judged on, interleaved; each measurement keeps the reading at the
  same rank of its rounds (:func:`.rounds.rank`; the engine's: :func:`ranked_engine`).

All are written into the device's measured profile (``speeds.efficiency``,
``speeds.host_us``).
"""
from __future__ import annotations

import statistics

import numpy as np

from .. import calibration as C
from .. import model as M
from .calibrate_calls import call_cost_us, call_costs
from .calibrate_cases import calibration_cases  # noqa: F401 - the cases live there
from .calibrate_residual import residual_efficiencies


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


def _work_time(speeds: M.Speeds, name: str, k: dict) -> float:
    """The device time the model gives a kernel's draws with efficiency 1 and no floor."""
    sp = M.Speeds(**{**M.asdict_speeds(speeds), "efficiency": {}, "pass_gpu_us": 0.0,
                     "pass_gpu_us_per_kfragment": 0.0, "pass_gpu_us_per_tile": 0.0})
    return M.kernel_device(sp, name, k)[0]


def _timed_floor(tdev) -> float:
    """Seconds a timed empty pass takes on ``tdev`` (timing=True): the timing's own cost
    (on a software renderer the finish around each draw hands over to the rasterizer
    threads; on a GPU the queries bracket each draw)."""
    from ...engine.builtin import COPY
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
    from .model_cases import count_warm
    from .rounds import rank, rank_share
    share = rank_share(tdev) if share is None else share
    out = [None] * len(cases) if counted is None else list(counted)
    for i, (case, t) in enumerate(zip(cases, timed)):
        if isinstance(out[i], Exception):
            continue
        try:
            if isinstance(t, Exception):
                raise t
            floor = _timed_floor(tdev)
            snap = count_warm(case, tdev, rounds=calls)
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
    from .model_cases import timed_rounds
    cases = calibration_cases(dev.is_software) if cases is None else cases
    if timed is None:
        timed = timed_rounds(cases, dev)
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
                work = _work_time(speeds, name, k)
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
            works[name] = works.get(name, 0.0) + _work_time(speeds, name, k)
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


def ranked_engine(readings: list, share: float) -> dict:
    """The first of ``readings`` (the speeds of one engine calibration per round) with each
    host cost and the pass overhead at :func:`.rounds.rank` of its rounds counted from the
    lowest, each rate (ALU, fetches, writes, transfers) counted from the highest: the round
    each reading keeps at the rank the cases and checks keep theirs (``share``; the fastest
    on a GPU). A software renderer's wait reads fast only in rare rounds, and the checks meet
    the slower state, so a reading from the rare fast round would predict them too fast."""
    from .rounds import rank
    speeds = readings[0]
    host = speeds["host_us"]

    def at(values, highest=False):
        values = sorted(values, reverse=highest)
        return values[rank(len(values), share)]
    for k in {k for r in readings for k in r["host_us"]}:
        host[k] = at([r["host_us"][k] for r in readings if k in r["host_us"]])
    speeds["pass_overhead_us"] = at([r["pass_overhead_us"] for r in readings])
    for k in RATES:
        got = [r[k] for r in readings if k in r]
        if got:
            speeds[k] = at(got, highest=True)
    return speeds


#: The engine calibration's rates that :func:`ranked_engine` counts from the highest.
RATES = ("alu_gflops", "texel_rate_gtexels", "buffer_texel_rate_gtexels", "write_gbs",
         "upload_gbs", "readback_gbs")


#: Rounds of a calibration (:func:`calibrate_and_time`) on a software renderer and on a GPU.
#: A software renderer's machine changes speed for seconds at a time (a hypervisor takes a
#: varying share of the CPU, and one call's fastest of a round moves by up to 2x from round
#: to round); a GPU's small calls move between two states within a lease, and its host's
#: speed moves too. Each measurement is taken over rounds spread across the whole run, at
#: :func:`.rounds.rank` of them: on a software renderer eight, the third fastest kept; on a
#: GPU five, the fastest kept (three rounds are too few for a GPU's host to show its fast
#: state in every case; docs/model.md describes the checks).
SOFTWARE_ROUNDS = 8
GPU_ROUNDS = 5


def calibration_rounds(dev, quick: bool = False) -> int:
    """Rounds of :func:`calibrate_and_time`: 1 when ``quick``, else :data:`SOFTWARE_ROUNDS`
    or :data:`GPU_ROUNDS`."""
    if quick:
        return 1
    return SOFTWARE_ROUNDS if dev.is_software else GPU_ROUNDS


def calibrate_all(dev, quick: bool = False, save: bool = True, progress=None) -> dict:
    """The engine's calibration, then the kernels' efficiencies and the call cost: the
    complete measured profile (saved in the cache folder when ``save``)."""
    return calibrate_and_time(dev, (), quick=quick, save=save, progress=progress)[0]


def calibrate_and_time(dev, checks=(), quick: bool = False, save: bool = True,
                       progress=None, rounds: int | None = None) -> tuple[dict, list]:
    """(the complete measured profile, :func:`.model_cases.timed_rounds` of ``checks``): the
    calibration and the timing of the cases it will be judged on, interleaved. Each round
    runs the engine's probes, times every calibration case once and every check once (each
    algorithm's checks right after its calibration cases, :func:`.rounds.beside`, each round
    starting at the next algorithm), then the cases' per-draw timings; each
    keeps its reading at :func:`.rounds.rank` of the rounds (:func:`calibration_rounds`: the
    fastest of a GPU's five, the third fastest of a software renderer's eight; per-draw
    timings alike, :func:`counted_round`), so that both sides see the same spells
    of a loaded machine or a GPU's state (a process's first seconds can also run its host
    paths at half speed). Then the kernels' efficiencies and the calls' costs are fitted
    on those times."""
    from ...engine.device import Device
    from .model_cases import timed_rounds
    from .rounds import beside, rank_share, rounds_estimate, split_round
    rounds = calibration_rounds(dev, quick) if rounds is None else max(1, int(rounds))
    cases = calibration_cases(dev.is_software)
    if quick:                       # the first configuration of each algorithm only
        firsts = {}
        for c in cases:
            firsts.setdefault(c.algo, c)
        cases = list(firsts.values())
    checks = list(checks)
    prof = counted = None
    history, check_history = [], []          # each round's times of the cases, the checks
    engine = []                              # each round's engine calibration
    tdev = Device(timing=True)          # the per-draw timings, in the rounds too
    try:
        for r in range(rounds):
            got = C.calibrate(dev, quick=quick, save=False)
            prof = prof or got
            engine.append(got["speeds"])
            # each algorithm's checks beside its cases (rounds.beside)
            order = beside(cases, checks, r)
            got = timed_rounds([(checks if s else cases)[i] for s, i in order], dev, 1)
            mine, theirs = split_round(order, got, (len(cases), len(checks)))
            history.append(mine)
            if checks:
                check_history.append(theirs)
            counted = counted_round(cases, tdev, history[-1], counted,
                                    calls=1 if rounds > 1 else 3, share=rank_share(dev))
            if progress:
                progress(f"calibration round {r + 1} of {rounds}")
    finally:
        tdev.release()
    ranked_engine(engine, rank_share(dev))
    timed = rounds_estimate(history, rank_share(dev))
    timed_checks = rounds_estimate(check_history, rank_share(dev))
    sp = prof["speeds"]
    sp.pop("efficiency", None)
    speeds = M.Speeds.from_dict(sp, prof["description"])
    host = sp["host_us"]
    # the one-liner writes a given output: its Device.run and draw are priced apart
    host["call"] = max(call_cost_us(dev) - host.get("run", 0.0) - host.get("draw", 0.0), 0.0)
    eff, seen, floors = kernel_efficiencies(dev, speeds, cases, progress=progress, timed=timed,
                                            counted=counted)
    sp["efficiency"] = eff
    sp["floor_factor"] = floors
    speeds = M.Speeds.from_dict(sp, prof["description"])
    api, api_seen = call_costs(dev, speeds, cases, progress=progress, timed=timed)
    host.update(api)
    if dev.is_software:
        now = M.Speeds.from_dict(sp, prof["description"])
        seen.update(residual_efficiencies(now, cases, timed, counted, seen))
        sp["efficiency"] = whole_call_efficiencies(dev, now, cases, timed, seen)
    prof["call_samples_us"] = {k: [[round(q[0], 1), round(q[1], 2)]
                                    + ([round(q[2], 1)] if q[2] else []) for q in v]
                                for k, v in api_seen.items()}
    prof["efficiency_samples"] = {k: [[round(f, 1), round(x, 4)] for f, x in v]
                                  for k, v in seen.items()}
    prof["calibration_cases"] = [f"{c.algo} {c.label}" for c in cases]
    prof["calibration_rounds"] = rounds
    if save:
        prof["path"] = C.save_profile(prof)
    return prof, (timed_checks or [])
