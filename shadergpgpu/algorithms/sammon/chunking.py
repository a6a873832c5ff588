"""The j sweep cut into chunk passes, and the host waits between them: sweep units and their
alignment, :func:`sweep_chunks` (each pass under :data:`PASS_WORK`), :func:`chunk_work` and
:func:`host_waits` (at most :data:`SYNC_WORK` queued between two ``dev.finish()``).

This module is the one home of :data:`PASS_WORK`, :data:`SYNC_WORK` and :data:`AUTO_POINTS`
(read here at call time)."""
from __future__ import annotations

from ...engine.limits import ceil_div
from . import tiles

#: Most work one pass may run, in pair-texel fetches (fragments x pairs x texels fetched per
#: pair, four pairs sharing a fetch where they do). On the H200 through EGL, passes of 4 s
#: (N = 100,000 in 4 chunks) came back with wrong sums while passes of ~1.3 s (6e9 units, 21
#: chunks) were verified against float64 rows; this keeps N > 100,000 there.
PASS_WORK = 6_000_000_000
#: Most work (same units) queued between two host waits (``dev.finish()``): a chain of chunk
#: passes waits after a pass when the next one would take the queue past this. On the H200
#: through EGL, the setup's 21 row-sum passes of N = 100,000, n = 200 (~28 s of GPU work
#: queued with no wait; ~1.3 s per pass) came back as zeros with no GL error, while chains of
#: ~10 s (60,000 x 200, 100,000 x 64: 7-8 passes) and the first session's 21 passes of that
#: size, each followed by a wait (timer queries), were right; ``benchmarks/diag/sammon_rowsum.py`` checks
#: both ways on the GPU. None: never wait (the old behaviour).
SYNC_WORK: int | None = PASS_WORK
#: The "auto" split keeps about this many points j per pass at most.
AUTO_POINTS = 8192


def sweep_units(n_points: int, source: str) -> int:
    """Length of the j sweep (the kernels' split range): points for "rows" (visited four at a
    time, cuts at multiples of 4) and "tiled" (eight at a time), packed columns of four points
    otherwise."""
    return int(n_points) if source in ("rows", "tiled") else ceil_div(n_points, 4)


def sweep_align(source: str, jb=None) -> int:
    return {"rows": 4, "tiled": int(jb or tiles.TILE_JB)}.get(source, 1)



def sweep_chunks(n_points: int, n_features: int, source: str, split="auto", jb=None) -> list:
    """Chunks ``(blk0, n_blk)`` of the j sweep (in :func:`sweep_units`), one prepared pass each
    (the engine may cut a chunk further for the loop cap): enough that one pass stays under
    :data:`PASS_WORK`, at least ``split`` (an int), or for "auto" about :data:`AUTO_POINTS`
    points a pass at most.

    source: "rows", "columns" or "cached".
    """
    units = sweep_units(n_points, source)
    align = sweep_align(source, jb)
    groups = ceil_div(units, align)
    # pair-texel fetches of one full sweep: N fragments x N points x fetches per pair
    texels = {"rows": ceil_div(n_features, 4), "tiled": ceil_div(n_features, 4),
              "columns": int(n_features), "cached": 1}[source]
    k = ceil_div(n_points * n_points * texels, 4 * PASS_WORK)
    if split == "auto":
        k = max(k, ceil_div(n_points, AUTO_POINTS))
    else:
        k = max(k, int(split))
    k = max(1, min(k, groups))
    bounds = [align * ((groups * t) // k) for t in range(k + 1)]
    bounds[-1] = units
    return [(a, b - a) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def chunk_work(n_points: int, n_features: int, source: str, n_units: int) -> int:
    """Work of one chunk pass of ``n_units`` sweep units, in :data:`PASS_WORK` units
    (pair-texel fetches: N fragments x the chunk's points x texels per pair / 4)."""
    texels = {"rows": ceil_div(n_features, 4), "tiled": ceil_div(n_features, 4),
              "columns": int(n_features), "cached": 1}[source]
    points = int(n_units) if source in ("rows", "tiled") else 4 * int(n_units)
    return int(n_points) * points * texels // 4


def host_waits(works, limit=None) -> list:
    """Per pass of a chain with these works: whether the host waits for the GPU after it, so
    that at most ``limit`` (default :data:`SYNC_WORK`; None: no waits) is queued at a time
    (a single pass larger than the limit is queued alone). The last pass never waits here
    (a readback follows it)."""
    limit = SYNC_WORK if limit is None else limit
    works = [int(w) for w in works]
    out, queued = [], 0
    for k, w in enumerate(works):
        queued += w
        wait = limit is not None and k + 1 < len(works) and queued + works[k + 1] > limit
        out.append(bool(wait))
        if wait:
            queued = 0
    return out

