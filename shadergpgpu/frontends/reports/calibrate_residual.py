"""A software renderer's kernels that no timing prices: their share of a call's wall time (a
part of ``shadergpgpu calibrate``, :mod:`.calibrate_kernels`).

A kernel keeps efficiency 1 when its draws are too short to time one by one (a finish around
each draw costs more than the draw) and it is never the bulk of a calibration call. On a
software renderer such kernels can still cost many times their declared work: the recursive
blur's carry and interleave passes (8 textures read or selected per fragment on the CPU's
SIMD lanes) took 9 times their modelled time in its 128 x 128 and 384 x 384 calibration
calls alike, and the 256 x 256 check was under-predicted x1.00-1.45 over ten runs.

:func:`residual_efficiencies` prices them from the calls they run in, once the calls' costs
are fitted: what a call's wall time leaves beyond the rest of the model is shared by its
unpriced kernels, in proportion to their modelled time, but never more than their own per-draw
timings say they took beyond that time (the rest of the residual is the host's or the other
kernels' error, not theirs). A call whose residual is under :data:`RESIDUAL_SHARE` of its wall
time gives no sample: there the residual is noise.
"""
from __future__ import annotations

from ...engine import model as M

#: A calibration call's residual (its wall time less the model's prediction) must be at least
#: this share of its wall time to price its unpriced kernels (:func:`residual_efficiencies`).
RESIDUAL_SHARE = 0.05


def _per_draw_excess(counted, name: str) -> float:
    """Seconds kernel ``name``'s timed draws took beyond the timed empty pass, from one case's
    per-draw timings ``counted`` ([snapshot, empty pass seconds])."""
    snap, floor = counted
    out = 0.0
    for s in snap.values():
        k = (s.get("kernels") or {}).get(name)
        if k:
            out += max(k.get("gpu_ms", 0.0) * 1e-3 - k.get("passes", 0) * floor, 0.0)
    return out


def residual_efficiencies(speeds: M.Speeds, cases: list, timed: list, counted: list,
                          priced) -> dict:
    """{kernel: [[fragments per pass, efficiency], ...]} for the kernels of the calibration
    calls that ``priced`` (the kernels with a measured efficiency) does not hold, from each
    call's residual at ``speeds`` (the calls' costs fitted): the efficiency that gives those
    kernels their modelled time plus a share of the residual, the share being the residual up
    to what their per-draw timings took beyond their modelled time (module docstring); one
    efficiency for all of a call's unpriced kernels. ``timed``: the cases' (wall, issue,
    snapshot, ...) tuples; ``counted``: their per-draw timings
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
        if residual < RESIDUAL_SHARE * wall:
            continue
        excess = sum(_per_draw_excess(c, name) for name in unpriced) - modelled
        share = min(residual, excess)
        if share <= 0:
            continue
        for name, (_, frags) in unpriced.items():
            out.setdefault(name, []).append([frags, 1.0 + share / modelled])
    return out
