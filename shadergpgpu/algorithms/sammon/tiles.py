"""The tiled update's shapes: points per fragment (:func:`tile_points`, :func:`tile_s_lane`),
parts per tile (:func:`tile_parts`) and the blocked source of the tiled sweep. The settings
they follow are a :class:`~.tuning.SammonTuning` (the device's, read when a fit starts; the
defaults where none is given).
"""
from __future__ import annotations

import numpy as np

from ...engine.limits import ceil_div
from .tuning import SammonTuning

_DEFAULT = SammonTuning()


def tile_s_lane(n_components: int | None = None, tuning: SammonTuning | None = None) -> bool:
    """Whether the tiled update puts s in g's w lane (``tuning.tile_s_lane``, positions of at
    most 3 coordinates; None: assume so)."""
    t = tuning or _DEFAULT
    return bool(t.tile_s_lane) and (n_components is None or int(n_components) <= 3)


def tile_points(max_outputs: int, s_lane: bool | None = None,
                tuning: SammonTuning | None = None) -> int:
    """Points i per fragment of the tiled update on a device with ``max_outputs`` targets, at
    most ``tuning.tile_max``: K + 1 targets (K <= 4) with the separate S target; with s in g's
    w lane (``s_lane``; None: :func:`tile_s_lane`) K targets, K a power of two (1, 2, 4, 8)."""
    t = tuning or _DEFAULT
    if tile_s_lane(None, t) if s_lane is None else s_lane:
        k = max(1, min(t.tile_max, 8, int(max_outputs)))
        return 1 << (k.bit_length() - 1)
    return max(1, min(t.tile_max, 4, int(max_outputs) - 1))



def tile_parts(n_points: int, k_pts: int, chunks, jb=None,
               tuning: SammonTuning | None = None) -> int:
    """Parts of the j range per tile (``n_part``): about ``tuning.tile_fragments`` fragments in
    all, at most ``tuning.tile_parts_max``, and at most the blocks of the longest chunk."""
    t = tuning or _DEFAULT
    jb = int(jb or t.tile_jb)
    nf = ceil_div(n_points, k_pts)
    blocks = max(ceil_div(nb, jb) for _, nb in chunks)
    return max(1, min(t.tile_parts_max, blocks, ceil_div(t.tile_fragments, nf)))


def blocked_shape(n: int, d: int, max_size: int, unroll: int = 1, group: int = 1):
    """(texture rows, points per row, texels per point) of :func:`blocked_source` for N = ``n``
    points of ``d`` coordinates, from the shape alone (its array is rows x 4 x points per row
    x texels per point floats). ValueError where one group of points' texels does not fit one
    row of ``max_size`` texels."""
    g = int(group)
    pt = ceil_div(ceil_div(int(d), 4), int(unroll)) * int(unroll)
    if g < 1 or g & (g - 1) or g * pt > max_size:
        raise ValueError(f"group {g}: a power of two whose points' texels fit one row")
    b = g
    while ceil_div(n, b) > max_size and 2 * b * pt <= max_size:
        b *= 2
    return ceil_div(int(n), b), b, pt


def blocked_source(X: np.ndarray, max_size: int, unroll: int = 1, group: int = 1):
    """X (N x n, float32) blocked for the tiled sweep: rows of ``pts_row`` points, each point
    ``pt_texels`` = ceil(n / 4) texels rounded up to a multiple of ``unroll`` (zero-padded
    coordinates: distances unchanged), with pts_row the smallest power of two (a multiple of
    ``group``, a power of two) that keeps the texture within ``max_size`` on both axes (no
    wrap). ``group`` = 1: a point's texels are consecutive; > 1: the points of each group of
    ``group`` are interleaved (texel t of the group's point B at t * group + B of the group's
    run of group * pt_texels texels; tile.frag's IL). Points past N are zeros.
    Returns (array, pts_row, pt_texels)."""
    n, d = X.shape
    rows, b, pt = blocked_shape(n, d, max_size, unroll, group)
    g = int(group)
    out = np.zeros((rows * b, 4 * pt), dtype=np.float32)
    out[:n, :d] = X
    if g > 1:   # (groups, point, texel, lane) -> (groups, texel, point, lane)
        out = out.reshape(rows * b // g, g, pt, 4).transpose(0, 2, 1, 3)
    return np.ascontiguousarray(out).reshape(rows, b * 4 * pt), b, pt

