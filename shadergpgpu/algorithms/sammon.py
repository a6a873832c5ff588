"""Sammon mapping by gradient descent, one gather pass per iteration.

Source 003 (Borisov and Myasnikov) maps N points from n to m dimensions by minimising the
Sammon stress (eq. 1)

    E = 1 / sum_{i<j} dn_ij * sum_{i<j} (dn_ij - dm_ij)^2 / dn_ij

(dn: distances in the source space, dm: in the target space) with the gradient step (eq. 3)

    y_i(t+1) = y_i(t) + mu * sum_{j != i} (dn_ij - dm_ij) / (dn_ij dm_ij) * (y_i(t) - y_j(t)),
    mu = 2 lambda / sum_{i != j} dn_ij                                             (eq. 4)

How it runs on the engine
-------------------------
* Textures: the source points ``X`` (N x n, four coordinates per RGBA texel), the positions
  ``prev`` and ``next`` (N x m, m <= 4: one texel per point), the direction ``G`` and the
  per-point stress terms ``S``. Positions, ``G`` and ``S`` share one texture shape: a near-square
  wrap of N texels (a 1 x N strip would leave half of every 2 x 2 fragment quad idle).
* Kernels are declared once below (:data:`UPDATE` and :data:`ROWSUM`, one per source,
  :data:`DIST`, :data:`SQNORM`; the step is :data:`shadergpgpu.engine.builtin.SAXPY`). Sizes
  reach the shaders as uniforms, so a fit of any N and n compiles the same few programs.
* The tiled update (``layout="rows"``, distances recomputed; ``shaders/algorithms/sammon/
  tile.frag``, :data:`TILE`): a fragment owns K points i and one of ``n_part`` parts of the
  j range, and sweeps the points j in blocks of JB (:data:`TILE_JB`). The default
  (:data:`TILE_DEFAULT` "k8j8wi") has K = 8, their s in the w lane of their 8 g targets
  (positions of at most 3 coordinates), JB = 8 and the block's points interleaved; else K = 4
  (K targets for g, one for s in four lanes; K = max_outputs - 1 on devices with fewer render
  targets). Per texel of coordinates it fetches the K texels of its points i and the
  JB texels of the block and forms K x JB dot products, so a fetched texel serves K or JB pairs
  (a register tile, as in SGEMM). dn^2 = |x_i|^2 + |x_j|^2 - 2 x_i.x_j (one multiply-add per
  coordinate and pair; X is centred on the host and its squared norms uploaded); a block where
  some real pair has dn^2 <= (|x_i|^2 + |x_j|^2) / 4 (where the subtraction could cancel: near
  or duplicate points) is recomputed exactly as sum (x_j - x_i)^2, so duplicates give dn = 0
  exactly and the distances keep float32 accuracy. X is stored blocked by points
  (:func:`blocked_source`) so it does not wrap and a point's texels are consecutive. The parts
  (about :data:`TILE_FRAGMENTS` fragments per pass, so a GPU has work for every core at
  N = 20,000) are summed by the finishing pass (``finish.frag``, :data:`FINISH`), which writes
  ``next_i = prev_i + mu * g_i`` (eq. 3), ``g_i`` and ``s_i`` one texel per point.
  The kernel is fetch-bound on GPUs (K + JB texels fetched per K x JB pairs and coordinate
  texel); variants (:data:`TILE_VARIANTS`, :func:`set_tile_variant`): K = 4 or 8 (s in the
  w lane: :data:`TILE_S_LANE`), JB = 8 / 16 / 32, the coordinate loop unrolled by 2
  (:data:`TILE_UNROLL`), the block's points interleaved in the blocked source (one base texel
  per block, :data:`TILE_INTERLEAVE`). ``benchmarks/diag/sammon_variants.py`` times them.
* The pair update (``layout="columns"``, the cached distances, or :data:`TILE_ROWS` off;
  ``shaders/algorithms/sammon/update.frag``): fragment i owns point i, loops over every j,
  recomputes (or fetches) dn_ij, and writes three targets at once: ``next_i``, ``g_i``, ``s_i``.
* Then ``prev`` and ``next`` swap (ping-pong, :meth:`Pass.bind`), and the stress of ``prev`` is
  ``sum_i s_i / sum dn`` by the device sum reduction of :mod:`shadergpgpu.ops.reduce`: one
  float comes back per iteration.
* Device profiles (``Device(profile=...)``): every accumulating pass uses
  ``accumulate="add"``, i.e. hardware blending, or the engine's ping-pong passes (1 + 2 per
  output) where the device has no float32 blending; loops are cut within ``dev.loop_cap``
  (255 on the GeForce 7800 GTX); arrays wrap at the profile's texture size; a pass writes at
  most ``dev.max_outputs`` targets (the tile shrinks to K = max_outputs - 1 points). The
  plan takes the same limits (:func:`plan_params`), so plan == counter under every profile.
* Source layouts (``layout=``): ``"rows"`` stores X row-major (``order="row"``, a texel holds
  four coordinates of one point; the sweep visits four consecutive points at a time, so the
  fetch of point i is shared by four pairs) and ``"columns"``
  column-major (``order="col"``, a texel holds one coordinate of four consecutive points, so
  one fetch serves four pairs and neighbouring fragments read the same texel).
* Cached distances (``cache=``): the constant dn can be computed once into an N x N texture
  (4 N^2 bytes: 0.4 GB at N = 10,000; it cannot hold N = 100,000) so that an iteration reads one
  texel per four pairs instead of recomputing n-dimensional distances.
* The j sweep is the kernels' :class:`~shadergpgpu.engine.kernels.Split` range (points for
  the tiled sweep, cut at multiples of JB, and for the ``"rows"`` pair kernel, cut at
  multiples of 4; packed columns of four points otherwise), with a loop cost per unit that
  depends on n (:func:`block_cost`). It is cut in two ways, every part one pass summed into
  the targets by additive accumulation (the first pair-kernel part adds ``prev``): into
  *chunks* here, to keep one pass under :data:`PASS_WORK` (long draws on the NVIDIA driver),
  under about 8,192 points, and into at least ``split`` parts; and by the engine, when one
  fragment's loop would pass the device's loop cap (``dev.loop_cap``: 65,535 on llvmpipe).
  The update is still exactly eq. 3 (only the order of the float additions changes).
  :func:`plan_phases` gives the passes beforehand (registered plan ``sammon/fit``).
* Host waits: a chain of chunk passes (the setup's row sums, every update) waits for the GPU
  (``dev.finish()``) whenever more than :data:`SYNC_WORK` would be queued (:func:`host_waits`):
  on the H200 the setup of N = 100,000, n = 200 (21 row-sum passes, ~28 s queued at once)
  returned zeros with no GL error, while the first session's setup of that size, whose timer
  queries waited after every pass, was right (``benchmarks/diag/sammon_rowsum.py`` runs both ways).
  The first update of a fit (:func:`_spot_check_update`) and the setup's row sums
  (:func:`_spot_check_rowsums`) are spot-checked against float64 rows on the host: a dropped
  or cut pass raises instead of fitting.

Why a full sweep instead of the source's half sweep
--------------------------------------------------
The source's fastest GPU variant visits each pair once (j > i) and adds the pair's term to both
points with atomic additions. A fragment shader can only write its own output texel(s): there is
no scatter and no atomic add on this path. So every fragment does a *full sweep* (all j != i) and
*gathers* the terms of its own point i: each pair is evaluated twice (once by i, once by j), twice
the arithmetic of the half sweep, but with no write conflicts, no atomics and a deterministic
result. (Additive blending could scatter only into whole render targets in a fixed order, which
does not help for per-pair contributions to two different points.)

Step size
---------
``step="source"`` applies eq. 3 with mu from eq. 4 (``learning_rate`` = lambda) at every
iteration. That step moves almost nothing on some data and overshoots on other data, so the
default ``step="adaptive"`` keeps eq. 3's direction and adapts only the length: the first step is
eq. 4's mu, rescaled if needed so that the RMS move lies between 0.1% and 5% of the embedding's
RMS spread (a normalised step); afterwards a "bold driver" backtracking rule multiplies the
step by 2 (until the first rejection, a warm-up) or by 1.2 after each iteration that lowers the
stress, and halves it (and retries from the last accepted positions) after one that does not.
The stress of a candidate comes free with the next update pass, so a
rejected candidate costs one pass and an O(N) step pass.

Degenerate pairs
----------------
Pairs with dn_ij = 0 (duplicate source points) are skipped in the update, in the stress and in
sum dn (their term in eq. 1 is undefined). In the update dm_ij is clamped from below by
``dm_floor = 1e-6 * mean(dn)`` so coinciding targets (dm = 0) give a zero term, not 0 * inf;
the stress uses the exact dm.
"""
from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import validate_data

from ..engine import validation as _v
from ..engine.builtin import SAXPY
from ..engine.errors import LoopBudgetError, TooLargeError
from ..engine.kernels import In, Split, declare
from ..engine.layout import Layout
from ..engine.limits import ceil_div
from ..engine.plans import PassPlan, register_plan
from ..ops import reduce as _reduce

#: cache="auto" keeps the N x N source distances when they take at most this many bytes.
CACHE_AUTO_BYTES = 1 << 30
#: RMS move of the first adaptive step, as a fraction of the embedding's RMS spread.
STEP_MIN, STEP_MAX = 1e-3, 5e-2
GROW, SHRINK = 1.2, 0.5
#: Until the first rejected candidate the step doubles (a warm-up: the normalised first step is
#: deliberately small), then it grows by GROW.
WARMUP_GROW = 2.0


def start_step(mu: float, rms_g: float, spread: float):
    """The adaptive fit's first step: the source's ``mu`` scaled so that the first move is
    between STEP_MIN and STEP_MAX of the start positions' spread (RMS gradient ``rms_g``);
    ``1 / rms_g`` when every start position is equal; None for a zero gradient (no move)."""
    if rms_g > 0 and spread > 0:
        ratio = mu * rms_g / spread
        return mu * min(max(ratio, STEP_MIN), STEP_MAX) / ratio
    if rms_g == 0:
        return None
    return 1.0 / max(rms_g, 1e-30)


class StepRule:
    """The adaptive step (one device or several): try ``trial`` (the step grown by
    WARMUP_GROW until the first rejection, GROW after), keep it when the stress did not
    rise, else halve the step (SHRINK); stop on a relative decrease below ``tol`` or after
    more than 30 rejections in a row."""

    def __init__(self, step: float, tol):
        self.step, self.tol = float(step), tol
        self.rejected = self.streak = 0

    @property
    def trial(self) -> float:
        return self.step * (GROW if self.rejected else WARMUP_GROW)

    def judge(self, e_a: float, e_b: float) -> tuple[bool, bool]:
        """(accepted, stop) for a candidate of stress ``e_b`` against the current ``e_a``."""
        if e_b <= e_a:
            rel = (e_a - e_b) / e_a if e_a > 0 else 0.0
            self.step = self.trial
            self.streak = 0
            return True, self.tol is not None and rel < self.tol
        self.rejected += 1
        self.streak += 1
        self.step *= SHRINK
        return False, self.streak > 30
DM_FLOOR = 1e-6
#: The update's spot check (:func:`_spot_check_update`) allows each pair's float32 dn - dm
#: this relative error (of dn + dm + |y_i| + |y_j|, 1-norms of the positions): far above the
#: kernels' rounding, far below a dropped pass.
UPDATE_CHECK_EPS = 1e-4

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

#: Values of the shaders' SOURCE define (the three ways the source lives on the device).
SOURCES = {"rows": 0, "columns": 1, "cached": 2}

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


# ---- loop work --------------------------------------------------------------------------------
def sweep_units(n_points: int, source: str) -> int:
    """Length of the j sweep (the kernels' split range): points for "rows" (visited four at a
    time, cuts at multiples of 4) and "tiled" (eight at a time), packed columns of four points
    otherwise."""
    return int(n_points) if source in ("rows", "tiled") else ceil_div(n_points, 4)


def sweep_align(source: str, jb=None) -> int:
    return {"rows": 4, "tiled": int(jb or TILE_JB)}.get(source, 1)


def block_cost(source: str, n_features: int, jb=None) -> int:
    """Loop iterations one fragment runs per unit of the sweep (nested loops counted
    together): per block of four points, its own iteration, the coordinate loop of the
    distances and the loop over the four pairs; for "rows" (a unit is one point) a quarter of
    that, rounded up. "tiled" (blocks of eight points, the pairs unrolled): its own iteration,
    the coordinate loop and, at worst, the exact recomputation loop, an eighth of that per
    point."""
    if source == "tiled":
        return ceil_div(1 + 2 * ceil_div(n_features, 4), int(jb or TILE_JB))
    inner = {"rows": ceil_div(n_features, 4), "columns": int(n_features), "cached": 0}[source]
    per_block = 1 + inner + 4
    return ceil_div(per_block, 4) if source == "rows" else per_block


def _cost(source):
    if source == "cached":
        return lambda a: block_cost("cached", 0)
    return lambda a: block_cost(source, a.X.cols)


def _dist_loop(a) -> int:
    """DIST: the distances of one texel's lanes (one coordinate loop per lane for "rows", one
    shared loop for "columns")."""
    if int(a.defines["SOURCE"]) == SOURCES["rows"]:
        return 4 * (1 + ceil_div(a.X.cols, 4))
    return 1 + a.X.cols


def _split(source):
    return Split("blk", length=lambda a: a.uniforms["n_blk"], cost=_cost(source),
                 align=sweep_align(source))


_HINT = "use fewer features (n), or cache=False"
_UPDATE_UNIFORMS = {"mu": "float", "keep_prev": "float", "dm_floor": "float", "blk0": "int",
                    "n_blk": "int"}

#: One Sammon iteration over the sweep units blk0 + [0, n_blk), per source (distances
#: recomputed from row-major or column-major X, or read from the cached N x N matrix D).
UPDATE = {
    src: declare("algorithms/sammon/update.frag",
                 inputs={("D" if src == "cached" else "X"):
                         In(packed=True, order="col" if src == "columns" else "row"),
                         "Y": In(like="OUT0")},
                 outputs=3, uniforms=_UPDATE_UNIFORMS, defines={"SOURCE": SOURCES[src]},
                 split=_split(src), name=f"sammon/update-{src}", hint=_HINT)
    for src in SOURCES}
#: Row sums of dn over the sweep units blk0 + [0, n_blk) (eq. 4's sum when nothing is cached).
ROWSUM = {
    src: declare("algorithms/sammon/rowsum.frag",
                 inputs={"X": In(packed=True, order="col" if src == "columns" else "row")},
                 uniforms={"blk0": "int", "n_blk": "int"}, defines={"SOURCE": SOURCES[src]},
                 split=_split(src), name=f"sammon/rowsum-{src}", hint=_HINT)
    for src in ("rows", "columns")}
def _tile_block(a) -> int:
    """Loop iterations of one block of the tiled sweep (at worst: with the exact pass): its
    own, the coordinate loop (UNROLL texels a step) and the exact loop (one texel a step)."""
    pt = int(a.uniforms["pt_texels"])
    return 1 + ceil_div(pt, int(a.defines.get("UNROLL", 1))) + pt


def _tile_split(jb):
    # A fragment sweeps 1 / n_part of a pass's blocks, rounded up: per point of the range
    # ceil(block / (JB n_part)) iterations, plus one block for the rounding.
    return Split("blk", length=lambda a: a.uniforms["n_blk"],
                 cost=lambda a: ceil_div(_tile_block(a), jb * int(a.uniforms["n_part"])),
                 extra=_tile_block, align=jb)


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


def _tile_names(k):
    return tuple(f"G{a}" for a in range(k))


def _tile_outputs(k, s_lane):
    return _tile_names(k) + (() if s_lane else ("S",))


#: (K, s in g's w lane) of the tiled kernels declared: K + 1 targets up to K = 4, or K targets
#: for K = 1, 2, 4, 8.
TILE_SHAPES = tuple((k, False) for k in range(1, 5)) + tuple((k, True) for k in (1, 2, 4, 8))

#: The tiled update (layout="rows", distances recomputed), per (points i per fragment K,
#: points j per block JB, s in g's w lane): the sums g and s of K points over the sweep units
#: blk0 + [0, n_blk), into K + 1 (or K) targets of ceil(N / K) x n_part texels (tile, part
#: of j). UNROLL (coordinate texels per loop step) and IL (interleaved blocks) are defines
#: of the call.
TILE = {
    (k, jb, sl): declare("algorithms/sammon/tile.frag",
                         inputs={"X": In(packed=True, order="row"), "NRM": In(),
                                 "Y": In(packed=True, order="row")},
                         outputs=_tile_outputs(k, sl),
                         uniforms={"dm_floor": "float", "blk0": "int", "n_blk": "int",
                                   "n_pts": "int", "pt_texels": "int", "pts_row": "int",
                                   "n_part": "int"},
                         defines={"K_PTS": k, "JB": jb, "S_LANE": int(sl), "UNROLL": 1,
                                  "IL": 0},
                         split=_tile_split(jb),
                         name=f"sammon/tile{k}x{jb}" + ("w" if sl else ""), hint=_HINT)
    for k, sl in TILE_SHAPES for jb in (8, 16, 32)}
#: From the tile sums back to one texel per point: next = prev + mu g (eq. 3), g and s.
FINISH = {
    (k, sl): declare("algorithms/sammon/finish.frag",
                     inputs=dict({n: In(packed=True, order="row")
                                  for n in _tile_outputs(k, sl)}, Y=In(like="OUT0")),
                     outputs=3, uniforms={"mu": "float", "n_part": "int"},
                     defines={"K_PTS": k, "S_LANE": int(sl)},
                     loop=lambda a: a.uniforms["n_part"],
                     name=f"sammon/finish{k}" + ("w" if sl else ""))
    for k, sl in TILE_SHAPES}
#: The N x N source distances (cache=True), from either X layout (SOURCE 0 or 1).
DIST = declare("algorithms/sammon/dist.frag", inputs={"X": In(packed=True)},
               defines={"SOURCE": SOURCES["rows"]}, loop=_dist_loop, name="sammon/dist",
               hint="use cache=False (the distances are then recomputed per block)")
#: |G_i|^2 per point (adaptive step: the squared norm of the direction with a sum).
SQNORM = declare("algorithms/sammon/sqnorm.frag", inputs={"G": In(packed=True, order="row")},
                 name="sammon/sqnorm")


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


def _plan_layouts(n, n_features, source, max_size):
    order = "col" if source == "columns" else "row"
    if source == "cached":
        return {"D": Layout(n, n, True, "row", max_size)}
    return {"X": Layout(n, n_features, True, order, max_size)}


def accumulate_cost(n_outputs: int, float_blend: bool = True) -> int:
    """Passes one accumulating pass draws (as :meth:`Device.accumulate_passes`): 1 with float
    blending, else 1 + 2 per output (the engine's ping-pong accumulation)."""
    return 1 if float_blend else 1 + 2 * int(n_outputs)


def sweep_passes(kernel, n, n_features, source, chunks, loop_cap, max_size=1 << 20,
                 float_blend=True, unroll=1) -> int:
    """Passes the sweep of ``kernel`` draws over ``chunks`` under ``loop_cap``: the first part
    of the first chunk writes, every other part (chunks after the first, loop-cap cuts after
    the first of a chunk) accumulates, by blending or, without float blending, by the
    engine's ping-pong passes. ``unroll``: the tiled kernel's UNROLL."""
    lays = _plan_layouts(n, n_features, source, max_size)
    src = {"tiled": "rows"}.get(source, source)
    acc = accumulate_cost(len(kernel.outputs), float_blend)
    total = 0
    tiled = source == "tiled"
    parts = tile_parts(n, int(kernel.defines["K_PTS"]), chunks, kernel.split.align) \
        if tiled else 1
    if tiled:
        defines = kernel.resolve_defines({"UNROLL": int(unroll)})
    else:
        defines = {"SOURCE": SOURCES[src]} if "SOURCE" in kernel.defines else {}
    pt = ceil_div(ceil_div(n_features, 4), int(unroll)) * int(unroll)
    for k, (b0, nb) in enumerate(chunks):
        u = {"blk0": b0, "n_blk": nb, "pt_texels": pt, "n_part": parts}
        cuts = max(1, len(kernel.slices(lays, u, defines, loop_cap)))
        total += (1 + (cuts - 1) * acc) if k == 0 else cuts * acc
    return total


def _sum_passes(texels: int, fanin) -> int:
    return _reduce.passes(texels, fanin or _reduce.DEFAULT_FANIN, packed=False)


def sweep_source(layout: str, cached: bool, tiled: bool = True) -> str:
    """Which update runs: "cached", "tiled" (rows, recomputed, :data:`TILE_ROWS`), "rows" (the
    pair kernel) or "columns"."""
    if cached:
        return "cached"
    return "tiled" if layout == "rows" and tiled else layout


def update_kernel(source: str, max_outputs: int = 8, jb=None, s_lane=None, k_pts=None):
    """The update kernel of ``source``; for "tiled" the TILE of ``k_pts`` points (default
    :func:`tile_points`), ``jb`` points per block and s in g's w lane or not (``s_lane``;
    None: :func:`tile_s_lane`)."""
    if source == "tiled":
        sl = tile_s_lane() if s_lane is None else bool(s_lane)
        k = int(k_pts) if k_pts else tile_points(max_outputs, sl)
        return TILE[(k, int(jb or TILE_JB), sl)]
    return UPDATE[source]


def plan_phases(n, n_features, layout="rows", n_evals=1, split="auto", cached=False,
                n_rejects=0, adaptive=False, loop_cap=None, fanin=None, float_blend=True,
                max_outputs=8, tiled=True, tile_jb=None, tile_points=None, tile_s_lane=None,
                tile_unroll=None):
    """Passes of one fit per phase (registered as plan ``sammon/fit``).

    n, n_features : the data's shape; layout : "rows" / "columns"; n_evals : update
    evaluations (``n_iter_``); split : the estimator's ``split`` parameter; cached : whether
    the distances were cached (``cached_``); n_rejects : ``n_rejected_``; adaptive : step
    "adaptive"; loop_cap : the device's ``loop_cap``; fanin : the sum reduction's fan-in;
    float_blend : the device's ``float_blending`` (False: accumulation by ping-pong passes);
    max_outputs : the device's ``max_outputs`` (points per tiled fragment); tiled : whether the
    rows sweep is the tiled kernel (``tiled_``); tile_jb : its points per block (default
    :data:`TILE_JB`); tile_points, tile_s_lane, tile_unroll : its points i per fragment, s in
    g's w lane, coordinate unroll (``tile_points_``, ``tile_s_lane_``, ``tile_unroll_``;
    default: the module's settings for positions of at most 3 coordinates).
    :func:`plan_params` collects them.
    """
    n, n_features = int(n), int(n_features)
    red = _sum_passes(n, fanin)                       # S and V: one texel per point
    source = sweep_source(layout, cached, tiled)
    kern = update_kernel(source, max_outputs, tile_jb, tile_s_lane, tile_points)
    update = sweep_passes(kern, n, n_features, source,
                          sweep_chunks(n, n_features, source, split, tile_jb), loop_cap,
                          float_blend=float_blend,
                          unroll=TILE_UNROLL if tile_unroll is None else tile_unroll)
    if source == "tiled":
        update += 1                                   # FINISH: back to one texel per point
    if cached:
        setup = 1 + _sum_passes(n * ceil_div(n, 4), fanin)
    else:
        setup = sweep_passes(ROWSUM[layout], n, n_features, layout,
                             sweep_chunks(n, n_features, layout, 1), loop_cap,
                             float_blend=float_blend) + red
    out = {"sammon/setup": setup,
           "sammon/update": int(n_evals) * update,
           "sammon/stress": int(n_evals) * red}
    if adaptive:
        out["sammon/step"] = 1 + red + 1 + int(n_rejects)
    return out


def plan_params(est, dev) -> dict:
    """The parameters of plan ``sammon/fit`` for a fitted :class:`Sammon` on ``dev``."""
    return dict(n=est.embedding_.shape[0], n_features=est.n_features_in_, layout=est.layout,
                n_evals=est.n_iter_, split=est.split, cached=est.cached_,
                n_rejects=est.n_rejected_, adaptive=est.step == "adaptive",
                loop_cap=dev.loop_cap, fanin=_reduce.fanin_for(dev),
                float_blend=dev.float_blending,
                max_outputs=dev.max_outputs, tiled=est.tiled_, tile_jb=est.tile_jb_,
                tile_points=getattr(est, "tile_points_", None),
                tile_s_lane=getattr(est, "tile_s_lane_", None),
                tile_unroll=getattr(est, "tile_unroll_", None))


register_plan(PassPlan(
    name="sammon/fit",
    formula="setup: 1 + R(N ceil(N/4)) cached, else c + R(N); update: E * (k + t); "
            "stress: E * R(N); adaptive step: 2 + R(N) + rejects  (E = evaluations incl. the "
            "final stress, k = passes of one j sweep (chunks, each cut for the loop cap; each "
            "accumulating part 1 + 2 x outputs passes without float blending), t = 1 for the "
            "tiled rows sweep (its finishing pass) else 0, c = passes of the dn row sums, "
            "R(t) = sum passes over t texels)",
    phases=plan_phases,
    notes="setup: distance cache (or row sums of dn) and its sum; update: the gather passes of "
          "eq. 3 (one per part of the j sweep); stress: one device sum per evaluated position "
          "set; step (adaptive only): |G|^2 pass and its sum, first step, one step pass per "
          "rejected candidate",
    params=("n", "n_features", "layout", "n_evals", "split", "cached", "n_rejects",
            "adaptive", "loop_cap", "fanin", "float_blend", "max_outputs", "tiled",
            "tile_jb", "tile_points", "tile_s_lane", "tile_unroll")))


_F32_MAX = float(np.finfo(np.float32).max)
#: smallest scale_ accepted: the float32 embedding's coordinates keep an absolute resolution of
#: 2^-150 (subnormals), below 1e-9 of this
SCALE_MIN = 2.0 ** -120


def data_scale(X) -> tuple[np.ndarray, float, float]:
    """(X centred, its RMS distance to the mean, its largest distance to the mean), in float64
    without overflow or underflow for any finite X (the sums are taken of X divided by its
    largest magnitude)."""
    Xc = np.asarray(X, dtype=np.float64)
    Xc = Xc - Xc.mean(axis=0)
    big = float(np.abs(Xc).max()) if Xc.size else 0.0
    if not big > 0:
        return Xc, 0.0, 0.0
    sq = ((Xc / big) ** 2).sum(axis=1)
    return Xc, big * math.sqrt(float(sq.mean())), big * math.sqrt(float(sq.max()))


def normalized(X) -> tuple[np.ndarray, float]:
    """X centred and divided by its RMS distance to the mean ``scale``, as float32 (what the
    device fits), and ``scale``; the division is in float64, so X * s gives the same float32
    array for any s (to one float64 rounding: the fits then agree to float32 rounding, where
    a power-of-two scale of float32(X) would differ by an ulp of the data, which a fit of
    many steps may amplify to 1e-3). ValueError naming X where all samples coincide, or
    where the embedding (float32, in the units of X) could not hold X's scale."""
    Xc, scale, far = data_scale(X)
    if not scale > 0:
        raise ValueError("X: all samples coincide (every source distance is 0); the Sammon "
                         "stress is undefined")
    if 4.0 * far > _F32_MAX:
        raise ValueError(f"X: samples lie up to {far:.3g} from their mean: the float32 "
                         f"embedding (in the units of X) cannot hold distances of that size "
                         f"(float32's range is +-{_F32_MAX:.4g}); scale X down")
    if scale < SCALE_MIN:
        raise ValueError(f"X: the samples' RMS distance to their mean is {scale:.3g}, below "
                         f"{SCALE_MIN:.3g}: the float32 embedding (in the units of X) would "
                         "lose its precision to float32's subnormal range; scale X up")
    return (Xc / scale).astype(np.float32), scale


def pca_init(X: np.ndarray, n_components: int) -> np.ndarray:
    """Projection of the centred data on its first principal axes (float64, host)."""
    Xc = np.asarray(X, dtype=np.float64)
    Xc = Xc - Xc.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    Y = Xc @ vt[:n_components].T
    if Y.shape[1] < n_components:  # fewer source dimensions than components: pad with zeros
        Y = np.hstack([Y, np.zeros((Y.shape[0], n_components - Y.shape[1]))])
    return Y


class Sammon(TransformerMixin, BaseEstimator):
    """Sammon mapping on the GPU, a scikit-learn transformer (``fit``, ``fit_transform``).

    Like :class:`sklearn.manifold.TSNE` it embeds the training data only: there is no
    ``transform`` of new points.

    Parameters
    ----------
    n_components : int, 1..4. Target dimension m.
    n_iter : int. Maximum number of update passes (gradient evaluations; with the adaptive
        step a rejected candidate counts as one).
    learning_rate : float. lambda of eq. 4 (mu = 2 lambda / sum_{i != j} dn_ij, dn in the
        units of X); with ``step="adaptive"`` it only sets the first step before
        normalisation, and applies to X / scale_ (the fit is scale invariant).
    init : "pca" (default), "random" or an (N, n_components) array of starting positions.
    random_state : int, numpy Generator or None (for init="random").
    layout : "rows" (default) or "columns": how the source coordinates lie in the texture.
    tol : float or None. Adaptive step: stop when an accepted iteration lowers the stress by
        less than ``tol`` relative; fixed step: when the stress changes by less than that.
    step : "adaptive" (default) or "source" (eq. 3 with eq. 4's mu at every iteration).
    cache : "auto" (default), True or False: keep the N x N source distances in a texture
        ("auto": when they take at most 1 GiB, fit the texture limit and the loop cap).
    split : "auto" or an int >= 1: at least this many passes per sweep of j.
    device : a :class:`shadergpgpu.Device`; default the process-wide one.

    Attributes
    ----------
    embedding_ : (N, n_components) float32 array, in the units of X.
    n_features_in_ : number of source features n.
    stress_ : float, Sammon stress (eq. 1) of ``embedding_`` (float32 device sums).
    stress_history_ : list of float, stress of the start and of every accepted iterate.
    n_iter_ : update evaluations run. ``n_rejected_``: rejected candidates.
    mu_ : eq. 4's mu for ``learning_rate``, in the units of X (``step="source"``: 2 lambda /
    sum dn of X; adaptive: that of X / scale_, times scale_); ``step_`` : last step length
    used, in the units of X.
    cached_ : whether the distances were cached; ``split_`` : passes per sweep of j (the
    ping-pong accumulation passes included, the tiled sweep's finishing pass not);
    ``chunks_`` : chunks of the sweep before the loop-cap cuts; ``tiled_`` : whether the tiled
    update ran; ``tile_jb_`` : its points j per block.
    timings_ : {"setup_s": seconds for the source distances and their sum, "eval_s": wall
        seconds of each update pass + stress sum + its one-float readback}.
    scale_ : the samples' RMS distance to their mean: the device fits X / scale_ and the
        embedding is scaled back (see :meth:`fit`), so ``fit(X * s)`` is s times ``fit(X)``.

    Sizes: ``fit`` lays out every device array and the sweep's passes from the shape of X
    (:func:`fit_geometry`) before converting X or allocating anything: N or n past the
    device's texture limit is refused at once (ValueError naming X), as is a kernel loop the
    loop cap cannot hold (LoopBudgetError, a ValueError, with the kernel's hint).

    Accuracy (u = 2^-24; N points, n source features, E the stress): ``stress_`` is
    sum_i s_i / sum dn from float32 device sums (each row's terms over N pairs, then the sum
    reduction over N rows: at most 2N additions of nonnegative terms per sum), with dn within
    4 (n + 3) u relative (the tiled sweep's |x_i|^2 + |x_j|^2 - 2 x_i.x_j, recomputed exactly
    where it could cancel) and dm within (m + 3) u, so against the float64 stress of
    ``embedding_``::

        |stress_ - E64(embedding_)| <= (4N + 12n + 60) u E + (16n + 76) u sqrt(E)

    (the sqrt term: dn - dm cancels near convergence; sum |dn - dm| <= sqrt(E) sum dn). Each
    update is the float32 evaluation of eq. 3 from the current positions, checked on its first
    evaluation against float64 rows (:func:`_spot_check_update`); the trajectory over many
    steps has no a-priori bound beyond that (tests compare steps with float64 at 1e-4).
    ``tests/test_algorithm_guards.py`` checks the bound, and the scale invariance at
    s = 1e-30 .. 1e30.
    """

    def __init__(self, n_components=2, n_iter=300, learning_rate=0.5, init="pca",
                 random_state=None, layout="rows", tol=1e-6, step="adaptive", cache="auto",
                 split="auto", device=None):
        self.n_components = n_components
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.init = init
        self.random_state = random_state
        self.layout = layout
        self.tol = tol
        self.step = step
        self.cache = cache
        self.split = split
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The embedding is float32 whatever the input (device textures are RGBA32F).
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags

    # ---- validation ----------------------------------------------------------------------
    def _check_params(self):
        _v.integer(self.n_components, "n_components", 1, 4)
        _v.integer(self.n_iter, "n_iter", 1)
        _v.real(self.learning_rate, "learning_rate", 0, closed="neither")
        if self.tol is not None:
            _v.real(self.tol, "tol", 0)
        _v.choice(self.layout, "layout", ("rows", "columns"))
        _v.choice(self.step, "step", ("adaptive", "source"))
        if not (isinstance(self.cache, (bool, np.bool_)) or
                (isinstance(self.cache, str) and self.cache == "auto")):
            raise ValueError(f"cache must be 'auto', True or False, got {self.cache!r}")
        if not (isinstance(self.split, str) and self.split == "auto"):
            _v.integer(self.split, "split", 1)
        if isinstance(self.init, str):
            _v.choice(self.init, "init", ("pca", "random"))

    def _start(self, X, m):
        n = X.shape[0]
        if isinstance(self.init, str) and self.init == "pca":
            return pca_init(X, m)
        if isinstance(self.init, str):
            rng = np.random.default_rng(self.random_state)
            Xc = X.astype(np.float64) - X.mean(axis=0)
            scale = float(np.sqrt((Xc ** 2).sum(axis=1).mean()))
            return rng.standard_normal((n, m)) * (scale / math.sqrt(m) or 1.0)
        Y0 = _v.array(self.init, "init")
        if Y0.shape != (n, m):
            raise ValueError(f"init array must have shape {(n, m)}, got {Y0.shape}")
        return np.asarray(self.init, dtype=np.float64)

    # ---- fit ---------------------------------------------------------------------------------
    def fit(self, X, y=None, client=None):
        """Embed X (n_samples >= 2, n_features); sets ``embedding_`` and the other attributes.
        With a Dask ``client``: the points split across its workers (shadergpgpu.distributed).

        Units: the device fits X / ``scale_`` (X centred and divided by the samples' RMS
        distance to their mean, in float64 on the host, then rounded to float32), and
        ``embedding_``, ``mu_`` and ``step_`` are scaled back, so the fit does not depend on
        the units of X: ``fit(X * s)`` gives the stress of ``fit(X)`` and
        ``s`` times its embedding for any s (float32 squared distances of X itself overflowed
        from |X| ~ 1e19 and underflowed below ~1e-19: "all samples coincide"). The adaptive
        step's ``learning_rate`` applies to X / scale_; ``step="source"`` keeps eq. 4 in the
        units of X (mu = 2 lambda / sum dn), which is not scale invariant: ``fit(X * s)``
        with ``learning_rate = lambda s^2`` is s times ``fit(X)`` with lambda (to float32
        rounding: X / scale_ is rounded to float32 where the unscaled fit rounded X).
        """
        self._check_params()
        if hasattr(X, "device") and hasattr(X, "layout") and hasattr(X, "get"):
            raise TypeError("X: pass a host array (Sammon reads the source points once)")
        m = int(self.n_components)
        shape = getattr(X, "shape", None)
        if client is None and isinstance(X, np.ndarray) and X.ndim == 2 and \
                X.dtype.kind in "biuf" and X.shape[0] >= 2 and X.shape[1] >= 1:
            # sizes first, from the shape alone: a fit the device cannot hold is refused
            # before X is converted or anything allocated (a Dask fit: each worker checks)
            fit_geometry(_v.pick_device(self.device, ()), int(shape[0]), int(shape[1]), m,
                         self)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        Xn, scale = normalized(X)
        # the same fit in the scaled units: eq. 4's mu for step="source" in the units of X
        # (lambda / scale^2); the adaptive step's lambda applies to X / scale
        lr = float(self.learning_rate)
        if self.step == "source":
            lr = max(lr / scale / scale, np.finfo(np.float64).tiny)
        init = self.init
        if not isinstance(init, str):
            Y0 = _v.array(init, "init")
            if Y0.shape != (X.shape[0], m):
                raise ValueError(f"init array must have shape {(X.shape[0], m)}, got "
                                 f"{Y0.shape}")
            init = np.asarray(init, dtype=np.float64) / scale
        run_est = Sammon(**dict(self.get_params(deep=False), learning_rate=lr, init=init))
        if client is not None:
            from ..distributed import fit_sammon
            fit_sammon(run_est, Xn, client)
        else:
            # pca and random starts from the scaled data: the same for X * s
            Y0 = run_est._start(Xn, m)
            dev = _v.pick_device(self.device, ())
            run = _Run(dev, Xn, Y0, run_est)
            try:
                run.fit()
            finally:
                run.release()
        for k, v in vars(run_est).items():
            if k.endswith("_") and not k.startswith("_") and \
                    k not in ("n_features_in_", "feature_names_in_"):
                setattr(self, k, v)
        # back to the units of X
        self.embedding_ = (run_est.embedding_.astype(np.float64) * scale).astype(np.float32)
        self.mu_ = float(run_est.mu_) * scale
        self.step_ = float(run_est.step_) * scale
        self.scale_ = scale
        return self

    def fit_transform(self, X, y=None, client=None):
        """Fit and return ``embedding_``."""
        return self.fit(X, client=client).embedding_


def _spot_check_rowsums(dev, V, Xc, lo: int = 0, hi: int | None = None,
                        rows: int = 3) -> None:
    """Compare a few of the device's row sums of dn with the host's (float64): a driver that
    drops or cuts a long draw (seen on the NVIDIA driver at N = 100,000, n = 200: zeros, no
    GL error) must raise, never feed a wrong sum into the fit."""
    hi = Xc.shape[0] if hi is None else int(hi)
    idx = np.unique(np.linspace(int(lo), hi - 1, rows).astype(int))
    Xd = np.asarray(Xc, dtype=np.float64)
    ref = np.array([np.sqrt(((Xd - Xd[i]) ** 2).sum(axis=1)).sum() for i in idx])
    got = V.get().reshape(-1)[idx].astype(np.float64)
    bad = np.abs(got - ref) > 1e-3 * np.maximum(ref, 1e-30)
    if bad.any():
        from ..engine.errors import ShaderGPGPUError
        i = int(idx[np.argmax(bad)])
        raise ShaderGPGPUError(
            f"Sammon setup: the renderer returned a wrong row sum of source distances for "
            f"point {i} ({got[np.argmax(bad)]:.6g} vs {ref[np.argmax(bad)]:.6g} on the host); "
            f"{dev.caps.renderer} dropped or cut a pass. Try split= larger, cache=False, or "
            "fewer points per device (shadergpgpu.distributed).")


def host_row(Xd, Yd, i: int, dm_floor: float) -> dict:
    """Point ``i``'s row of one update in float64 on the host (``Xd``, ``Yd``: float64 data
    and positions): g (eq. 3's direction), s (eq. 1's row terms) and the per-pair terms
    (dn, dm, dy, ok: pairs that count, sd, e = dn - dm, den, terms: g's summands)."""
    dn = np.sqrt(((Xd - Xd[i]) ** 2).sum(axis=1))
    dy = Yd[i] - Yd
    dm = np.sqrt((dy ** 2).sum(axis=1))
    ok = dn > 0
    ok[i] = False
    sd = np.where(ok, dn, 1.0)
    e = dn - dm
    den = sd * np.maximum(dm, dm_floor)
    terms = np.where(ok, e / den, 0.0)[:, None] * dy
    return dict(dn=dn, dm=dm, dy=dy, ok=ok, sd=sd, e=e, den=den, terms=terms,
                g=terms.sum(axis=0), s=np.where(ok, e ** 2 / sd, 0.0).sum())


def _spot_check_update(dev, G, S, Xc, Y, dm_floor: float, lo: int = 0, hi: int | None = None,
                       rows: int = 3) -> None:
    """Compare a few rows of one update's direction g and stress terms s (eq. 3 and 1, from
    positions ``Y``) with float64 on the host: like :func:`_spot_check_rowsums`, a dropped or
    cut pass of the sweep must raise (a wrong row by more than 1e-3 of its size). Each pair's
    float32 dn - dm is allowed an error delta = UPDATE_CHECK_EPS (dn + dm + |y_i| + |y_j|)
    on top (a near-converged row cancels: dn ~ dm), propagated to s and g; g's tolerance is
    measured against the sum of its terms' magnitudes (g itself may cancel)."""
    hi = Xc.shape[0] if hi is None else int(hi)
    idx = np.unique(np.linspace(int(lo), hi - 1, rows).astype(int))
    Xd = np.asarray(Xc, dtype=np.float64)
    Yd = np.asarray(Y, dtype=np.float64)
    got_g = G.get().astype(np.float64)
    got_s = S.get().reshape(len(Xd), -1)[:, 0].astype(np.float64)
    m = Yd.shape[1]
    for i in idx:
        r = host_row(Xd, Yd, i, dm_floor)
        dn, dm, dy, ok, sd, e, den = (r[k] for k in ("dn", "dm", "dy", "ok", "sd", "e", "den"))
        g, s, scale = r["g"], r["s"], np.abs(r["terms"]).sum(axis=0)
        delta = UPDATE_CHECK_EPS * (dn + dm + np.abs(Yd[i]).sum() + np.abs(Yd).sum(axis=1))
        tol_s = 1e-3 * s + np.where(ok, (2 * np.abs(e) + delta) * delta / sd, 0.0).sum()
        tol_g = 1e-3 * scale + (np.where(ok, delta / den, 0.0)[:, None] * np.abs(dy)).sum(0)
        bad_g = np.abs(got_g[i, :m] - g) > np.maximum(tol_g, 1e-30)
        bad_s = abs(got_s[i] - s) > max(tol_s, 1e-30)
        if bad_g.any() or bad_s:
            from ..engine.errors import ShaderGPGPUError
            raise ShaderGPGPUError(
                f"Sammon update: the renderer returned a wrong direction or stress row for "
                f"point {i} (g {got_g[i, :m]} vs {g}, s {got_s[i]:.6g} vs {s:.6g} on the "
                f"host); {dev.caps.renderer} dropped or cut a pass. Try split= larger, or "
                "fewer points per device (shadergpgpu.distributed).")


def _use_cache(dev, cache, n: int, d: int, layout: str) -> bool:
    """Whether a fit keeps the N x N source distances (``cache``: the estimator's parameter):
    "auto" when they take at most :data:`CACHE_AUTO_BYTES`, fit one texture and the DIST
    kernel's loop fits the cap; True where they fit one texture (else ValueError)."""
    mx = dev.max_texture_size
    order = "col" if layout == "columns" else "row"
    try:
        Layout(n, n, True, "row", mx)
        fits = True
    except TooLargeError:
        fits = False
    if isinstance(cache, str) and cache == "auto":
        if not (4 * n * n <= CACHE_AUTO_BYTES and fits):
            return False
        lays = {"X": Layout(n, d, True, order, mx), "OUT": Layout(n, n, True, "row", mx)}
        loop = DIST.trips(lays, {}, {"SOURCE": SOURCES[layout]})[0]
        return dev.loop_cap is None or loop <= dev.loop_cap
    if cache and not fits:
        raise ValueError(f"cache=True: the {n} x {n} distance matrix does not fit the "
                         f"{mx}-texel texture limit")
    return bool(cache)


def fit_geometry(dev, n: int, d: int, m: int, est) -> SimpleNamespace:
    """What a fit of N = ``n`` points of ``d`` coordinates into ``m`` on ``dev`` makes and
    runs, from the shapes alone: layouts of every device array, the distance cache, the sweep
    (tiled or the pair kernel) and its chunks, the passes the device's loop cap cuts them into.
    :class:`_Run` sets up from it, and :meth:`Sammon.fit` calls it before anything is
    converted or allocated, so a fit the device cannot hold is refused at once: ValueError
    naming X (too large for the texture limit), LoopBudgetError (a ValueError: a kernel's
    loop cannot fit the device's loop cap, with the kernel's hint)."""
    mx = dev.max_texture_size
    if dev.max_outputs < 3:
        raise ValueError(f"Sammon writes 3 render targets per pass; this device (profile "
                         f"{dev.profile.name!r}) has {dev.max_outputs}")
    g = SimpleNamespace()
    g.order = order = "row" if est.layout == "rows" else "col"
    w = min(max(1, math.isqrt(n - 1) + 1), mx)

    def layout(what, rows, cols, packed=True, order="row", size=mx):
        try:
            return Layout(rows, cols, packed, order, size)
        except TooLargeError:
            texels = rows * (ceil_div(cols, 4) if packed else cols)
            raise ValueError(
                f"X: {n} samples x {d} features do not fit this device: the {what} "
                f"({rows} x {cols}: {texels} texels) exceed one texture of {mx} x {mx} = "
                f"{mx * mx} texels (the device's max_texture_size); use fewer samples"
                + ("" if what.startswith("positions") else " or features")) from None

    g.x_layout = layout("source points", n, d, order=order)
    # positions, direction and stress terms: one texel per point, near-square wrap
    g.pos_layout = layout("positions", n, m, size=w)
    g.vec_layout = layout("positions' stress terms", n, 1, size=w)
    g.cached = _use_cache(dev, est.cache, n, d, est.layout)
    g.tile_jb = int(TILE_JB)
    g.tile_unroll = int(TILE_UNROLL)
    g.tile_s_lane = tile_s_lane(m)
    g.k_pts = tile_points(dev.max_outputs, g.tile_s_lane)
    pt = ceil_div(ceil_div(d, 4), g.tile_unroll) * g.tile_unroll
    g.tile_il = bool(TILE_INTERLEAVE) and g.tile_jb % g.k_pts == 0 and g.tile_jb * pt <= mx
    g.tiled = bool(TILE_ROWS) and est.layout == "rows" and not g.cached
    if g.tiled:
        # the blocked source holds a point's texels in one texture row: past 4 x mx
        # coordinates (or a texture it overflows) the pair kernel sweeps instead
        try:
            rows, b, pt = blocked_shape(n, d, mx, g.tile_unroll,
                                        g.tile_jb if g.tile_il else 1)
            Layout(rows, b * 4 * pt, True, "row", mx)
        except ValueError:
            g.tiled = g.tile_il = False
    g.source = source = sweep_source(est.layout, g.cached, g.tiled)
    g.chunks = sweep_chunks(n, d, source, est.split, g.tile_jb)
    if g.cached:
        layout("cached source distances", n, n)
    if g.tiled:
        g.n_part = tile_parts(n, g.k_pts, g.chunks, g.tile_jb)
        g.tile_layout = layout("tiles' partial sums", ceil_div(n, g.k_pts), 4 * g.n_part)
        layout("squared norms", 1, n)
    kern = update_kernel(source, dev.max_outputs, g.tile_jb, g.tile_s_lane, g.k_pts)
    try:
        g.split = sweep_passes(kern, n, d, source, g.chunks, dev.loop_cap,
                               float_blend=dev.float_blending, unroll=g.tile_unroll)
        if g.cached:
            lays = {"X": g.x_layout, "OUT": Layout(n, n, True, "row", mx)}
            DIST.slices(lays, {}, DIST.resolve_defines({"SOURCE": SOURCES[est.layout]}),
                        dev.loop_cap)
        else:
            sweep_passes(ROWSUM[est.layout], n, d, est.layout, sweep_chunks(n, d, est.layout, 1),
                         dev.loop_cap, float_blend=dev.float_blending)
    except LoopBudgetError as e:
        raise LoopBudgetError(f"X ({n} samples x {d} features): {e}") from None
    return g


class _Run:
    """Device state of one fit: textures, prepared passes and the step control."""

    def __init__(self, dev, X, Y0, est, rows=None, sum_dn=None):
        # rows: (lo, hi) when only those points' row sums are computed (a Dask shard);
        # sum_dn: sum dn known from an earlier setup of the same X (no row-sum passes; for
        # timing update variants, benchmarks/diag/sammon_variants.py)
        self.dev, self.est = dev, est
        self.rows = rows
        self._known_sum_dn = sum_dn
        self._check_update = False
        self._arrays = []
        self._chains = []
        try:
            self._setup(dev, X, Y0, est)
        except BaseException:
            # Setup can fail after allocating textures (e.g. all samples coincide): free them.
            self.release()
            raise

    def _setup(self, dev, X, Y0, est):
        t_setup = time.perf_counter()
        self.eval_s = []
        self._y0 = np.asarray(Y0, dtype=np.float64)
        n, d = X.shape
        self.n, self.m = n, Y0.shape[1]
        # every layout, the cache, the sweep and its loop-cap cuts from the shapes: a fit the
        # device cannot hold is refused before anything is allocated
        geo = fit_geometry(dev, n, d, self.m, est)
        order = geo.order
        # Centred on the host (float64): distances unchanged, norms small (the tiled sweep's
        # |x_i|^2 + |x_j|^2 - 2 x_i.x_j cancels less).
        X64 = np.asarray(X, dtype=np.float64)
        Xc = self._xc = (X64 - X64.mean(axis=0)).astype(np.float32)
        self.X = self._keep(dev.array(Xc, packed=True, order=order, name="X"))
        # Positions, direction and stress terms: one texel per point, near-square wrap.
        self.pos_layout = geo.pos_layout
        self.vec_layout = geo.vec_layout
        self.Y = [self._keep(dev.alloc(self.pos_layout)) for _ in range(3)]
        self.Y[0].set(Y0.astype(np.float32))
        self.G = [self._keep(dev.alloc(self.pos_layout)) for _ in range(2)]
        self.S = self._keep(dev.alloc(self.vec_layout))
        self.V = self._keep(dev.alloc(self.vec_layout))
        self.cached = geo.cached
        self.tiled = geo.tiled
        source = self.source = geo.source
        self.tile_jb = geo.tile_jb
        self.tile_unroll = geo.tile_unroll
        self.tile_s_lane = geo.tile_s_lane
        self.k_pts = geo.k_pts
        self.tile_il = geo.tile_il
        self.chunks = geo.chunks
        with dev.phase("sammon/setup"):
            if self.cached:
                self.D = self._keep(dev.empty((n, n), packed=True, order="row"))
                dev.run(DIST, self.D, inputs={"X": self.X},
                        defines={"SOURCE": SOURCES[est.layout]})
                sum_dn = _reduce.total(dev, self.D)
                src_inputs = {"D": self.D}
            elif self._known_sum_dn is not None:
                sum_dn = float(self._known_sum_dn)
                src_inputs = {"X": self.X}
            else:
                rs_chunks = sweep_chunks(n, d, est.layout, 1)
                waits = host_waits([chunk_work(n, d, est.layout, nb) for _, nb in rs_chunks])
                for k, (b0, nb) in enumerate(rs_chunks):
                    dev.run(ROWSUM[est.layout], self.V, inputs={"X": self.X},
                            uniforms={"blk0": b0, "n_blk": nb},
                            accumulate="add" if k > 0 else None)
                    if waits[k]:
                        dev.finish()
                sum_dn = _reduce.total(dev, self.V)
                _spot_check_rowsums(dev, self.V, Xc, *(self.rows or ()))
                src_inputs = {"X": self.X}
        if not sum_dn > 0 or not math.isfinite(sum_dn):
            raise ValueError("X: all samples coincide (every source distance is 0); the Sammon "
                             "stress is undefined")
        self.sum_dn = sum_dn
        self.setup_s = time.perf_counter() - t_setup
        pairs = n * (n - 1)
        self.dm_floor = DM_FLOOR * sum_dn / pairs
        self.mu_source = 2.0 * float(est.learning_rate) / sum_dn
        # The update passes: the first chunk writes (and adds prev), the others accumulate
        # (blending, or the engine's ping-pong passes where float blending is missing).
        self.passes = []
        self.finish = None
        if self.tiled:
            k_pts, sl = self.k_pts, self.tile_s_lane
            self.n_part = geo.n_part
            tl = geo.tile_layout
            names = _tile_outputs(k_pts, sl)
            tiles = [self._keep(dev.alloc(tl)) for _ in names]
            nrm = (Xc.astype(np.float64) ** 2).sum(axis=1)
            self.NRM = self._keep(dev.array(nrm[None, :], packed=True, order="row",
                                            name="norms"))
            xb, pts_row, pt_texels = blocked_source(
                Xc, dev.max_texture_size, self.tile_unroll,
                self.tile_jb if self.tile_il else 1)
            self.XB = self._keep(dev.array(xb, packed=True, order="row", name="X"))
            kern = update_kernel("tiled", dev.max_outputs, self.tile_jb, sl, k_pts)
            for k, (b0, nb) in enumerate(self.chunks):
                self.passes.append(dev.prepare(
                    kern, dict(zip(names, tiles)),
                    inputs={"X": self.XB, "NRM": self.NRM, "Y": self.Y[0]},
                    uniforms={"blk0": b0, "n_blk": nb, "dm_floor": self.dm_floor,
                              "n_pts": n, "pts_row": pts_row, "pt_texels": pt_texels,
                              "n_part": self.n_part},
                    defines={"UNROLL": self.tile_unroll, "IL": int(self.tile_il)},
                    accumulate="add" if k > 0 else None))
            self.finish = dev.prepare(FINISH[k_pts, sl], [self.Y[1], self.G[0], self.S],
                                      inputs=dict(zip(names, tiles), Y=self.Y[0]),
                                      uniforms={"mu": 0.0, "n_part": self.n_part})
        else:
            for k, (b0, nb) in enumerate(self.chunks):
                p = dev.prepare(UPDATE[source], [self.Y[1], self.G[0], self.S],
                                inputs=dict(src_inputs, Y=self.Y[0]),
                                uniforms={"blk0": b0, "n_blk": nb,
                                          "keep_prev": 1.0 if k == 0 else 0.0,
                                          "dm_floor": self.dm_floor, "mu": 0.0},
                                accumulate="add" if k > 0 else None)
                self.passes.append(p)
        self.waits = host_waits([chunk_work(n, d, source, nb) for _, nb in self.chunks])
        self.split = geo.split
        self.stress_sum = _reduce.SumReduction(dev, self.vec_layout, source=self.S)
        self._chains.append(self.stress_sum)

    # ---- helpers ---------------------------------------------------------------------------
    def _keep(self, a):
        self._arrays.append(a)
        return a

    def release(self):
        for c in self._chains:
            c.release()
        self._chains.clear()
        for a in self._arrays:
            a.release()
        self._arrays.clear()

    def evaluate(self, y_in, y_out, g_out, mu):
        """One update (all passes of the sweep) from y_in; returns the stress of y_in (one
        float read)."""
        dev = self.dev
        t0 = time.perf_counter()
        with dev.phase("sammon/update"):
            if self.finish is not None:
                for p, wait in zip(self.passes, self.waits):
                    p.bind(Y=y_in)
                    p.run()
                    if wait:
                        dev.finish()
                self.finish.bind(Y=y_in, OUT0=y_out, OUT1=g_out)
                self.finish.run(mu=float(mu))
            else:
                for p, wait in zip(self.passes, self.waits):
                    p.bind(Y=y_in, OUT0=y_out, OUT1=g_out)
                    p.run(mu=float(mu))
                    if wait:
                        dev.finish()
        with dev.phase("sammon/stress"):
            self.stress_sum.run()
            s = float(self.stress_sum.result.get()[0])
        self.eval_s.append(time.perf_counter() - t0)
        if self._check_update:
            # the first update of a fit (from the start positions): a few rows of g and s
            # against float64 on the host (a dropped or cut pass must raise, not fit)
            self._check_update = False
            _spot_check_update(dev, g_out, self.S, self._xc, y_in.get(), self.dm_floor,
                               *(self.rows or ()))
        return s / self.sum_dn

    # ---- the two step rules ------------------------------------------------------------------
    def fit(self):
        est = self.est
        self._check_update = True
        if est.step == "source":
            self._fit_source()
        else:
            self._fit_adaptive()
        est.mu_ = self.mu_source
        est.cached_ = self.cached
        est.tiled_ = self.tiled
        est.tile_jb_ = self.tile_jb
        est.tile_points_ = self.k_pts if self.tiled else None
        est.tile_s_lane_ = self.tile_s_lane if self.tiled else None
        est.tile_unroll_ = self.tile_unroll if self.tiled else None
        est.tile_interleaved_ = self.tile_il if self.tiled else None
        est.split_ = self.split
        est.chunks_ = len(self.chunks)
        est.timings_ = {"setup_s": self.setup_s, "eval_s": list(self.eval_s)}

    def _finish(self, y, history, n_evals, rejected, step):
        est = self.est
        emb = y.get().astype(np.float32)
        if not np.isfinite(emb).all():  # pragma: no cover - guarded by the clamps
            raise FloatingPointError("the embedding became non-finite; lower learning_rate")
        est.embedding_ = emb
        est.stress_ = float(history[-1])
        est.stress_history_ = [float(v) for v in history]
        est.n_iter_ = n_evals
        est.n_rejected_ = rejected
        est.step_ = float(step)

    def _fit_source(self):
        est, mu = self.est, self.mu_source
        cur, nxt = self.Y[0], self.Y[1]
        history = []
        for it in range(int(est.n_iter)):
            e = self.evaluate(cur, nxt, self.G[0], mu)
            history.append(e)
            cur, nxt = nxt, cur
            if est.tol is not None and it > 0 and abs(history[-2] - e) <= est.tol * history[-2]:
                break
        # The stress of the final positions: one more evaluation (its update is discarded).
        history.append(self.evaluate(cur, nxt, self.G[1], 0.0))
        self._finish(cur, history, len(history), 0, mu)

    def _fit_adaptive(self):
        est, dev = self.est, self.dev
        ya, yb, yc = self.Y
        ga, gb = self.G
        # Stress and direction at the start.
        e_a = self.evaluate(ya, yb, ga, 0.0)
        n_evals, history = 1, [e_a]
        with dev.phase("sammon/step"):
            dev.run(SQNORM, self.V, inputs={"G": ga})
            g2 = _reduce.total(dev, self.V)
        y0 = self._y0
        spread = float(np.sqrt(((y0 - y0.mean(axis=0)) ** 2).sum() / self.n))
        rms_g = math.sqrt(max(g2, 0.0) / self.n)
        step = start_step(self.mu_source, rms_g, spread)
        if step is None:
            self._finish(ya, history, n_evals, 0, 0.0)
            return
        with dev.phase("sammon/step"):
            dev.run(SAXPY, yb, inputs={"X": ga, "Y": ya}, uniforms={"alpha": step})
        rule = StepRule(step, est.tol)
        while n_evals < est.n_iter:
            # Evaluate candidate yb; its own update (with the grown step) goes to yc.
            e_b = self.evaluate(yb, yc, gb, rule.trial)
            n_evals += 1
            accepted, stop = rule.judge(e_a, e_b)
            if accepted:
                ya, yb, yc = yb, yc, ya
                ga, gb = gb, ga
                e_a = e_b
                history.append(e_b)
            if stop:
                break
            if not accepted:
                with dev.phase("sammon/step"):
                    dev.run(SAXPY, yb, inputs={"X": ga, "Y": ya},
                            uniforms={"alpha": rule.step})
        self._finish(ya, history, n_evals, rule.rejected, rule.step)


# ---- float64 reference (numpy) ----------------------------------------------------------------
def reference_terms(Dn, Y, dm_floor=0.0):
    """(stress, direction G) of eq. 1 and eq. 3 for positions Y in float64 (dense N x N)."""
    Y = np.asarray(Y, dtype=np.float64)
    diff = Y[:, None, :] - Y[None, :, :]
    Dm = np.sqrt((diff ** 2).sum(-1))
    mask = Dn > 0
    safe = np.where(mask, Dn, 1.0)
    E = np.where(mask, (Dn - Dm) ** 2 / safe, 0.0).sum() / Dn[mask].sum()
    W = np.where(mask, (Dn - Dm) / (safe * np.maximum(Dm, dm_floor if dm_floor > 0 else 1e-300)),
                 0.0)
    G = W.sum(1)[:, None] * Y - W @ Y
    return E, G


def reference_fit(X, Y0, n_iter, learning_rate=0.5, step="source"):
    """Float64 numpy Sammon with the same rules as :class:`Sammon` (dense; for N <= ~5,000).

    Returns (Y, stress history). ``step="source"``: eq. 3 with eq. 4's mu; ``"adaptive"``:
    the normalised first step (eq. 4's mu of X / scale, as :meth:`Sammon.fit` takes it) and
    the bold-driver rule of the class.
    """
    X = np.asarray(X, dtype=np.float64)
    sq = (X ** 2).sum(1)
    Dn = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0))
    np.fill_diagonal(Dn, 0.0)
    # exact zeros for duplicates
    Dn[Dn < 1e-9 * max(Dn.max(), 1e-300)] = 0.0
    n = len(X)
    sum_dn = Dn.sum()
    mu = 2.0 * learning_rate / sum_dn
    if step != "source":
        # the class applies learning_rate to X / scale_ (scale invariant): in the units of X
        # eq. 4's mu times scale^2
        mu *= data_scale(X)[1] ** 2
    floor = DM_FLOOR * sum_dn / (n * (n - 1))
    Y = np.asarray(Y0, dtype=np.float64).copy()
    E, G = reference_terms(Dn, Y, floor)
    hist = [E]
    if step == "source":
        for _ in range(n_iter):
            Y = Y + mu * G
            E, G = reference_terms(Dn, Y, floor)
            hist.append(E)
        return Y, hist
    spread = np.sqrt(((Y - Y.mean(0)) ** 2).sum() / n)
    rms_g = np.sqrt((G ** 2).sum() / n)
    a = mu
    ratio = a * rms_g / spread
    a *= min(max(ratio, STEP_MIN), STEP_MAX) / ratio
    evals, streak, rejected = 1, 0, 0
    while evals < n_iter:
        Yc = Y + a * G
        Ec, Gc = reference_terms(Dn, Yc, floor)
        evals += 1
        if Ec <= E:
            Y, E, G = Yc, Ec, Gc
            hist.append(E)
            a *= GROW if rejected else WARMUP_GROW
            streak = 0
        else:
            rejected += 1
            a *= SHRINK
            streak += 1
            if streak > 30:
                break
    return Y, hist
