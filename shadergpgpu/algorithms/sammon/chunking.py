"""The j sweep cut into chunk passes, and the host waits between them: sweep units and their
alignment, :func:`sweep_chunks` (each pass under ``SammonTuning.pass_work``), :func:`chunk_work`
and :func:`host_waits` (at most ``SammonTuning.sync_work`` queued between two
``dev.finish()``). The bounds are a :class:`~.tuning.SammonTuning` (the device's, read when a
fit starts; the defaults where none is given)."""
from __future__ import annotations

from ...engine.limits import ceil_div
from .tuning import SammonTuning

_DEFAULT = SammonTuning()


def sweep_units(n_points: int, source: str) -> int:
    """Length of the j sweep (the kernels' split range): points for "rows" (visited four at a
    time, cuts at multiples of 4) and "tiled" (eight at a time), packed columns of four points
    otherwise."""
    return int(n_points) if source in ("rows", "tiled") else ceil_div(n_points, 4)


def sweep_align(source: str, jb=None) -> int:
    return {"rows": 4, "tiled": int(jb or _DEFAULT.tile_jb)}.get(source, 1)



def sweep_chunks(n_points: int, n_features: int, source: str, split="auto", jb=None,
                 tuning: SammonTuning | None = None) -> list:
    """Chunks ``(blk0, n_blk)`` of the j sweep (in :func:`sweep_units`), one prepared pass each
    (the engine may cut a chunk further for the loop cap): enough that one pass stays under
    ``tuning.pass_work``, at least ``split`` (an int), or for "auto" about
    ``tuning.auto_points`` points a pass at most.

    source: "rows", "columns" or "cached".
    """
    t = tuning or _DEFAULT
    units = sweep_units(n_points, source)
    align = sweep_align(source, jb or t.tile_jb)
    groups = ceil_div(units, align)
    # pair-texel fetches of one full sweep: N fragments x N points x fetches per pair
    texels = {"rows": ceil_div(n_features, 4), "tiled": ceil_div(n_features, 4),
              "columns": int(n_features), "cached": 1}[source]
    k = ceil_div(n_points * n_points * texels, 4 * t.pass_work)
    if split == "auto":
        k = max(k, ceil_div(n_points, t.auto_points))
    else:
        k = max(k, int(split))
    k = max(1, min(k, groups))
    bounds = [align * ((groups * t) // k) for t in range(k + 1)]
    bounds[-1] = units
    return [(a, b - a) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def chunk_work(n_points: int, n_features: int, source: str, n_units: int) -> int:
    """Work of one chunk pass of ``n_units`` sweep units, in ``SammonTuning.pass_work`` units
    (pair-texel fetches: N fragments x the chunk's points x texels per pair / 4)."""
    texels = {"rows": ceil_div(n_features, 4), "tiled": ceil_div(n_features, 4),
              "columns": int(n_features), "cached": 1}[source]
    points = int(n_units) if source in ("rows", "tiled") else 4 * int(n_units)
    return int(n_points) * points * texels // 4


def host_waits(works, limit=_DEFAULT.sync_work) -> list:
    """Per pass of a chain with these works: whether the host waits for the GPU after it, so
    that at most ``limit`` (``SammonTuning.sync_work``, default its default; None: no waits)
    is queued at a time
    (a single pass larger than the limit is queued alone). The last pass never waits here
    (a readback follows it)."""
    works = [int(w) for w in works]
    out, queued = [], 0
    for k, w in enumerate(works):
        queued += w
        wait = limit is not None and k + 1 < len(works) and queued + works[k + 1] > limit
        out.append(bool(wait))
        if wait:
            queued = 0
    return out

