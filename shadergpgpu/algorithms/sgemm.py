"""SGEMM with B read through the texture path: ``C = alpha op(A) op(B) + beta C``.

The structure follows the Adreno kernel of source 001 in fragment-shader form:

* **A** goes through the *plain buffer path*: a GL buffer read by the shader as a
  ``samplerBuffer`` with ``texelFetch`` (a texture buffer object, :mod:`shadergpgpu.engine.glraw`),
  packed row-major, one texel = 4 consecutive K of one row (:class:`~shadergpgpu.engine.layout.BufferLayout`).
* **B** goes through the *2-D texture path*: an RGBA32F texture, one texel = 4 columns.
* Each fragment computes an **8-row x 4-column micro-tile** (``vec4 c0..c7``) and writes it through
  **8 render targets**; a last pass (the epilogue) gathers the 8 targets into C and applies
  ``alpha`` and ``beta``. K can be split over several passes summed by additive blending (more
  fragments in flight for small outputs).

Variants (``variant=``):

``"auto"`` (default)
    The faster of the two 8x4 variants on the device (:func:`default_variant`).
``"tile8x4"``
    A through the buffer path, B through the texture path, 8x4 micro-tile, 8 render targets.
``"tile8x4-tex"``
    The same with A also through a 2-D texture.
``"tile4x4"``
    A 4x4 tile through 4 render targets (fewer outputs, more fragments), for comparison.
``"simple"``
    One output texel (1 x 4) per fragment, A through the buffer path; K slices (where needed)
    are summed into C by additive blending.
``"tile8x4-ubo"``
    The 8x4 micro-tile with A from a **uniform buffer** (:mod:`shadergpgpu.engine.blocks`):
    one draw covers one 8-row block of C, so every fragment of it reads the same A values
    (the constant cache serves them; a K-quad costs 4 texel fetches of B per 256 flops instead
    of 12, past the texel-fetch bound of the texture paths). A is staged into block windows
    (8 rows x one K chunk as vec4 quads, at most GL_MAX_UNIFORM_BLOCK_SIZE bytes: 2,048 K per
    chunk at 64 KiB); the host draws one rectangle per block row and K chunk (one prepared
    pass, :meth:`~shadergpgpu.engine.passes.Pass.sweep`, moving the window between draws),
    later chunks adding by blending (see below without float blending). Block row i's texels
    form a band x width rect of the 8 targets (a 2-D rect keeps pixel quads full), the rects
    tiling the targets about ``UBO_TARGET_W`` texels wide (at n = 4096: 32 x 32 rects in a
    1024 x 512 target, the shape of one full-screen draw); the epilogue reads them back.
``"tile16x2-ubo"``, ``"tile32x1-ubo"``
    The same with **B transposed** (staged as op(B)^T, one texel = 4 K of one column of C) and
    a 16 x 2 (32 x 1) micro-tile per fragment in the same 8 targets: a K-quad costs 2 (1) texel
    fetches of B per 256 flops (the 8x4 tile: 4) for 16 (32) uniform vec4 reads of A (the
    8x4 tile: 8), trading texel fetches for constant-cache reads; windows hold 1,024 (512) K.
    None of the uniform-block variants is the ``auto`` choice until measured on a GPU (see
    :func:`default_variant`; ``benchmarks/diag/sgemm_ubo.py`` times them against each other).

**Device profiles** (``Device(profile=...)``, :mod:`shadergpgpu.engine.profiles`): every variant
adapts to the device's limits instead of failing (:func:`effective_variant`): the micro-tile
shrinks to 4 rows where the device has fewer than 8 render targets (1 row, the simple kernel,
below 4; the transposed-B tiles halve their rows: 16x2 -> 8x2), A goes through the 2-D texture
path where there are no buffer textures (or, for the uniform-block variants, no uniform blocks:
GLSL 1.10; then the 8x4 tile), K slices are combined with ``accumulate="add"`` (ping-pong
passes where float32 blending is missing; the uniform-block variants draw each later K chunk
into fresh targets and add them with one pass per target)
and every loop stays within the profile's cap. :func:`work` and the registered pass plans take
the device (or its :class:`Limits`), so plan and pass counter agree under every profile.

Every kernel is declared once below (:func:`~shadergpgpu.engine.kernels.declare`): sizes reach
the shaders as uniforms, so one program serves every shape of a layout kind. The K loop of the
product kernels is a :class:`~shadergpgpu.engine.kernels.Split` range: the engine cuts it over
blended passes so that one fragment never runs more loop iterations than the device's loop cap
(``dev.loop_cap``: Mesa llvmpipe silently stops longer loops); on GPUs :func:`auto_split` asks
for more K slices when the output is small (more fragments in flight).

Any shapes work: inputs are staged into zero-padded copies (M to a multiple of the tile rows, K
to a multiple of 4 * unroll) on the host for numpy inputs or by a staging pass for device arrays
(one texel fetch per output texel where the input is packed row-major and not transposed, one
per lane otherwise), so the kernels never branch on edges; the padding never reaches the
result. Arrays wider than the texture limit wrap (the layout accessors handle it).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np

from ..engine import validation as V
from ..engine.arrays import DeviceArray
from ..engine.builtin import SAXPY
from ..engine.blocks import (BlockArray, BlockLayout, has_uniform_blocks, max_block_bytes,
                             offset_alignment)
from ..engine.errors import LoopBudgetError, TooLargeError
from ..engine.glraw import BufferArray, max_texture_buffer_size
from ..engine.kernels import In, Split, declare
from ..engine.layout import BufferLayout, Layout
from ..engine.limits import ceil_div
from ..engine.plans import PassPlan, register_plan

__all__ = ["sgemm", "VARIANTS", "DEFAULT_VARIANT", "default_variant", "effective_variant",
           "work", "auto_split", "min_split", "Limits", "STAGE", "STAGE_BLOCK", "SIMPLE",
           "SIMPLE_C", "TILE", "TILE_UBO", "COMBINE"]

_HINT = "K is cut across passes automatically; this device's loop cap is too small for one step"

# ---- kernels ----------------------------------------------------------------------------------
_A = In(buffer="either", packed=True, order="row")   # staged A: texture buffer or 2-D texture
_B = In(packed=True, order="row")                    # staged B: 2-D texture

def _stage_work(a):
    # one element read per lane, or one texel per output texel (TEXELS: X packed row-major)
    n = 1 if a.defines["TEXELS"] else 4
    buf = getattr(a.X, "kind", ("",))[0] == "buffer"
    return {"flops": 0.0, "fetches": float(n), "bytes": 16.0, "buffer_fetches": float(n * buf)}


#: op(X) zero-padded into a packed row-major array (TRANS: X transposed); X of any layout,
#: a BufferArray included (TEXELS 1 where X is packed row-major and not transposed: one fetch
#: per output texel).
STAGE = declare("algorithms/sgemm/stage.frag", inputs={"X": In(buffer="either")},
                defines={"TRANS": 0, "TEXELS": 0}, loop=lambda a: 4, work=_stage_work,
                name="sgemm/stage")


def _simple(has_c: bool):
    inputs = {"A": _A, "B": _B, **({"C": In()} if has_c else {})}
    return declare(
        "algorithms/sgemm/simple.frag", inputs=inputs,
        uniforms={"alpha": "float", **({"beta": "float"} if has_c else {})},
        defines={"HAS_C": int(has_c)},
        # K-quads of the staged B; 4 more iterations for the lane loop reading C
        split=Split("kq", length=lambda a: a.B.rows // 4, cost=1, extra=4 if has_c else 0),
        name="sgemm/simple+C" if has_c else "sgemm/simple", hint=_HINT)


#: simple variant: C = alpha A B (+ beta C with SIMPLE_C), one output texel per fragment.
SIMPLE = _simple(False)
SIMPLE_C = _simple(True)


def _tile(rows: int):
    # one loop iteration per step of UNROLL K-quads (the steps are unrolled by hand)
    return declare(
        "algorithms/sgemm/tile8x4.frag", inputs={"A": _A, "B": _B}, outputs=rows,
        defines={"TILE_ROWS": rows, "UNROLL": 2},
        split=Split("ks", length=lambda a: a.B.rows // (4 * a.defines["UNROLL"]), cost=1),
        name=f"sgemm/tile{rows}x4", hint=_HINT)


#: micro-tile product kernels by tile rows: P (rows x 4 per fragment) into ``rows`` targets.
TILE = {8: _tile(8), 4: _tile(4)}


def _tile_ubo(rows: int):
    # one draw = one block row and K chunk: ks_n steps of UNROLL K-quads, at most the window's
    # quads (the declared loop is that bound, checked against the device's cap)
    return declare(
        "algorithms/sgemm/tile8x4_ubo.frag", inputs={"A": In(block=True), "B": _B},
        outputs=rows, uniforms={"kq0": "int", "ks_n": "int", "geo": "ivec4"},
        defines={"TILE_ROWS": rows, "UNROLL": 2, "QUAD_ORDER": 0},
        loop=lambda a: a.A.vec4s // (a.defines["TILE_ROWS"] * a.defines["UNROLL"]),
        name=f"sgemm/tile{rows}x4-ubo", hint=_HINT)


#: uniform-block product kernels by tile rows (A from a block window, B from a texture).
TILE_UBO = {8: _tile_ubo(8), 4: _tile_ubo(4)}


def _ubo_bt_work(a):
    # per K-quad: TILE_COLS texels of op(B)^T, 4 N_OUT elements x 4 multiply-adds = 32 N_OUT
    # flops; A from the uniform block (no fetch)
    quads = a.uniforms["ks_n"] * a.defines["UNROLL"]
    return {"flops": 32.0 * a.defines["N_OUT"] * quads,
            "fetches": float(a.defines["TILE_COLS"] * quads), "bytes": 16.0 * a.defines["N_OUT"]}


def _tile_ubo_bt(targets: int):
    # as _tile_ubo, with B transposed and TILE_COLS (2 or 1) columns of C per fragment:
    # TILE_ROWS = 4 targets / TILE_COLS rows, ks_n steps at most the window's quads / UNROLL
    return declare(
        "algorithms/sgemm/tile_ubo_bt.frag", inputs={"A": In(block=True), "B": _B},
        outputs=targets, uniforms={"kq0": "int", "ks_n": "int", "geo": "ivec4"},
        defines={"N_OUT": targets, "TILE_COLS": 2, "UNROLL": 2, "QUAD_ORDER": 0},
        loop=lambda a: a.A.vec4s * a.defines["TILE_COLS"] // (
            4 * a.defines["N_OUT"] * a.defines["UNROLL"]),
        work=_ubo_bt_work, name=f"sgemm/ubo-bt{targets}", hint=_HINT)


#: uniform-block product kernels with B transposed (tile16x2-ubo, tile32x1-ubo and their
#: adaptations), by render targets.
TILE_UBO_BT = {t: _tile_ubo_bt(t) for t in (8, 4, 2, 1)}

#: op(X) zero-padded and rearranged into block windows (one output row per block row and
#: K chunk) for the uniform-block variant.
STAGE_BLOCK = declare("algorithms/sgemm/stage_block.frag", inputs={"X": In(buffer="either")},
                      uniforms={"chunks": "int", "chunk": "int", "first": ("int", 0)},
                      defines={"TRANS": 0, "TILE_ROWS": 8, "TEXELS": 0}, loop=lambda a: 4,
                      work=_stage_work, name="sgemm/stage-block")


def _combine(rows: int, has_c: bool):
    inputs = {f"P{t}": _B for t in range(rows)}
    uniforms = {"alpha": "float"} if rows else {}
    if has_c:
        inputs["C"] = In()
        uniforms["beta"] = "float"
    return declare("algorithms/sgemm/combine.frag", inputs=inputs, uniforms=uniforms,
                   defines={"TILE_ROWS": rows, "HAS_C": int(has_c)},
                   loop=(lambda a: 4) if has_c else None,  # the lanes of C
                   name=f"sgemm/combine{rows}" + ("+C" if has_c else ""))


#: epilogue kernels by (tile rows, has C): C = alpha P + beta C; (0, True) is beta * C alone.
COMBINE = {(r, c): _combine(r, c) for r, c in ((8, False), (8, True), (4, False), (4, True),
                                              (0, True))}


def _combine_ubo_work(a):
    # 4 / TILE_COLS texels of the targets, alpha p; with C: 4 lanes of C read, beta c added
    has_c = a.defines["HAS_C"]
    return {"flops": 4.0 + 8.0 * has_c, "fetches": 4.0 / a.defines["TILE_COLS"] + 4.0 * has_c,
            "bytes": 16.0}


def _combine_ubo(targets: int, has_c: bool):
    inputs = {f"P{t}": _B for t in range(targets)}
    uniforms = {"alpha": "float", "geo": "ivec4"}
    if has_c:
        inputs["C"] = In()
        uniforms["beta"] = "float"
    return declare("algorithms/sgemm/combine_ubo.frag", inputs=inputs, uniforms=uniforms,
                   defines={"N_OUT": targets, "TILE_COLS": 4, "HAS_C": int(has_c),
                            "QUAD_ORDER": 0},
                   loop=lambda a: 4,  # the lanes of C
                   work=_combine_ubo_work,
                   name=f"sgemm/combine-ubo{targets}" + ("+C" if has_c else ""))


#: epilogue kernels of the uniform-block variants by (targets, has C): C = alpha P + beta C,
#: P gathered from the targets' geometry (TILE_COLS: 4, 2 or 1 columns per fragment).
COMBINE_UBO = {(t, c): _combine_ubo(t, c) for t in (8, 4, 2, 1) for c in (False, True)}


# ---- variants ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    name: str
    a_path: str          # "buffer", "texture" or "block" (uniform buffer)
    tile_rows: int       # output rows per fragment (8 or 4 for the micro-tile, 1 for simple;
                         # the uniform-block tiles with B transposed: 32 / tile_cols or fewer)
    unroll: int          # K-quads per loop iteration (1, 2 or 4; 1 for simple)
    description: str
    tile_cols: int = 4   # columns of C per fragment: 4 (B by rows: one texel = 4 columns), or
                         # 2 / 1 (uniform-block path only: B transposed, one texel = 4 K)

    def __post_init__(self):
        if self.a_path not in ("buffer", "texture", "block"):
            raise ValueError(f"a_path must be buffer, texture or block, got {self.a_path!r}")
        if self.tile_cols not in (1, 2, 4):
            raise ValueError(f"tile_cols must be 1, 2 or 4, got {self.tile_cols}")
        if self.tile_cols == 4 and self.tile_rows not in (1, 4, 8):
            raise ValueError(f"tile_rows must be 1, 4 or 8, got {self.tile_rows}")
        if self.tile_cols < 4:
            if self.a_path != "block":
                raise ValueError("tile_cols 2 or 1 needs the uniform-block path (a_path block)")
            if self.tile_rows * self.tile_cols not in (4, 8, 16, 32):
                raise ValueError(f"tile_rows x tile_cols must fill 1, 2, 4 or 8 render targets "
                                 f"(4 to 32 elements), got {self.tile_rows}x{self.tile_cols}")
        if self.unroll not in (1, 2, 4) or (self.tile_rows == 1 and self.unroll != 1):
            raise ValueError(f"unroll must be 1, 2 or 4 (1 for the simple kernel), got "
                             f"{self.unroll}")
        if self.a_path == "block" and self.tile_rows == 1 and self.tile_cols == 4:
            raise ValueError("the uniform-block path needs a micro-tile (tile_rows 4 or 8)")

    @property
    def targets(self) -> int:
        """Render targets the product kernel writes (tile elements / 4)."""
        return self.tile_rows * self.tile_cols // 4

    @property
    def b_transposed(self) -> bool:
        """B staged as op(B)^T (one texel = 4 K of one column): tiles of 2 or 1 columns."""
        return self.tile_cols < 4

    @property
    def kernel(self):
        if self.tile_rows == 1 and self.tile_cols == 4:
            return SIMPLE
        if self.a_path == "block":
            return (TILE_UBO_BT if self.b_transposed else TILE_UBO)[self.targets]
        return TILE[self.tile_rows]

    @property
    def defines(self) -> dict:
        if self.tile_rows == 1 and self.tile_cols == 4:
            return {}
        if self.b_transposed:
            return {"UNROLL": self.unroll, "TILE_COLS": self.tile_cols}
        return {"UNROLL": self.unroll}

    @property
    def fetches_per_quad(self) -> int:
        """Texel fetches per fragment per K-quad: 4 of B (tile_cols of op(B)^T for the
        transposed tiles), plus tile_rows of A unless A comes from a uniform block (uniform
        reads are not texel fetches)."""
        b = self.tile_cols if self.b_transposed else 4
        return b + (0 if self.a_path == "block" else self.tile_rows)

    @property
    def flops_per_quad(self) -> int:
        """Flops per fragment per K-quad: tile_rows x tile_cols x 4 k x 2."""
        return 8 * self.tile_rows * self.tile_cols


VARIANTS = {
    "tile8x4": Variant("tile8x4", "buffer", 8, 2,
                       "A via buffer texture, B via 2-D texture, 8x4 micro-tile, 8 targets"),
    "tile8x4-tex": Variant("tile8x4-tex", "texture", 8, 2,
                           "A and B via 2-D textures, 8x4 micro-tile, 8 targets"),
    "tile4x4": Variant("tile4x4", "buffer", 4, 2,
                       "A via buffer texture, B via 2-D texture, 4x4 tile, 4 targets"),
    "simple": Variant("simple", "buffer", 1, 1,
                      "A via buffer texture, B via 2-D texture, one texel per fragment"),
    "tile8x4-ubo": Variant("tile8x4-ubo", "block", 8, 2,
                           "A via uniform buffer (one 8-row block of C per draw, every "
                           "fragment reads the same A), B via 2-D texture, 8x4 micro-tile, "
                           "8 targets"),
    "tile16x2-ubo": Variant("tile16x2-ubo", "block", 16, 2,
                            "A via uniform buffer (one 16-row block of C per draw), B "
                            "transposed via 2-D texture (2 fetches per K-quad), 16x2 "
                            "micro-tile, 8 targets", tile_cols=2),
    "tile32x1-ubo": Variant("tile32x1-ubo", "block", 32, 2,
                            "A via uniform buffer (one 32-row block of C per draw), B "
                            "transposed via 2-D texture (1 fetch per K-quad), 32x1 "
                            "micro-tile, 8 targets", tile_cols=1),
}
DEFAULT_VARIANT = "auto"

# Fragments wanted in flight per product pass before K is split, and the shortest K slice worth
# a pass (GPUs only; llvmpipe keeps its few cores busy with any output). Measured on an H200:
# 256 x 256 x 16384 runs 1.5x faster with 8 slices than with 1 or 128; square sizes gain <= 2%.
SPLIT_TARGET_FRAGMENTS = 1 << 18
MIN_SLICE_K = 2048

# Uniform-block variants: smallest window (K-quads) compiled (the window length is a define
# from a small set of powers of two, so a handful of programs serves every K); the geometry of
# the product targets: one block row's draw covers a rect of band x width texels, band the
# largest power of two <= UBO_MAX_BAND with band^2 <= the fragments of a block row (square-ish
# rects), and the rects tile the targets about UBO_TARGET_W texels wide (the block rows of a
# 4096^2 product then fill a 1024 x 512 target, 32 x 32 texels each). UBO_TARGET_W = 0 stacks
# the rects in one column (a narrow strip). UBO_QUAD_ORDER: inside a rect, number the
# fragments by pixel quads (the 4 fragments of a quad read 4 consecutive columns of B) where
# band and width are even, else row by row (shaders/algorithms/sgemm/ubo_geo.glsl).
# Measured on an H200 (benchmarks/diag/sgemm_ubo.py, 2026-11-22): grid vs strip and quad vs row
# order move the rate by a few percent only (8x4 at n = 4096: grid quad 957, grid rows 935,
# strip 926 GFLOP/s; 16x2: 1,110 vs 1,112; 16x2 at 2,048: quad 929, rows 948).
UBO_MIN_QUADS = 16
UBO_MAX_BAND = 32
UBO_TARGET_W = 1024
UBO_QUAD_ORDER = True


def default_variant(dev) -> str:
    """The faster variant on ``dev`` (measured, benchmarks/RESULTS.md): on llvmpipe the buffer
    path for A ("tile8x4", 1.5x faster at n=1024); on a GPU with uniform blocks the 16x2 tile
    with A from a uniform buffer ("tile16x2-ubo": 1,110 GFLOP/s at n = 4,096 and 929 at 2,048
    on an H200, against 385 / 379 for the texture path in the same run; 1,142 / 996 when
    unrolled by 4, which pads K to 16 and does not fit the smallest textures), else "tile8x4-tex"
    (2-D textures fetch faster than texture buffers on the NVIDIA driver)."""
    if dev.is_software:
        return "tile8x4"
    return "tile16x2-ubo" if Limits.of(dev).uniform_blocks else "tile8x4-tex"


@dataclass(frozen=True)
class Limits:
    """The device limits the SGEMM plan depends on (:meth:`of` reads them off a Device).

    Without a device (pass plans of a hypothetical GPU): no loop cap, 8 render targets, buffer
    textures, float blending, uniform blocks of 64 KiB, 16384-texel textures."""

    loop_cap: int | None = None
    max_outputs: int = 8
    buffer_textures: bool = True
    float_blending: bool = True
    uniform_blocks: bool = True
    block_bytes: int = 65536
    block_align: int = 256
    max_texture_size: int = 16384

    @classmethod
    def of(cls, device=None, loop_cap=None) -> "Limits":
        """Limits of ``device`` (a Device or Limits); else the defaults with ``loop_cap`` (an
        int, None, or a Device, read as the device itself)."""
        if device is None and loop_cap is not None and \
                not isinstance(loop_cap, numbers.Integral):
            device, loop_cap = loop_cap, None
        if isinstance(device, Limits):
            return device
        if device is None:
            return cls(loop_cap=None if loop_cap is None else int(loop_cap))
        if not hasattr(device, "ctx"):  # a namespace with some of the attributes
            return cls(**{k: getattr(device, k) for k in cls.__dataclass_fields__
                          if hasattr(device, k)})
        return cls(loop_cap=device.loop_cap, max_outputs=device.max_outputs,
                   buffer_textures=device.buffer_textures,
                   float_blending=device.float_blending,
                   uniform_blocks=has_uniform_blocks(device),
                   block_bytes=max_block_bytes(device),
                   block_align=offset_alignment(device),
                   max_texture_size=device.max_texture_size)

    def accumulate_passes(self, n_outputs: int) -> int:
        """Passes one accumulating pass costs (as :meth:`Device.accumulate_passes`)."""
        return 1 if self.float_blending else 1 + 2 * n_outputs


def _variant(v) -> Variant:
    return v if isinstance(v, Variant) else VARIANTS[v]


def effective_variant(variant, device=None) -> Variant:
    """``variant`` adapted to the device's limits (a Device, its :class:`Limits` or None):
    fewer tile rows than render targets (8 -> 4 -> 1, the simple kernel; the transposed-B
    uniform-block tiles halve their rows), A through the 2-D texture path without buffer
    textures (or, for the block path, without uniform blocks: then the 8x4 tile)."""
    v = _variant(variant)
    lim = Limits.of(device)
    if v.b_transposed:
        if lim.uniform_blocks:
            rows = v.tile_rows
            while rows * v.tile_cols > 4 * max(1, lim.max_outputs):
                rows //= 2
            return v if rows == v.tile_rows else replace(v, tile_rows=rows)
        v = replace(v, a_path="texture", tile_rows=8, tile_cols=4)
    rows, a_path = v.tile_rows, v.a_path
    while rows > lim.max_outputs:
        rows = 4 if rows == 8 else 1
    if a_path == "buffer" and not lim.buffer_textures:
        a_path = "texture"
    if a_path == "block" and (not lim.uniform_blocks or rows == 1):
        a_path = "texture" if rows > 1 or not lim.buffer_textures else "buffer"
    if (rows, a_path) == (v.tile_rows, v.a_path):
        return v
    return replace(v, tile_rows=rows, a_path=a_path, unroll=v.unroll if rows > 1 else 1)


def _round_up(x: int, m: int) -> int:
    return ceil_div(x, m) * m


def _padded(variant: Variant, M: int, K: int) -> tuple[int, int]:
    return _round_up(M, variant.tile_rows), _round_up(K, 4 * variant.unroll)


def _cap(loop_cap):
    """A loop cap from a Device (its ``loop_cap``), Limits, an int, or None (no cap)."""
    return getattr(loop_cap, "loop_cap", loop_cap)


def _cuts(variant: Variant, K: int, loop_cap, slices: int = 1, has_c: bool = False) -> list:
    """The K slices the engine cuts the product into (the kernel's own split, the same call
    :meth:`Device.run` makes): at least ``slices``, more when the loop cap needs them."""
    kern = (SIMPLE_C if has_c else SIMPLE) if variant.tile_rows == 1 else variant.kernel
    _, Kp = _padded(variant, 1, K)
    layouts = {"B": SimpleNamespace(rows=Kp, cols=1)}
    return kern.slices(layouts, {}, kern.resolve_defines(variant.defines), _cap(loop_cap),
                       slices)


# ---- the uniform-block geometry ---------------------------------------------------------------
@dataclass(frozen=True)
class _UboPlan:
    rows: int            # tile rows (block rows of C are this tall)
    cols: int            # tile columns (C's columns per fragment: 4, or 2 / 1 with B transposed)
    nblocks: int         # block rows: Mp / rows
    chunks: tuple        # K-quad ranges [q0, q1), one per chunk
    per: int             # K-quads per chunk (all but the last)
    window: int          # quads a window holds (a power of two >= per): the compiled length
    fw: int              # fragments per block row: ceil(N / cols)
    band: int            # target rows per block row's rect
    width: int           # target columns per block row's rect (band x width >= fw)
    across: int          # rects side by side per band of target rows
    quad: bool           # fragments numbered by pixel quads inside a rect (QUAD_ORDER)
    parts: Layout        # layout of each of the product targets
    rects: tuple         # per block row, the output rects its draws cover

    @property
    def vec4s(self) -> int:
        return self.window * self.rows

    @property
    def geo(self) -> tuple:
        """The kernels' ``geo`` uniform: (band, width, fragments per block row, across)."""
        return (self.band, self.width, self.fw, self.across)

    @property
    def fragments(self) -> int:
        """Fragments one chunk's draws cover (all block rows)."""
        return sum(r[2] * r[3] for per_row in self.rects for r in per_row)


def _pow2_floor(x: int) -> int:
    return 1 << (max(1, int(x)).bit_length() - 1)


def _ubo_geometry(nblocks: int, fw: int, mx: int):
    """(band, width, across) of the block rows' rects in the product targets (at most ``mx``
    texels a side), or None where no such tiling fits (the targets then wrap)."""
    pref = 1
    while pref < UBO_MAX_BAND and (2 * pref) ** 2 <= fw:
        pref *= 2
    bands = sorted((1 << e for e in range(max(1, mx).bit_length()) if (1 << e) <= mx),
                   key=lambda b: (abs(b.bit_length() - pref.bit_length()), b))
    for band in bands:
        width = ceil_div(fw, band)
        if width > mx:
            continue
        most = min(nblocks, mx // width)          # rects side by side that fit
        need = ceil_div(nblocks, mx // band)      # side by side for the height to fit
        across = max(need, min(most, max(1, UBO_TARGET_W // width)))
        if across <= most:
            return band, width, across
    return None


def _ubo_plan(v: Variant, M: int, N: int, K: int, lim: Limits, split: int = 1) -> _UboPlan:
    """K chunks, window length and the targets' geometry of the uniform-block variants."""
    rows, cols, unroll = v.tile_rows, v.tile_cols, v.unroll
    Mp, Kp = _padded(v, M, K)
    kq = Kp // 4
    mx = lim.max_texture_size
    most = min(lim.block_bytes // 16, mx * mx) // rows   # quads one window may hold
    if lim.loop_cap is not None:
        most = min(most, lim.loop_cap * unroll)      # one step (loop iteration) per unroll quads
    cap_q = _pow2_floor(most)
    if cap_q < unroll:
        raise LoopBudgetError(
            f"sgemm/tile{rows}x{cols}-ubo: one K step of {unroll} quads does not fit this "
            f"device's loop cap of {lim.loop_cap} / uniform-block size of {lim.block_bytes} "
            "bytes; use another variant")
    n = max(ceil_div(kq, cap_q), min(max(1, int(split)), kq // unroll))
    per = _round_up(ceil_div(kq, n), unroll)
    n = ceil_div(kq, per)
    chunks = tuple((c * per, min(kq, (c + 1) * per)) for c in range(n))
    window = min(cap_q, max(UBO_MIN_QUADS, 1 << (per - 1).bit_length()))
    nblocks, fw = Mp // rows, ceil_div(N, cols)
    geo = _ubo_geometry(nblocks, fw, mx)
    if geo is not None:
        band, width, across = geo
        parts = Layout(ceil_div(nblocks, across) * band, 4 * across * width, True, "row", mx)
        assert not parts.wrapped
        rects = tuple(((i % across * width, i // across * band, width, band),)
                      for i in range(nblocks))
        quad = bool(UBO_QUAD_ORDER) and band % 2 == 0 and width % 2 == 0
    else:
        # the targets wrap: block row i is texels i*fw .. of a (nblocks x fw)-texel grid, its
        # draws cover those texels (a rect per texture row they span)
        band, width, across = 1, fw, 1
        parts = Layout(nblocks, 4 * fw, True, "row", mx)
        rects = tuple(_run_rects(i * fw, (i + 1) * fw, parts.tex_w) for i in range(nblocks))
        quad = False
    return _UboPlan(rows, cols, nblocks, chunks, per, window, fw, band, width, across, quad,
                    parts, rects)


def _run_rects(t0: int, t1: int, tw: int) -> tuple:
    """Rects covering exactly texels [t0, t1) of a texture ``tw`` texels wide (row by row)."""
    y0, x0 = divmod(t0, tw)
    y1, x1 = divmod(t1 - 1, tw)
    if y0 == y1:
        return ((x0, y0, x1 - x0 + 1, 1),)
    out = [(x0, y0, tw - x0, 1)]
    if y1 - y0 > 1:
        out.append((0, y0 + 1, tw, y1 - y0 - 1))
    out.append((0, y1, x1 + 1, 1))
    return tuple(out)


def min_split(variant, K: int, loop_cap, has_c: bool = False) -> int:
    """Fewest K slices that keep one fragment's loop iterations within ``loop_cap`` (a Device,
    its ``loop_cap`` or None): one loop iteration per K step of ``unroll`` quads (the simple
    kernel: one per K-quad, plus 4 for the lanes of C when ``has_c``). The uniform-block
    variant: K chunks (each within one uniform-block window and the cap)."""
    v = effective_variant(variant, Limits.of(None, loop_cap))
    if v.a_path == "block":
        return len(_ubo_plan(v, 1, 4, K, Limits.of(None, loop_cap)).chunks)
    return len(_cuts(v, K, loop_cap, 1, has_c and v.tile_rows == 1))


def auto_split(dev, variant, M: int, N: int, K: int) -> int:
    """K slices asked of the engine for performance: 1 on llvmpipe (its few cores are busy with
    any output), for the simple kernel and the uniform-block variant (its chunks are set by the
    block size); on GPUs more slices for small outputs (more fragments in flight), at least
    MIN_SLICE_K of K each. The engine raises it to what ``dev``'s loop cap needs
    (:func:`min_split`)."""
    v = _variant(variant)
    if v.tile_rows == 1 or v.a_path == "block" or dev.is_software:
        return 1
    frags = ceil_div(M, v.tile_rows) * ceil_div(N, 4)
    split = max(1, ceil_div(SPLIT_TARGET_FRAGMENTS, frags))
    return max(1, min(split, K // MIN_SLICE_K))


def work(variant, M: int, N: int, K: int, split: int = 1, stage_a: bool = False,
         stage_b: bool = False, has_c: bool = False, loop_cap=None, device=None) -> dict:
    """The pass plan of one call: passes per phase, fragments, fetches and flops per fragment.

    ``stage_a``/``stage_b``: the input is a device array (a staging pass copies it into the
    padded operand); numpy inputs are staged on the host. ``split``: K slices asked for.
    ``device``: the Device (or its :class:`Limits`) the call runs on: its loop cap, render
    targets, buffer textures, float blending, uniform-block size and texture size shape the
    plan (the variant is adapted as :func:`effective_variant` says). ``loop_cap`` alone (an
    int, or a Device, read as ``device``) gives the default limits with that cap. The returned
    ``split`` is the number of K slices the engine draws (raised for the cap, capped at one
    slice per K step; the uniform-block variant: K chunks), exactly as :func:`sgemm` runs it;
    ``phases`` counts every pass, the ping-pong passes of accumulation without float blending
    included.
    """
    lim = Limits.of(device, loop_cap)
    v = effective_variant(variant, lim)
    Mp, Kp = _padded(v, M, K)
    kq = Kp // 4
    nq = ceil_div(N, 4)
    phases = {}
    if stage_a or stage_b:
        phases["sgemm/stage"] = int(stage_a) + int(stage_b)
    if v.a_path == "block":
        plan = _ubo_plan(v, M, N, K, lim, split)
        if stage_a:
            phases["sgemm/stage"] += _stage_block_passes(plan, lim) - 1
        split = len(plan.chunks)
        draws = sum(len(r) for r in plan.rects)
        # later chunks blend draw by draw; without float blending they are drawn into fresh
        # targets and added by one pass per target
        phases["sgemm/product"] = draws * split + (0 if lim.float_blending else
                                                   (split - 1) * v.targets)
        frags = plan.fragments
    else:
        split = len(_cuts(v, K, lim.loop_cap, split, has_c and v.tile_rows == 1))
        outs = 1 if v.tile_rows == 1 else v.tile_rows
        phases["sgemm/product"] = 1 + (split - 1) * lim.accumulate_passes(outs)
        frags = M * nq if v.tile_rows == 1 else (Mp // v.tile_rows) * nq
    fetch = v.fetches_per_quad * kq / split
    if v.tile_rows == 1:
        fetch += 1 if has_c else 0
    else:
        phases["sgemm/combine"] = 1
    flops = v.flops_per_quad * kq / split
    return {"variant": v.name, "M": M, "N": N, "K": K, "split": split, "phases": phases,
            "passes": sum(phases.values()), "product_fragments": frags,
            "fetches_per_fragment": fetch, "flops_per_fragment": flops,
            "flops_per_fetch": v.flops_per_quad / v.fetches_per_quad,
            "tile_rows": v.tile_rows, "tile_cols": v.tile_cols, "a_path": v.a_path,
            "useful_flops": 2 * M * N * K}


def _plan_phases(variant):
    def phases(M, N, K, split=1, stage_a=False, stage_b=False, has_c=False, loop_cap=None,
               device=None):
        return work(variant, M, N, K, split, stage_a, stage_b, has_c, loop_cap,
                    device)["phases"]
    return phases


for _name, _v in VARIANTS.items():
    if _v.a_path == "block":
        _formula = ("[stage_A] + [stage_B] + draws x chunks + [(chunks - 1) x targets "
                    f"without float blending] + 1, draws = block rows (M / {_v.tile_rows}) x "
                    "rects per block row (1 unless the targets wrap)")
    elif _v.tile_rows == 1:
        _formula = "[stage_A] + [stage_B] + 1 + (slices - 1) x acc"
    else:
        _formula = "[stage_A] + [stage_B] + 1 + (slices - 1) x acc + 1"
    register_plan(PassPlan(
        name=f"sgemm/{_name}",
        formula=_formula,
        phases=_plan_phases(_name),
        notes=(f"{_v.description}. Per fragment and K-quad: {_v.fetches_per_quad} texel "
               f"fetches, {_v.flops_per_quad} flops. slices = K slices: the split asked for, "
               "raised to what the device's loop cap needs (pass loop_cap or device). acc = "
               "passes of one accumulating pass: 1 with float blending, 1 + 2 x targets by "
               "ping-pong without (device profiles). Under a profile the variant adapts "
               "(tile rows to the render targets, A's path). Staging passes only for "
               "device-array inputs; the micro-tile variants end with one epilogue pass "
               "(targets -> C, alpha, beta)."),
        params=("M", "N", "K", "split", "stage_a", "stage_b", "has_c", "loop_cap", "device")))


# ---- staging ----------------------------------------------------------------------------------
def _stage_texture(dev, x, trans: bool, rows: int, cols: int, prows: int, pcols: int):
    """op(x) zero-padded to (prows, pcols), packed row-major, as a DeviceArray."""
    if isinstance(x, DeviceArray):
        out = dev.empty((prows, pcols))
        with dev.phase("sgemm/stage"):
            dev.run(STAGE, out, inputs={"X": x},
                    defines={"TRANS": int(trans), "TEXELS": _by_texels(x, trans)})
        return out
    m = np.zeros((prows, pcols), dtype=np.float32)
    m[:rows, :cols] = x.T if trans else x
    return dev.array(m)


def _by_texels(x, trans: bool) -> int:
    """1 where the staging kernels may copy ``x`` texel by texel (packed row-major, not
    transposed: an output texel is one texel of x), else 0 (one read per lane)."""
    lay = x.layout
    return int(not trans and bool(lay.packed) and lay.order == "row")


def _stage_buffer(dev, x, trans: bool, rows: int, cols: int, prows: int, pcols: int):
    lay = BufferLayout(prows, pcols)
    if isinstance(x, DeviceArray):
        tex = _stage_texture(dev, x, trans, rows, cols, prows, pcols)
        try:
            return BufferArray.from_texture(dev, lay, tex)
        finally:
            tex.release()
    m = np.zeros((prows, pcols), dtype=np.float32)
    m[:rows, :cols] = x.T if trans else x
    return BufferArray.from_host(dev, lay, m)


def _stage_block(dev, x, trans: bool, M: int, K: int, plan: _UboPlan) -> BlockArray:
    """op(x) (M x K) into block windows: window (i, c) = rows rows*i .. of K chunk c, vec4
    number q * rows + t = op(x)[rows*i + t, 4*(q0_c + q) .. +3]; windows start at multiples of
    the device's uniform-buffer offset alignment."""
    rows, n = plan.rows, len(plan.chunks)
    stride = _round_up(plan.vec4s, offset_alignment(dev) // 16)   # vec4 between windows
    lay = BlockLayout(plan.vec4s)
    if isinstance(x, DeviceArray):
        # one staging pass per group of windows that fits in one texture (1 but for tiny
        # texture limits), each copied on the GPU into its part of the buffer
        total = plan.nblocks * n
        group = _windows_per_texture(stride, dev.max_texture_size)
        blk = BlockArray(dev, lay, reserve=16 * stride * total)
        for r0 in range(0, total, group):
            cnt = min(group, total - r0)
            tex = dev.alloc(Layout(cnt, 4 * stride, True, "row", dev.max_texture_size))
            try:
                with dev.phase("sgemm/stage"):
                    dev.run(STAGE_BLOCK, tex, inputs={"X": x},
                            uniforms={"chunks": n, "chunk": plan.per, "first": r0},
                            defines={"TRANS": int(trans), "TILE_ROWS": rows,
                                     "TEXELS": _by_texels(x, trans)})
                blk.write_from_texture(tex, 16 * stride * r0, 16 * stride * cnt)
            finally:
                tex.release()
    else:
        a = np.zeros((plan.nblocks * rows, n * plan.per * 4), dtype=np.float32)
        a[:M, :K] = x.T if trans else x
        w = a.reshape(plan.nblocks, rows, n, plan.per, 4).transpose(0, 2, 3, 1, 4)
        data = np.zeros((plan.nblocks * n, stride, 4), dtype=np.float32)
        data[:, :plan.per * rows] = w.reshape(plan.nblocks * n, plan.per * rows, 4)
        blk = BlockArray(dev, lay, data)
    blk.stride = stride
    return blk


def _windows_per_texture(stride: int, max_size: int) -> int:
    """Block windows (``stride`` texels each) one staging texture holds."""
    return max(1, (max_size * max_size) // stride)


def _stage_block_passes(plan: "_UboPlan", lim: Limits) -> int:
    stride = _round_up(plan.vec4s, lim.block_align // 16)
    return ceil_div(plan.nblocks * len(plan.chunks),
                    _windows_per_texture(stride, lim.max_texture_size))


def check_fits(dev, v: Variant, M: int, N: int, K: int) -> None:
    """Refuse, from the shapes alone (before any staging copy on the host or texture on the
    device), a call whose device arrays would not fit one texture of ``dev``: the staged
    op(A) (M padded to the tile rows, K to 4 x unroll), the staged op(B), the product targets
    and C. ValueError naming the argument (A, B, or both for the result)."""
    mx = dev.max_texture_size
    Mp, Kp = _padded(v, M, K)
    arrays = []
    if v.a_path == "block":
        try:
            plan = _ubo_plan(v, M, N, K, Limits.of(dev))
        except TooLargeError:
            plan = None
            arrays.append(("A and B", f"the product targets of op(A) @ op(B) ({M} x {N})",
                           None))
        if plan is not None and v.b_transposed:
            arrays.append(("B", f"op(B) transposed, padded to {plan.fw * plan.cols} x {Kp}",
                           (plan.fw * plan.cols, Kp)))
        elif plan is not None:
            arrays.append(("B", f"op(B) padded to {Kp} x {N}", (Kp, N)))
    else:
        buf = v.a_path == "buffer" and \
            BufferLayout(Mp, Kp).n_texels <= max_texture_buffer_size(dev)
        if not buf:
            arrays.append(("A", f"op(A) padded to {Mp} x {Kp}", (Mp, Kp)))
        arrays.append(("B", f"op(B) padded to {Kp} x {N}", (Kp, N)))
        if v.tile_rows > 1:
            arrays.append(("A and B", f"the {v.tile_rows} product targets "
                           f"({Mp // v.tile_rows} x {N})", (Mp // v.tile_rows, N)))
    arrays.append(("A and B", f"the result C ({M} x {N})", (M, N)))
    for name, what, shape in arrays:
        try:
            if shape is None:
                raise TooLargeError(what)
            Layout(shape[0], shape[1], True, "row", mx)
        except TooLargeError:
            texels = "" if shape is None else f" ({shape[0] * ceil_div(shape[1], 4)} texels)"
            raise ValueError(
                f"{name}: too large for this device: {what}{texels} exceeds one texture of "
                f"{mx} x {mx} = {mx * mx} texels (the device's max_texture_size); op(A) is "
                f"{M} x {K}, op(B) is {K} x {N}. Split the product into blocks "
                "(shadergpgpu.distributed.matmul cuts it to fit)") from None



def _operand(x, name: str):
    if isinstance(x, DeviceArray):
        return V.device_array(x, name, ndim=2)
    # NaN / Inf propagate as in BLAS (and are ignored where the operand is not read)
    return V.array(x, name, ndim=2, finite=False)


def _shape(x):
    """The 2-D shape of an operand without converting it (None where the conversion's own
    checks must speak first: other dimensions, empty, not numeric)."""
    if isinstance(x, DeviceArray):
        return tuple(x.shape) if x.ndim == 2 and not x.released else None
    a = x if isinstance(x, np.ndarray) else None
    if a is None:
        return None
    if a.ndim != 2 or a.size == 0 or a.dtype.kind not in "biuf":
        return None
    return tuple(int(d) for d in a.shape)


def _flag(x, name: str) -> bool:
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(x).__name__}")
    return bool(x)


# ---- the public function ----------------------------------------------------------------------
def sgemm(A, B, C=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
          variant: str = DEFAULT_VARIANT, device=None, split: int | None = None):
    """``alpha * op(A) @ op(B) + beta * C`` in float32 on the device (BLAS SGEMM semantics).

    Parameters
    ----------
    A, B : 2-D numpy arrays (any real dtype, computed in float32) or DeviceArrays.
        ``op(A)`` is ``A`` or ``A.T`` (``trans_a``), ``M x K``; ``op(B)`` is ``K x N``.
    C : optional ``M x N`` array (numpy or DeviceArray). As in BLAS it is not read when
        ``beta == 0``, and ``A``, ``B`` are not read when ``alpha == 0``.
    alpha, beta : finite real scalars.
    variant : ``"auto"`` (default: the faster one on this device, see :func:`default_variant`),
        ``"tile8x4"``, ``"tile8x4-tex"``, ``"tile4x4"``, ``"simple"`` or ``"tile8x4-ubo"``
        (see module doc). Under a device profile the variant adapts to the device's limits
        (:func:`effective_variant`).
    device : the Device to use; default: the arguments' device, else the process default.
    split : K slices asked for (passes summed by blending); default :func:`auto_split`. The
        engine raises it to what the device's loop cap needs (:func:`min_split`) and caps it at
        one slice per K step; :func:`work` gives the passes drawn.

    NaN and Inf in ``A`` or ``B`` are not checked: they propagate into the result as in BLAS
    (a NaN or Inf in an operand row/column makes the dependent elements of C non-finite).

    Sizes are checked from the shapes before anything is converted, staged or allocated
    (:func:`check_fits`): a product whose staged operands or result exceed one texture of the
    device is refused at once with a ValueError naming A, B or both.

    Accuracy (u = 2^-24, float32's unit roundoff): each element of op(A) op(B) is one float32
    sum of its K products, taken in K order inside a pass (``c += a b``; the K slices of a
    split call, and the uniform-block variants' chunks, are added by blending, which only
    regroups the same sum); the epilogue then forms ``alpha p + beta c``. Against C64, the
    same expression in float64 from the caller's values (float64 inputs are rounded to
    float32 first: one more u per factor), elementwise::

        |C - C64| <= (K + 5) u (|alpha| |op(A)| @ |op(B)| + |beta| |C|)
                     + (2K + 4) 2^-126 (1 + |alpha| + |beta|)

    The second term is underflow: a GPU may flush products and partial sums below 2^-126
    (1.18e-38, float32's smallest normal number) to 0; the bound holds for inputs with no
    nonzero magnitude below 2^-126 (such inputs may be read as 0). Where a product, a partial
    sum or ``alpha p`` overflows float32 (3.4e38) the element is +-inf or NaN, exactly as
    float32 arithmetic gives, never a finite wrong number; finite float64 inputs beyond
    float32's range become +-inf on conversion. Random data typically err by about
    sqrt(K) u relative. ``tests/test_algorithm_guards.py`` checks the bound at K = 300,000
    (the loop cap cutting the simple kernel into passes) and at values near 1e-38 and 1e38.

    Returns
    -------
    A new float32 ``M x N`` numpy array, or a new DeviceArray when any of A, B, C is one
    (products then chain on the device without readback).
    """
    V.choice(variant, "variant", ("auto", *VARIANTS))
    alpha = V.real(alpha, "alpha")
    beta = V.real(beta, "beta")
    trans_a = _flag(trans_a, "trans_a")
    trans_b = _flag(trans_b, "trans_b")
    if split is not None:
        split = V.integer(split, "split", lo=1)
    sa, sb = _shape(A), _shape(B)
    if sa is not None and sb is not None and (sa[0] if trans_a else sa[1]) == \
            (sb[1] if trans_b else sb[0]):
        # sizes first, from the shapes alone: nothing is converted, staged or allocated
        # for a product the device cannot hold
        M_, K_ = (sa[1], sa[0]) if trans_a else sa
        N_ = sb[0] if trans_b else sb[1]
        dev_ = V.pick_device(device, [x for x in (A, B, C) if isinstance(x, DeviceArray)])
        check_fits(dev_, effective_variant(default_variant(dev_) if variant == "auto"
                                           else variant, dev_), M_, N_, K_)
    A = _operand(A, "A")
    B = _operand(B, "B")
    if C is not None:
        C = _operand(C, "C")
    M, K = (A.shape[1], A.shape[0]) if trans_a else A.shape
    K2, N = (B.shape[1], B.shape[0]) if trans_b else B.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: op(A) is {M}x{K}, op(B) is {K2}x{N}")
    if C is not None and tuple(C.shape) != (M, N):
        raise ValueError(f"C must have shape {(M, N)} (op(A) @ op(B)), got {tuple(C.shape)}")
    dev = V.pick_device(device, [A, B, C])
    v = effective_variant(default_variant(dev) if variant == "auto" else variant, dev)
    as_device = any(isinstance(x, DeviceArray) for x in (A, B, C))

    has_p = alpha != 0.0
    has_c = C is not None and beta != 0.0
    with dev.scope() as s:
        Cd = None
        if has_c:
            Cd = C if isinstance(C, DeviceArray) else s.array(C, name="C")
        out = dev.empty((M, N))
        try:
            _product(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K,
                     has_p, has_c, split)
        except BaseException:
            out.release()
            raise
    if as_device:
        return out
    try:
        return out.get()
    finally:
        out.release()


def _product(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K, has_p, has_c,
             split):
    c_inputs = {"C": Cd} if has_c else {}
    c_uniforms = {"beta": beta} if has_c else {}
    if not has_p:
        if has_c:
            dev.run(COMBINE[0, True], out, inputs=c_inputs, uniforms=c_uniforms)
        else:
            dev.fill(out, 0.0)
        return
    if v.a_path == "block":
        _product_ubo(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K, has_c,
                     split)
        return
    Mp, Kp = _padded(v, M, K)
    a_path = v.a_path
    if a_path == "buffer" and BufferLayout(Mp, Kp).n_texels > max_texture_buffer_size(dev):
        a_path = "texture"  # too large for one texture buffer: use the 2-D path
    stage = _stage_buffer if a_path == "buffer" else _stage_texture
    As = s.track(stage(dev, A, trans_a, M, K, Mp, Kp))
    Bs = s.track(_stage_texture(dev, B, trans_b, K, N, Kp, N))
    slices = split or auto_split(dev, v, M, N, K)
    if v.tile_rows == 1:
        # slice t adds alpha * A[:, slice] B[slice, :] into C; beta * C in the first slice only
        kern = SIMPLE_C if has_c else SIMPLE
        with dev.phase("sgemm/product"):
            dev.run(kern, out, inputs={"A": As, "B": Bs, **c_inputs},
                    uniforms={"alpha": alpha, **c_uniforms}, slices=slices)
        return
    tr = v.tile_rows
    parts = [s.empty((Mp // tr, N)) for _ in range(tr)]
    with dev.phase("sgemm/product"):
        dev.run(v.kernel, parts, inputs={"A": As, "B": Bs}, defines=v.defines, slices=slices)
    with dev.phase("sgemm/combine"):
        dev.run(COMBINE[tr, has_c], out,
                inputs={**{f"P{t}": p for t, p in enumerate(parts)}, **c_inputs},
                uniforms={"alpha": alpha, **c_uniforms})


def _product_ubo(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K, has_c,
                 split):
    """The uniform-block variants: one draw per block row and K chunk (see the module doc)."""
    lim = Limits.of(dev)
    plan = _ubo_plan(v, M, N, K, lim, split or 1)
    _, Kp = _padded(v, M, K)
    blk = s.track(_stage_block(dev, A, trans_a, M, K, plan))
    if v.b_transposed:   # op(B)^T, its rows padded to whole fragments
        Bs = s.track(_stage_texture(dev, B, not trans_b, N, K, plan.fw * plan.cols, Kp))
    else:
        Bs = s.track(_stage_texture(dev, B, trans_b, K, N, Kp, N))
    targets = v.targets
    parts = [s.alloc(plan.parts) for _ in range(targets)]
    kern = v.kernel
    inputs = {"A": blk, "B": Bs}
    defines = {**v.defines, "QUAD_ORDER": int(plan.quad)}
    uni = {"kq0": 0, "ks_n": 0, "geo": plan.geo}
    first = dev.prepare(kern, parts, inputs=inputs, uniforms=uni, defines=defines)
    later = None
    n = len(plan.chunks)
    rects = [r for per_row in plan.rects for r in per_row]
    row_of = [i for i, per_row in enumerate(plan.rects) for _ in per_row]
    with dev.phase("sgemm/product"):
        for c, (q0, q1) in enumerate(plan.chunks):
            if c == 0:
                p = first
            elif later is None and dev.float_blending:
                # later chunks add into the targets by blending, draw by draw
                p = later = dev.prepare(kern, parts, inputs=inputs, uniforms=uni,
                                        defines=defines, accumulate="add")
            elif later is None:
                # no float blending: each later chunk is drawn into fresh targets and added
                # to the sum by one pass per target (not by ping-pong passes per draw)
                fresh = [s.alloc(plan.parts) for _ in range(targets)]
                p = later = dev.prepare(kern, fresh, inputs=inputs, uniforms=uni,
                                        defines=defines)
            p.set(kq0=q0, ks_n=(q1 - q0) // v.unroll)
            offsets = [(i * n + c) * blk.stride for i in row_of]
            p.sweep(rects, each=lambda d, offsets=offsets: blk.select(offsets[d]))
            if c > 0 and not dev.float_blending:
                for t in range(targets):
                    total = s.alloc(plan.parts)
                    dev.run(SAXPY, total, inputs={"X": fresh[t], "Y": parts[t]},
                            uniforms={"alpha": 1.0})
                    parts[t].release()
                    parts[t] = total
    c_inputs = {"C": Cd} if has_c else {}
    with dev.phase("sgemm/combine"):
        dev.run(COMBINE_UBO[targets, has_c], out,
                inputs={**{f"P{t}": p for t, p in enumerate(parts)}, **c_inputs},
                uniforms={"alpha": alpha, "geo": plan.geo,
                          **({"beta": beta} if has_c else {})},
                defines={"TILE_COLS": plan.cols, "QUAD_ORDER": int(plan.quad)})
