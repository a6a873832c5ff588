"""The tiled update's settings and shapes: the variants (:data:`TILE_VARIANTS`,
:func:`set_tile_variant`) and the module settings they set (:data:`TILE_JB`, :data:`TILE_MAX`,
:data:`TILE_S_LANE`, :data:`TILE_UNROLL`, :data:`TILE_INTERLEAVE`, :data:`TILE_ROWS`, the
parts per tile), points per fragment, and the blocked source of the tiled sweep.

This module is the one home of those settings: every reader elsewhere reads
``tiles.NAME`` at call time, so setting them here (or through the package, which forwards
them) changes the fits that start afterwards.
"""
from __future__ import annotations

import numpy as np

from ...engine.limits import ceil_div

#: layout="rows" without the distance cache runs the tiled update (``tile.frag``: several
#: points i per fragment, eight points j per block, distances by |x_i|^2 + |x_j|^2 - 2 x_i.x_j
#: with an exact fallback); False runs the one-point-per-fragment pair kernel (``update.frag``)
#: instead (kept for comparison: ``benchmarks/sammon.py --compare``).
TILE_ROWS = True
#: Named settings of the tiled kernel, for :data:`TILE_DEFAULT`, :func:`set_tile_variant`
#: and ``benchmarks/diag/sammon_variants.py``: k = K points i per fragment (:data:`TILE_MAX`), jb = JB
#: points j per block (:data:`TILE_JB`), s_lane (:data:`TILE_S_LANE`), unroll
#: (:data:`TILE_UNROLL`), il (:data:`TILE_INTERLEAVE`).
TILE_VARIANTS = {
    "k4j16": dict(k=4, jb=16, s_lane=False, unroll=1, il=False),
    "k4j8": dict(k=4, jb=8, s_lane=False, unroll=1, il=False),
    "k4j32": dict(k=4, jb=32, s_lane=False, unroll=1, il=False),
    "k4j16w": dict(k=4, jb=16, s_lane=True, unroll=1, il=False),
    "k4j16i": dict(k=4, jb=16, s_lane=False, unroll=1, il=True),
    "k4j16u2": dict(k=4, jb=16, s_lane=False, unroll=2, il=False),
    "k8j8wi": dict(k=8, jb=8, s_lane=True, unroll=1, il=True),
    "k8j16w": dict(k=8, jb=16, s_lane=True, unroll=1, il=False),
    "k8j16wi": dict(k=8, jb=16, s_lane=True, unroll=1, il=True),
    "k8j16wiu2": dict(k=8, jb=16, s_lane=True, unroll=2, il=True),
}
#: The preset the constants below start from: on the H200 (``benchmarks/diag/sammon_variants.py``, N =
#: 20,000 / 50,000, n = 200) "k8j8wi" ran 0.220 / 1.40 s per iteration against 0.388 / 2.37
#: for "k4j16" (61% / 60% of the ALU bound against 35%); on llvmpipe 0.87x the time of k4j16.
TILE_DEFAULT = "k8j8wi"
_TD = TILE_VARIANTS[TILE_DEFAULT]
#: Points j per block of the tiled sweep (the tile.frag JB define: 8, 16 or 32).
TILE_JB = _TD["jb"]
#: Most points i one tiled fragment owns (K); fewer where the device has fewer render targets
#: (K targets of g plus one of s, or K targets with :data:`TILE_S_LANE`). 4, or 8 with
#: TILE_S_LANE (the S target's four lanes hold at most 4 points).
TILE_MAX = _TD["k"]
#: Put a point's stress terms s in the w lane of its g target (free when the positions have
#: at most 3 coordinates; 4-D positions keep the separate S target): K targets instead of
#: K + 1, so 8 render targets hold K = 8 points (each fetched texel of a point j then serves
#: 8 pairs instead of 4).
TILE_S_LANE = _TD["s_lane"]
#: Coordinate texels per step of the tiled kernel's coordinate loop (the UNROLL define: 1 or
#: 2; with 2 the blocked source pads each point to an even number of texels, with zeros).
TILE_UNROLL = _TD["unroll"]
#: Interleave the JB points of each block in the blocked source (the IL define): a block, and
#: a tile of K points i, is addressed from one base texel (no per-point base registers: K = 8
#: and JB = 16 hold 128 accumulators). Used where K divides JB and JB points' texels fit one
#: texture row.
TILE_INTERLEAVE = _TD["il"]
#: The j range of a tile is cut into parts swept by separate fragments (summed by FINISH) so
#: that a pass has about this many fragments (a GPU needs ~10^5 to hide its fetch latency;
#: N / 4 tiles alone are 5,000 at N = 20,000), at most TILE_PARTS_MAX parts.
TILE_FRAGMENTS = 1 << 18
TILE_PARTS_MAX = 64


def set_tile_variant(name: str) -> dict:
    """Set :data:`TILE_MAX`, :data:`TILE_JB`, :data:`TILE_S_LANE`, :data:`TILE_UNROLL` and
    :data:`TILE_INTERLEAVE` from :data:`TILE_VARIANTS` ``[name]`` (for fits that start
    afterwards); returns the settings."""
    global TILE_MAX, TILE_JB, TILE_S_LANE, TILE_UNROLL, TILE_INTERLEAVE
    if name not in TILE_VARIANTS:
        raise ValueError(f"unknown tile variant {name!r}; one of {sorted(TILE_VARIANTS)}")
    v = TILE_VARIANTS[name]
    TILE_MAX, TILE_JB, TILE_S_LANE = v["k"], v["jb"], v["s_lane"]
    TILE_UNROLL, TILE_INTERLEAVE = v["unroll"], v["il"]
    return dict(v)


def tile_variant_name() -> str | None:
    """The name of the current tile settings in :data:`TILE_VARIANTS` (None: no preset)."""
    now = dict(k=TILE_MAX, jb=TILE_JB, s_lane=bool(TILE_S_LANE), unroll=TILE_UNROLL,
               il=bool(TILE_INTERLEAVE))
    return next((k for k, v in TILE_VARIANTS.items() if v == now), None)


def tile_s_lane(n_components: int | None = None) -> bool:
    """Whether the tiled update puts s in g's w lane (:data:`TILE_S_LANE`, positions of at
    most 3 coordinates; None: assume so)."""
    return bool(TILE_S_LANE) and (n_components is None or int(n_components) <= 3)


def tile_points(max_outputs: int, s_lane: bool | None = None) -> int:
    """Points i per fragment of the tiled update on a device with ``max_outputs`` targets:
    K + 1 targets (K <= 4) with the separate S target; with s in g's w lane (``s_lane``; None:
    :func:`tile_s_lane`) K targets, K a power of two (1, 2, 4, 8)."""
    if tile_s_lane() if s_lane is None else s_lane:
        k = max(1, min(TILE_MAX, 8, int(max_outputs)))
        return 1 << (k.bit_length() - 1)
    return max(1, min(TILE_MAX, 4, int(max_outputs) - 1))



def tile_parts(n_points: int, k_pts: int, chunks, jb=None) -> int:
    """Parts of the j range per tile (``n_part``): about :data:`TILE_FRAGMENTS` fragments in
    all, at most :data:`TILE_PARTS_MAX`, and at most the blocks of the longest chunk."""
    jb = int(jb or TILE_JB)
    nf = ceil_div(n_points, k_pts)
    blocks = max(ceil_div(nb, jb) for _, nb in chunks)
    return max(1, min(TILE_PARTS_MAX, blocks, ceil_div(TILE_FRAGMENTS, nf)))


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

