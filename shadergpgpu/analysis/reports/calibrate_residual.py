"""A software renderer's kernels that no timing prices: their share of a call's wall time (a
part of ``shadergpgpu calibrate``, :mod:`.calibrate_kernels`).

A kernel keeps efficiency 1 when its draws are too short to time one by one (a finish around
each draw costs more than the draw) and it is never the bulk of a calibration call. On a
software renderer such kernels can still cost many times their declared work (the recursive
blur's carry and interleave passes, at every image size), and a check that runs them is then
under-predicted.

:func:`residual_efficiencies` prices them from the calls they run in, once the calls' costs
are fitted: what a call's wall time leaves beyond the rest of the model is shared by its
unpriced kernels, in proportion to their modelled time, but never more than their own per-draw
timings say they took beyond that time (the rest of the residual is the host's or the other
kernels' error, not theirs). A call whose residual is under :data:`RESIDUAL_SHARE` of its wall
time gives nothing: there the residual is noise. Each kernel gets one efficiency from all the
calls it ran in, those that gave nothing included: its shares over its modelled time.
"""
from __future__ import annotations

from .. import model as M

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
    (:func:`.calibrate_kernels.counted_round`). Kernels whose per-pass floor is their modelled
    time are left to it."""
    from .calibrate_kernels import _work_time
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
                work = _work_time(speeds, name, k)
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
