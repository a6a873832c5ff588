"""Work per fragment of the library's kernels, for the cost model (:mod:`.model`).

Each entry is ``fn(args) -> {"flops", "fetches", "bytes"}``: the work ONE fragment does over a
whole call (for a kernel with a split loop, the whole range: the recorder adds it once per
observed call, whatever the number of passes the range is cut into). ``args`` is the call's
:class:`~shadergpgpu.engine.kernels.Args` (``args.X`` the layout of input/output X,
``args.uniforms``, ``args.defines``). A user's kernel that declares ``work=`` wins over these
tables (:func:`work_fn`); the library's kernels declare none: their work is here, by name
(:data:`DECLARED` first, then :data:`TABLE`, then :data:`FAMILIES`).

Counting conventions (the same for every kernel, so a calibrated rate absorbs the constant):

* flops: one per scalar float add, subtract or multiply; a vec4 multiply-add is 8, a 4-term
  dot product 7, a vec4 sigmoid ``1 / (1 + exp(-x))`` 16 (exp, add, divide, negate: 4 per
  lane), a vec4 ``exp(-g x)`` 8, an integer division or modulo in a loop 16 (``IDIV``: GPUs
  and CPU SIMD units have no vector integer divide). Other integer index arithmetic and
  comparisons are not counted.
* fetches: texel fetches (``X_texel``, ``X_at``, ``X_get``: one each, including fetches under a
  branch that most fragments take; buffer fetches count the same). Uniform-block reads are not
  fetches.
* bytes: 16 per render target written (an RGBA32F texel).
* buffer_fetches: the part of ``fetches`` that reads buffer textures (``samplerBuffer``), which
  the model prices at the buffer fetch rate.

Kernels found here by exact name are *counted* from their source (see each comment); the
families matched by :data:`FAMILIES` are counted from their loop declaration with per-iteration
constants read from the source; any other kernel gets :func:`generic` (an estimate from the
declared loop trips: 1 fetch and 8 flops per iteration plus one fetch per input), and
:func:`coverage` lists which is which.
"""
from __future__ import annotations

import re
import weakref
from typing import Callable

from ..engine.kernels import Args

SIG = 16        # vec4 sigmoid
IDIV = 16       # an integer division or modulo (no hardware divide: ~16 instructions)
EXP4 = 8        # vec4 exp(-g x)
MAD4 = 8        # vec4 multiply-add

TABLE: dict[str, Callable] = {}
FAMILIES: list[tuple[re.Pattern, Callable]] = []   # (name pattern, factory(kernel) -> fn(args))
#: work counted exactly for kernels matched by name pattern, before TABLE and FAMILIES (the
#: counts their packages used to declare with ``work=``)
DECLARED: list[tuple[re.Pattern, Callable]] = []


def _w(flops, fetches, nbytes, buffer_fetches=0) -> dict:
    return {"flops": float(flops), "fetches": float(fetches), "bytes": float(nbytes),
            "buffer_fetches": float(buffer_fetches)}


def _is_buffer(layout) -> bool:
    return getattr(layout, "kind", ("",))[0] == "buffer"


def quad_count(n) -> int:
    return -(-int(n) // 4)


def _entry(name: str, fn: Callable) -> None:
    TABLE[name] = fn


def _declared(pattern: str, fn: Callable) -> None:
    DECLARED.append((re.compile(pattern), fn))


def _family(pattern: str):
    def deco(factory):
        FAMILIES.append((re.compile(pattern), factory))
        return factory
    return deco


def _layouts(args) -> dict:
    return {k: v for k, v in vars(args).items() if k not in ("uniforms", "defines")}


def _trips(kernel, args) -> int:
    """Loop iterations one fragment runs over the whole call (split range included)."""
    return kernel.trips(_layouts(args), args.uniforms, args.defines)[0]


# ---- backpropagation: the paper's schedule ------------------------------------------------------
for _p in ("packed", "unpacked"):
    # Z (+)= W_at(i, j) * A_texel(i, l): one vec4 multiply, two fetches
    _entry(f"backprop/forward-accumulate-{_p}", lambda a: _w(4, 2, 16))
    # A' = sigmoid(Z) * mask
    _entry(f"backprop/activate-{_p}", lambda a: _w(SIG + 4, 1, 16))
    _entry(f"backprop/activate-fused-{_p}", lambda a: _w(SIG + 4, 1, 16))
    _entry(f"backprop/activate-output-{_p}", lambda a: _w(SIG + 4 + 16, 2, 32))
    # D = (y - t) y (1 - y) mask
    _entry(f"backprop/output-error-{_p}", lambda a: _w(20, 2, 16))
    # dW (+)= -eta vec_dot(D, A): a dot of 4 (packed) or one product
    _entry(f"backprop/update-accumulate-{_p}",
           (lambda a: _w(8, 2, 16)) if _p == "packed" else (lambda a: _w(2, 2, 16)))
    # D (+)= W_at * DUP * a * (1 - a)
    _entry(f"backprop/backprop-accumulate-{_p}", lambda a: _w(16, 3, 16))
    # loss: per (row, texel) step: a difference, a dot and an add
    _entry(f"backprop/loss-{_p}",
           lambda a: _w(12 * (a.Y.rows - 1) * a.uniforms["chunk"],
                        2 * (a.Y.rows - 1) * a.uniforms["chunk"], 16))
    # ---- fused schedule, direct kernels: one vec4 multiply-add and 2 fetches per input row
    _entry(f"backprop/forward-{_p}", lambda a: _w(MAD4 * a.A.rows + SIG + 4, 2 * a.A.rows, 16))
    _entry(f"backprop/forward-output-{_p}",
           lambda a: _w(MAD4 * a.A.rows + SIG + 4 + 16, 2 * a.A.rows + 1, 32))
    _entry(f"backprop/forward-sum-{_p}", lambda a: _w(MAD4 * a.A.rows, 2 * a.A.rows, 16))
    _entry(f"backprop/backprop-{_p}", lambda a: _w(MAD4 * a.W.cols + 12, 2 * a.W.cols + 1, 16))
    for _R in (1, 4, 8):
        # gather of the tiled product (P0 and the right target under a branch) + sigmoid
        _entry(f"backprop/activate-tile{_R}-{_p}",
               lambda a, R=_R: _w(SIG + 4, 1 + (R > 1), 16))
        _entry(f"backprop/activate-tile-output{_R}-{_p}",
               lambda a, R=_R: _w(SIG + 4 + 16, 2 + (R > 1), 32))
    for _R in (4, 8):
        # per K-quad: 4 DUP fetches + R W fetches (R/4 4x4 blocks, transposed), 32 R flops
        _entry(f"backprop/backprop-tile{_R}-{_p}",
               lambda a, R=_R: _w(32 * R * quad_count(a.W.cols), (4 + R) * quad_count(a.W.cols),
                                  16 * R))
        _entry(f"backprop/delta-tile{_R}-{_p}", lambda a: _w(12, 3, 16))


# register-tiled products of the fused schedule (tile_forward.frag, tile_partial.frag), every
# variant by its defines: TILE_ROWS R, ACTIVATE / OUTPUT_LAYER, RECOMPUTE (the lower layer made
# from X and WL in the kernel: per row a fetch of WL and f(4 multiply-adds), about 48 flops),
# FUSED_DELTA (the errors made from Dup and W': per row 4 multiply-adds and a (1 - a)).
REC = 48


def _bp_forward_tile(kernel):
    d = kernel.defines
    R, rc = int(d.get("TILE_ROWS", 1)), int(d.get("RECOMPUTE", 0))
    act, last = int(d.get("ACTIVATE", 0)), int(d.get("OUTPUT_LAYER", 0))
    nbytes = 16 * len(kernel.outputs)

    def fn(a):
        q = _trips(kernel, a)               # K-quads (the split range, or the direct loop)
        # per K-quad: R W texels and 4 B rows (fetched, or recomputed: a WL fetch + f each)
        flops = 32 * R + (4 * REC if rc else 0)
        fetch = R + 4
        extra_f, extra_x = (SIG + 4 + 16 * last, last) if act else (0, 0)
        return _w(q * flops + extra_f, q * fetch + extra_x + (4 if rc else 0), nbytes)
    return fn


def _bp_update_tile(kernel):
    d = kernel.defines
    R, rc, fd = int(d.get("TILE_ROWS", 1)), int(d.get("RECOMPUTE", 0)), int(
        d.get("FUSED_DELTA", 0))
    nbytes = 16 * len(kernel.outputs)

    def fn(a):
        low = a.X if (rc and not fd) else a.A
        b = min(int(a.uniforms["chunk"]), low.grid_w)      # training-vector texels
        flops, fetch = 32 * R, 4                             # the product; 4 lower rows
        if rc and not fd:
            flops += 4 * REC                                 # lower rows recomputed from X
        if fd:
            fetch += 4                                       # Dup rows 1 .. 4
            flops += R * (40 + (REC if rc else 0))
            fetch += 0 if rc else R                          # AH rows (or recomputed)
        else:
            fetch += R                                       # D rows
        return _w(b * flops, b * fetch + 2 * R, nbytes)
    return fn


_family(r"^backprop/forward-(tile|direct)")(_bp_forward_tile)
_family(r"^backprop/update-(fused-)?tile")(_bp_update_tile)


def _apply_tile(R):
    def fn(a):
        n = a.P0.rows // -(-a.W.cols // R)       # chunks s summed per fragment
        return _w(4 * n + 8, 2 * n + 1, 16)
    return fn


for _R in (1, 4, 8):
    _entry(f"backprop/apply-tile{_R}", _apply_tile(_R))
_entry("backprop/grid-view", lambda a: _w(0, 1, 16))

# ---- SGEMM ------------------------------------------------------------------------------------
for _R in (4, 8):
    # per K-quad q: 4 B texels + R A texels, R x 4 vec4 multiply-adds = 32 R flops; B is staged
    # padded (B.rows a multiple of 4 UNROLL), the split covers all B.rows / 4 quads
    _entry(f"sgemm/tile{_R}x4",
           lambda a, R=_R: _w(32 * R * (a.B.rows // 4), (4 + R) * (a.B.rows // 4), 16 * R,
                              R * (a.B.rows // 4) * _is_buffer(a.A)))
    # uniform-block variant: A from a uniform block (no texel fetch), ks_n steps of UNROLL quads
    _entry(f"sgemm/tile{_R}x4-ubo",
           lambda a, R=_R: _w(32 * R * a.uniforms["ks_n"] * a.defines["UNROLL"],
                              4 * a.uniforms["ks_n"] * a.defines["UNROLL"], 16 * R))
    # epilogue: gather P<t> (P0 + the right one), alpha p (+ beta C read by lane)
    _entry(f"sgemm/combine{_R}", lambda a: _w(4, 2, 16))
    _entry(f"sgemm/combine{_R}+C", lambda a: _w(12, 6, 16))
_entry("sgemm/combine0+C", lambda a: _w(4, 4, 16))
# simple: per K-quad 1 A texel + 4 B texels, 4 vec4 multiply-adds
_entry("sgemm/simple", lambda a: _w(32 * (a.B.rows // 4) + 4, 5 * (a.B.rows // 4), 16,
                                    (a.B.rows // 4) * _is_buffer(a.A)))
_entry("sgemm/simple+C", lambda a: _w(32 * (a.B.rows // 4) + 12, 5 * (a.B.rows // 4) + 4, 16,
                                      (a.B.rows // 4) * _is_buffer(a.A)))
# staging: one element read per lane
_entry("sgemm/stage", lambda a: _w(0, 4, 16, 4 * _is_buffer(a.X)))
_entry("sgemm/stage-block", lambda a: _w(0, 4, 16, 4 * _is_buffer(a.X)))


# ---- blur (exact FIR): 2R + 1 taps, a weight fetch and a pixel fetch per tap --------------------
# The reflected border (BORDER 0) folds each tap's index with an integer division (IDIV).
def _fir(a):
    r = int(a.uniforms["R"])
    taps = 2 * r + 1
    fold = IDIV if int(a.defines.get("BORDER", 0)) == 0 else 2
    if a.defines.get("AXIS", 0) == 0 and a.defines.get("GRAY", 0):
        # texels within R pixels of a row's ends: four pixels per texel, a scalar walk each
        # (multiply-add, index fold, 2 fetches per tap); the others (interior) take whole
        # texels: per 4 distances 4 texel fetches, per distance a weight fetch and 2 vec4
        # differences, a vec4 sum and a vec4 multiply-add (20 flops)
        n = max(int(a.OUT.cols), 1)
        edge = min(1.0, 2.0 * (r + 4) / n)
        dist = r + 1
        flops = edge * 4 * (2 + fold) * taps + (1 - edge) * 20 * dist
        fetches = edge * 8 * taps + (1 - edge) * (dist + 4 * -(-dist // 4))
        return _w(flops, fetches, 16)
    return _w((MAD4 + fold) * taps, 2 * taps, 16)


for _n in ("blur/fir-h", "blur/fir-h-gray", "blur/fir-v"):
    _entry(_n, _fir)

# ---- RBF kernel rows (ops/rbf) and the SVM built on them --------------------------------------
# per feature texel d4: 2 XR fetches, 4 XC fetches, 4 x (2 differences + 2 squares-and-adds)
RBF_D4 = (96, 6)
RBF_ONE_D4 = (48, 5)


def _features(a) -> int:
    return a.XR.grid_w


_entry("rbf/pair", lambda a: _w(RBF_D4[0] * _features(a) + 2 * EXP4,
                                RBF_D4[1] * _features(a), 32))
_entry("rbf/pair_d2", lambda a: _w(RBF_D4[0] * _features(a), RBF_D4[1] * _features(a), 32))
_entry("rbf/exp_pair", lambda a: _w(2 * EXP4, 2, 32))
# SVM: the objective walks the features against one point, the update against two
_entry("svm/objective", lambda a: _w(RBF_ONE_D4[0] * _features(a) + EXP4 + 24,
                                     RBF_ONE_D4[1] * _features(a) + 4, 16))
_entry("svm/objective_d2", lambda a: _w(RBF_ONE_D4[0] * _features(a),
                                        RBF_ONE_D4[1] * _features(a) + 1, 16))
_entry("svm/objective_from_d2", lambda a: _w(EXP4 + 24, 5, 16))
_entry("svm/update", lambda a: _w(RBF_D4[0] * _features(a) + 2 * EXP4 + 20,
                                  RBF_D4[1] * _features(a) + 3, 32))
_entry("svm/update_from_d2", lambda a: _w(2 * EXP4 + 20, 5, 32))
# the device-step variants: the same walks plus the two-variable step solved per fragment
# from the selection results (a few texel reads, ~40 flops); KSRC 0 walks x_i, x_j too
_entry("svm/pair_d2_step", lambda a: _w(RBF_D4[0] * _features(a) + 40,
                                        RBF_D4[1] * _features(a) + 2, 32))
for _k in (0, 1, 2):
    _entry(f"svm/update_step{_k}",
           lambda a, k=_k: _w(RBF_D4[0] * _features(a) * (1 + (k == 0)) + 2 * EXP4 + 60,
                              RBF_D4[1] * _features(a) * (1 + (k == 0)) + 6, 32)
           if hasattr(a, "XR") else _w(2 * EXP4 + 60, 8, 32))
_entry("svm/update_step_from_d2", lambda a: _w(2 * EXP4 + 60, 8, 32))


# ---- Sammon's sweep (update.frag, rowsum.frag over source_dist.glsl) ---------------------------
# The split range is n_blk units: points for "rows", packed columns of four points otherwise.
# Per point j: the source distance (rows: per coordinate texel 2 fetches, a difference, a dot
# and an add = 12 flops, then a sqrt; columns: per coordinate a quarter of a texel and of an
# element fetch, 3 flops; cached: a quarter of a texel of D), then the update's terms (one Y
# fetch; difference, dot, sqrt, stress and gradient terms, about 30 flops) or the row sum's
# (about 6 flops).
def _sammon(source: str, update: bool):
    def fn(a):
        units = int(a.uniforms["n_blk"])
        if source == "rows":
            pts, d_fetch, d_flops = units, 2 * a.X.grid_w, 12 * a.X.grid_w + 4
        elif source == "columns":
            pts, d_fetch, d_flops = 4 * units, 0.5 * a.X.cols, 3 * a.X.cols + 1
        else:
            pts, d_fetch, d_flops = 4 * units, 0.25, 0
        fetch = d_fetch + (1 if update else 0)
        flops = d_flops + (30 if update else 6)
        return _w(pts * flops + 8, pts * fetch + 1, 48 if update else 16)
    return fn


for _src in ("rows", "columns", "cached"):
    _entry(f"sammon/update-{_src}", _sammon(_src, True))
for _src in ("rows", "columns"):
    _entry(f"sammon/rowsum-{_src}", _sammon(_src, False))
_entry("sammon/sqnorm", lambda a: _w(8, 1, 16))


# ---- loop-declared families: per-iteration constants x the declared trips ---------------------
def _per_trip(flops_it, fetch_it, flops0=0, fetch0=0):
    """factory: work = trips x (flops_it, fetch_it) + (flops0, fetch0), 16 bytes per output."""
    def factory(kernel):
        nbytes = 16 * len(kernel.outputs)

        def fn(a):
            t = _trips(kernel, a)
            return _w(flops_it * t + flops0, fetch_it * t + fetch0, nbytes)
        return fn
    return factory


# reductions (ops/reduce): FANIN texels per fragment, 4 lanes each; the declared loop is
# 5 FANIN + 4 (the lane loop counted): count FANIN fetches and a vec4 op per texel
# (the first levels locate each texel with X_grid_of: an integer division; the arg-min / arg-max
# levels after the first step through the texture without one); the SVM selections also test
# the working-set conditions per lane (~32 flops more)
def _reduce(extra=0, idiv=True):
    def factory(kernel):
        nbytes = 16 * len(kernel.outputs)
        n_in = max(1, sum(1 for k in kernel.inputs if k != "P0"))

        def fn(a):
            f = int(a.defines.get("FANIN", 16))
            return _w((8 + (IDIV if idiv else 2) + extra) * f, n_in * f, nbytes)
        return fn
    return factory


_family(r"^reduce/(sum|dot|norm)\[")(_reduce())
_family(r"^reduce/argbest_first")(_reduce(8))
_family(r"^reduce/argbest")(_reduce(8, idiv=False))
_family(r"^svm/select_")(_reduce(40, idiv=False))
# sammon: the tiled sweep and its finish (loop-declared estimate)
_family(r"^sammon/tile")(_per_trip(48, 4, 16, 2))
_family(r"^sammon/(dist|finish)")(_per_trip(16, 1, 8, 1))
# blur IIR (recursive Gaussian): the declared trips count the inner loops too (1 + 3 per
# texel step in apply.frag): per texel one fetch and, per pole pair and lane group, a complex
# scale-add and a complex power step (about 80 flops): ~20 flops and 1/4 fetch per trip
_family(r"^blur/(reduce|carry|apply|combine|down)\[")(_per_trip(20, 0.25, 8, 1))
_family(r"^blur/(interleave|transpose)")(_per_trip(0, 1, 0, 1))
_family(r"^ops/scan/")(_per_trip(0, 0, 4, 2))
_family(r"^ops/sort/")(_per_trip(0, 0, 8, 4))


# ---- counted exactly, by name pattern (before TABLE and FAMILIES) ----------------------------
# the engine's own kernels
_declared(r"^engine/fill$", lambda a: {"flops": 0, "fetches": 0})
_declared(r"^engine/copy$", lambda a: {"flops": 0, "fetches": 1})
_declared(r"^engine/saxpy$", lambda a: {"flops": 8, "fetches": 2})
_declared(r"^engine/combine$", lambda a: {"flops": 4, "fetches": 2})


# ops/sort: no float arithmetic (integer comparisons are not
# counted), 8 "flops" for the two vec4 selections of a (half or lane) compare-exchange stage.
def _init_work(args) -> dict:
    # 8 elements read (one fetch each); 6 lane stages and a texel compare-exchange
    return {"flops": 8.0 * 7, "fetches": 8.0, "bytes": 32.0}


def _fold_work(args) -> dict:
    # GT texels of keys and of indices read; GT - 1 half compare-exchanges, 2 lane stages
    gt = int(args.defines["GT"])
    lanes = 2 if args.uniforms.get("lanes") else 0
    return {"flops": 8.0 * (gt - 1 + lanes), "fetches": 2.0 * gt, "bytes": 32.0}


_declared(r"^ops/sort/bitonic_init", _init_work)
_declared(r"^ops/sort/bitonic_fold", _fold_work)


# SGEMM: staging, the uniform-block variants with B transposed and their epilogue
def _stage_work(a):
    # one element read per lane, or one texel per output texel (TEXELS: X packed row-major)
    n = 1 if a.defines["TEXELS"] else 4
    buf = getattr(a.X, "kind", ("",))[0] == "buffer"
    return {"flops": 0.0, "fetches": float(n), "bytes": 16.0, "buffer_fetches": float(n * buf)}


def _ubo_bt_work(a):
    # per K-quad: TILE_COLS texels of op(B)^T, 4 N_OUT elements x 4 multiply-adds = 32 N_OUT
    # flops; A from the uniform block (no fetch)
    quads = a.uniforms["ks_n"] * a.defines["UNROLL"]
    return {"flops": 32.0 * a.defines["N_OUT"] * quads,
            "fetches": float(a.defines["TILE_COLS"] * quads), "bytes": 16.0 * a.defines["N_OUT"]}


def _combine_ubo_work(a):
    # 4 / TILE_COLS texels of the targets, alpha p; with C: 4 lanes of C read, beta c added
    has_c = a.defines["HAS_C"]
    return {"flops": 4.0 + 8.0 * has_c, "fetches": 4.0 / a.defines["TILE_COLS"] + 4.0 * has_c,
            "bytes": 16.0}


_declared(r"^sgemm/stage(-block)?$", _stage_work)
_declared(r"^sgemm/ubo-bt\d", _ubo_bt_work)
_declared(r"^sgemm/combine-ubo\d", _combine_ubo_work)


# backprop: the forward product on uniform-block windows and its gather; the recompute path
def _ubo_forward_work(a):
    # per K-quad: 4 texels of A, R vec4 of W from the block (no fetch), R x 16 multiply-adds
    quads = quad_count(a.A.rows)
    R = a.defines["TILE_ROWS"]
    return {"flops": 32.0 * R * quads, "fetches": 4.0 * quads, "bytes": 16.0 * R}


def _ubo_gather_work(a):
    # one target texel read (the branch every fragment of a block takes alike), f, the mask;
    # the output layer also reads T and writes the error
    last = "T" in vars(a)
    return {"flops": 20.0 + 12 * last, "fetches": 1.0 + last, "bytes": 16.0 * (1 + last)}


def _rc_forward_work(a):
    # a computing fragment (rows r > 0 of the output layer; row 0 writes its constant): the
    # inputs scaled once (4 per row); per hidden unit (4 nq - 1 of them, the threshold row
    # being a constant) the weight w0 scaled (1), IN_ROWS - 1 vec4 multiply-adds, a vec4
    # sigmoid and the output's multiply-add; then the output's scale, sigmoid, mask and error
    # (4 + 16 + 4 + 12); X rows 1 .. IN_ROWS - 1 and T
    rows = a.defines["IN_ROWS"]
    per_unit = 1 + 8 * (rows - 1) + 16 + 8
    units = 4 * a.uniforms["nq"] - 1
    live = (a.OUT.rows - 1) / a.OUT.rows
    return {"flops": live * (4 * (rows - 1) + units * per_unit + 36),
            "fetches": live * rows, "bytes": 32.0}


def _rc_gradient_work(a):
    # per training-vector texel: IN_ROWS - 1 X texels and OUTS error texels; the activation
    # (IN_ROWS - 1 vec4 multiply-adds, a sigmoid), e = a (1 - a) (sum_o W2[i][o] d_o) (12, and
    # 8 per output past the first), IN_ROWS gradient sums (4 + 8 each past the first) and OUTS
    # (8 each); once: the weights (1 + OUTS fetches, 4 to scale), the lane sums (2 x 4 dots of
    # 7) and with one output the sums times its weight (16)
    rows, outs = a.defines["IN_ROWS"], a.defines["OUTS"]
    texels = a.X.grid_w / a.OUT0.rows
    per = 8 * (rows - 1) + 16 + 12 + 8 * (outs - 1) + 4 + 8 * (rows - 1) + 8 * outs
    return {"flops": texels * per + 4 + 56 + 16 * (outs == 1),
            "fetches": texels * (rows - 1 + outs) + 1 + outs, "bytes": 32.0}


def _rc_apply_work(a):
    # per chunk one P texel (layer 1) or four (layer 2) added; the weights, eta, the mask
    per = 1 if a.defines["LAYER"] == 1 else 4
    return {"flops": 4.0 * a.P.rows + 12, "fetches": per * a.P.rows + 1.0, "bytes": 16.0}


_declared(r"^backprop/forward-ubo\d", _ubo_forward_work)
_declared(r"^backprop/activate-ubo", _ubo_gather_work)
_declared(r"^backprop/rc-forward-", _rc_forward_work)
_declared(r"^backprop/rc-gradient-", _rc_gradient_work)
_declared(r"^backprop/rc-apply\d", _rc_apply_work)


def generic(kernel) -> Callable:
    """Estimate for a kernel nobody counted: 8 flops and 1 fetch per declared loop iteration,
    plus one fetch per input and 8 flops."""
    nbytes = 16 * len(kernel.outputs)
    n_in = len(kernel.inputs)

    def fn(a):
        try:
            t = _trips(kernel, a)
        except (AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError):
            t = 0
        return _w(8 * t + 8, t + n_in, nbytes)
    return fn


def lookup(kernel, fallback: bool = True) -> Callable | None:
    """The work function for ``kernel`` (by name): the declared patterns, the table, a family,
    or the generic estimate (``fallback``); None for none."""
    fn = next((f for p, f in DECLARED if p.search(kernel.name)), None)
    if fn is not None:
        return fn
    fn = TABLE.get(kernel.name)
    if fn is None:
        for pat, factory in FAMILIES:
            if pat.search(kernel.name):
                fn = factory(kernel)
                break
    if fn is None:
        return generic(kernel) if fallback else None
    return _safe(fn, kernel) if fallback else fn


def _safe(fn, kernel) -> Callable:
    """``fn``, falling back to :func:`generic` for a call whose shapes it does not expect
    (the model must never break a kernel call)."""
    est = generic(kernel)

    def call(a):
        try:
            return fn(a)
        except (AttributeError, KeyError, TypeError, ValueError, ZeroDivisionError):
            return est(a)
    return call


def coverage(kernels) -> dict:
    """{"declared": [...], "counted": [...], "family": [...], "estimated": [...]} names."""
    out = {"declared": [], "counted": [], "family": [], "estimated": []}
    for k in kernels:
        if getattr(k, "work", None) is not None or any(p.search(k.name) for p, _ in DECLARED):
            out["declared"].append(k.name)
        elif k.name in TABLE:
            out["counted"].append(k.name)
        elif any(p.search(k.name) for p, _ in FAMILIES):
            out["family"].append(k.name)
        else:
            out["estimated"].append(k.name)
    return {k: sorted(v) for k, v in out.items()}


_FNS = weakref.WeakKeyDictionary()     # kernel -> its work function from lookup


def work_fn(kernel) -> Callable | None:
    """The work function of ``kernel``: its own ``work=``, else :func:`lookup`'s."""
    fn = kernel.work
    if fn is not None:
        return fn
    got = _FNS.get(kernel)
    if got is None:
        got = _FNS[kernel] = lookup(kernel)
    return got


def work_of(kernel, layouts: dict, uniforms: dict, defines: dict,
            size: tuple | None = None) -> tuple | None:
    """(flops, fetches, bytes written, buffer fetches, kernel name, width, height) of one
    fragment over a whole call (the buffer fetches are the part of the fetches that read
    buffer textures; the name lets the cost model price each kernel's draws apart; width and
    height: the drawn rectangle, ``size``, else the first output's texture, whose tiles the
    model counts), or None."""
    fn = work_fn(kernel)
    if fn is None:
        return None
    w = fn(Args(layouts, uniforms, defines))
    if size is None:
        out = layouts.get(next(iter(kernel.outputs), None))
        size = out.tex_size if out is not None else (0, 0)
    return (float(w.get("flops", 0)), float(w.get("fetches", 0)),
            float(w.get("bytes", 16 * len(kernel.outputs))),
            float(w.get("buffer_fetches", 0)), kernel.name, int(size[0]), int(size[1]))
