"""The Sammon kernels, declared once: the pair update (:data:`UPDATE`, per source), the row sums
of dn (:data:`ROW_SUMS`), the tiled update (:data:`TILE`) and its finishing pass
(:data:`FINISH`), the cached distances (:data:`DISTANCES`) and |G|^2
(:data:`SQUARED_NORMS`); their loop costs and splits, and which update kernel a fit runs
(:func:`sweep_source`, :func:`update_kernel`). Shaders: ``shaders/algorithms/sammon/``."""
from __future__ import annotations

from ...engine.kernels import In, Split, declare
from ...engine.limits import ceil_div
from . import tiles
from .chunking import sweep_align
from .tuning import SammonTuning

_DEFAULT = SammonTuning()

#: Values of the shaders' SOURCE define (the three ways the source lives on the device).
SOURCES = {"rows": 0, "columns": 1, "cached": 2}


def block_cost(source: str, n_features: int, jb=None) -> int:
    """Loop iterations one fragment runs per unit of the sweep (nested loops counted
    together): per block of four points, its own iteration, the coordinate loop of the
    distances and the loop over the four pairs; for "rows" (a unit is one point) a quarter of
    that, rounded up. "tiled" (blocks of eight points, the pairs unrolled): its own iteration,
    the coordinate loop and, at worst, the exact recomputation loop, an eighth of that per
    point."""
    if source == "tiled":
        return ceil_div(1 + 2 * ceil_div(n_features, 4), int(jb or _DEFAULT.tile_jb))
    inner = {"rows": ceil_div(n_features, 4), "columns": int(n_features), "cached": 0}[source]
    per_block = 1 + inner + 4
    return ceil_div(per_block, 4) if source == "rows" else per_block


def sweep_cost(source):
    if source == "cached":
        return lambda a: block_cost("cached", 0)
    return lambda a: block_cost(source, a.X.cols)


def dist_loop(a) -> int:
    """DIST: the distances of one texel's lanes (one coordinate loop per lane for "rows", one
    shared loop for "columns")."""
    if int(a.defines["SOURCE"]) == SOURCES["rows"]:
        return 4 * (1 + ceil_div(a.X.cols, 4))
    return 1 + a.X.cols


def sweep_split(source):
    return Split("blk", length=lambda a: a.uniforms["n_blk"], cost=sweep_cost(source),
                 align=sweep_align(source))


HINT = "use fewer features (n), or cache=False"
UPDATE_UNIFORMS = {"mu": "float", "keep_prev": "float", "dm_floor": "float", "blk0": "int",
                    "n_blk": "int"}

#: One Sammon iteration over the sweep units blk0 + [0, n_blk), per source (distances
#: recomputed from row-major or column-major X, or read from the cached N x N matrix D).
#: Y_STEP, Y_DIMS (defines of the call): y_j's texel stepped along the sweep instead of
#: Y_texel(j, 0) per pair, and the pair terms in the positions' m components (update.frag;
#: :func:`~.geometry.fit_geometry` chooses them).
UPDATE = {
    src: declare("algorithms/sammon/update.frag",
                 inputs={("D" if src == "cached" else "X"):
                         In(packed=True, order="col" if src == "columns" else "row"),
                         "Y": In(like="OUT0")},
                 outputs=3, uniforms=UPDATE_UNIFORMS,
                 defines={"SOURCE": SOURCES[src], "Y_STEP": 0, "Y_DIMS": 4},
                 split=sweep_split(src), name=f"sammon/update-{src}", hint=HINT)
    for src in SOURCES}
#: Row sums of dn over the sweep units blk0 + [0, n_blk) (eq. 4's sum when nothing is cached).
ROW_SUMS = {
    src: declare("algorithms/sammon/rowsum.frag",
                 inputs={"X": In(packed=True, order="col" if src == "columns" else "row")},
                 uniforms={"blk0": "int", "n_blk": "int"}, defines={"SOURCE": SOURCES[src]},
                 split=sweep_split(src), name=f"sammon/rowsum-{src}", hint=HINT)
    for src in ("rows", "columns")}
def tile_block(a) -> int:
    """Loop iterations of one block of the tiled sweep (at worst: with the exact pass): its
    own, the coordinate loop (UNROLL texels a step) and the exact loop (one texel a step)."""
    pt = int(a.uniforms["pt_texels"])
    return 1 + ceil_div(pt, int(a.defines.get("UNROLL", 1))) + pt


def tile_split(jb):
    # A fragment sweeps 1 / n_part of a pass's blocks, rounded up: per point of the range
    # ceil(block / (JB n_part)) iterations, plus one block for the rounding.
    return Split("blk", length=lambda a: a.uniforms["n_blk"],
                 cost=lambda a: ceil_div(tile_block(a), jb * int(a.uniforms["n_part"])),
                 extra=tile_block, align=jb)



def tile_names(k):
    return tuple(f"G{a}" for a in range(k))


def tile_outputs(k, s_lane):
    return tile_names(k) + (() if s_lane else ("S",))


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
                         outputs=tile_outputs(k, sl),
                         uniforms={"dm_floor": "float", "blk0": "int", "n_blk": "int",
                                   "n_pts": "int", "pt_texels": "int", "pts_row": "int",
                                   "n_part": "int"},
                         defines={"K_PTS": k, "JB": jb, "S_LANE": int(sl), "UNROLL": 1,
                                  "IL": 0},
                         split=tile_split(jb),
                         name=f"sammon/tile{k}x{jb}" + ("w" if sl else ""), hint=HINT)
    for k, sl in TILE_SHAPES for jb in (8, 16, 32)}
#: From the tile sums back to one texel per point: next = prev + mu g (eq. 3), g and s.
FINISH = {
    (k, sl): declare("algorithms/sammon/finish.frag",
                     inputs=dict({n: In(packed=True, order="row")
                                  for n in tile_outputs(k, sl)}, Y=In(like="OUT0")),
                     outputs=3, uniforms={"mu": "float", "n_part": "int"},
                     defines={"K_PTS": k, "S_LANE": int(sl)},
                     loop=lambda a: a.uniforms["n_part"],
                     name=f"sammon/finish{k}" + ("w" if sl else ""))
    for k, sl in TILE_SHAPES}
#: The N x N source distances (cache=True), from either X layout (SOURCE 0 or 1); SHARED
#: (define of the call): row-major X's four lanes of a texel from one block (dist.frag).
DISTANCES = declare("algorithms/sammon/dist.frag", inputs={"X": In(packed=True)},
               defines={"SOURCE": SOURCES["rows"], "SHARED": 0}, loop=dist_loop,
               name="sammon/dist",
               hint="use cache=False (the distances are then recomputed per block)")
#: |G_i|^2 per point (adaptive step: the squared norm of the direction with a sum).
SQUARED_NORMS = declare("algorithms/sammon/sqnorm.frag", inputs={"G": In(packed=True, order="row")},
                 name="sammon/sqnorm")


def sweep_source(layout: str, cached: bool, tiled: bool = True) -> str:
    """Which update runs: "cached", "tiled" (rows, recomputed, ``SammonTuning.tile_rows``),
    "rows" (the pair kernel) or "columns"."""
    if cached:
        return "cached"
    return "tiled" if layout == "rows" and tiled else layout


def update_kernel(source: str, max_outputs: int = 8, jb=None, s_lane=None, k_pts=None):
    """The update kernel of ``source``; for "tiled" the TILE of ``k_pts`` points (default
    :func:`tile_points`), ``jb`` points per block and s in g's w lane or not (``s_lane``;
    None: :func:`tile_s_lane`)."""
    if source == "tiled":
        sl = tiles.tile_s_lane() if s_lane is None else bool(s_lane)
        k = int(k_pts) if k_pts else tiles.tile_points(max_outputs, sl)
        return TILE[(k, int(jb or _DEFAULT.tile_jb), sl)]
    return UPDATE[source]

