"""The uniform-block variants' geometry, as pure shape math (no GL): the K chunks and the
window length (:func:`ubo_plan`), the rects the block rows' draws cover in the product targets
(:func:`_ubo_geometry`, :func:`_run_rects` where the targets wrap), and how many windows one
staging texture holds.

The smallest window, the rects' band and width and the fragment order inside a rect follow a
:class:`~.tuning.SgemmTuning` (``ubo_*``; the device's, passed by the caller; the defaults where
none is given).
"""
from __future__ import annotations

from dataclasses import dataclass

from ...engine.errors import LoopBudgetError
from ...engine.layout import Layout
from ...engine.limits import ceil_div
from .tuning import SgemmTuning
from .variants import Limits, Variant, padded_shape, round_up

_DEFAULT = SgemmTuning()

# Uniform-block variants (SgemmTuning.ubo_*): smallest window (K-quads) compiled (the window
# length is a define from a small set of powers of two, so a handful of programs serves every
# K); the geometry of the product targets: one block row's draw covers a rect of band x width
# texels, band the largest power of two <= ubo_max_band with band^2 <= the fragments of a block
# row (square-ish rects), and the rects tile the targets about ubo_target_w texels wide (the
# block rows of a 4096^2 product then fill a 1024 x 512 target, 32 x 32 texels each);
# ubo_target_w = 0 stacks the rects in one column (a narrow strip). ubo_quad_order: inside a
# rect, number the fragments by pixel quads (the 4 fragments of a quad read 4 consecutive
# columns of B) where band and width are even, else row by row
# (shaders/algorithms/sgemm/ubo_geo.glsl).
# Grid vs strip and quad vs row order move a GPU's rate by a few percent only
# (benchmarks/diag/sgemm_ubo.py compares them).


@dataclass(frozen=True)
class UboPlan:
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


def _ubo_geometry(nblocks: int, fw: int, mx: int, tuning: SgemmTuning | None = None):
    """(band, width, across) of the block rows' rects in the product targets (at most ``mx``
    texels a side), or None where no such tiling fits (the targets then wrap)."""
    t = tuning or _DEFAULT
    pref = 1
    while pref < t.ubo_max_band and (2 * pref) ** 2 <= fw:
        pref *= 2
    bands = sorted((1 << e for e in range(max(1, mx).bit_length()) if (1 << e) <= mx),
                   key=lambda b: (abs(b.bit_length() - pref.bit_length()), b))
    for band in bands:
        width = ceil_div(fw, band)
        if width > mx:
            continue
        most = min(nblocks, mx // width)          # rects side by side that fit
        need = ceil_div(nblocks, mx // band)      # side by side for the height to fit
        across = max(need, min(most, max(1, t.ubo_target_w // width)))
        if across <= most:
            return band, width, across
    return None


def ubo_plan(v: Variant, M: int, N: int, K: int, lim: Limits, split: int = 1,
              tuning: SgemmTuning | None = None) -> UboPlan:
    """K chunks, window length and the targets' geometry of the uniform-block variants, as
    ``tuning`` (a :class:`~.tuning.SgemmTuning`; default: the defaults) sets them."""
    t = tuning or _DEFAULT
    rows, cols, unroll = v.tile_rows, v.tile_cols, v.unroll
    Mp, Kp = padded_shape(v, M, K)
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
    per = round_up(ceil_div(kq, n), unroll)
    n = ceil_div(kq, per)
    chunks = tuple((c * per, min(kq, (c + 1) * per)) for c in range(n))
    window = min(cap_q, max(t.ubo_min_quads, 1 << (per - 1).bit_length()))
    nblocks, fw = Mp // rows, ceil_div(N, cols)
    geo = _ubo_geometry(nblocks, fw, mx, t)
    if geo is not None:
        band, width, across = geo
        parts = Layout(ceil_div(nblocks, across) * band, 4 * across * width, True, "row", mx)
        assert not parts.wrapped
        rects = tuple(((i % across * width, i // across * band, width, band),)
                      for i in range(nblocks))
        quad = t.ubo_quad_order and band % 2 == 0 and width % 2 == 0
    else:
        # the targets wrap: block row i is texels i*fw .. of a (nblocks x fw)-texel grid, its
        # draws cover those texels (a rect per texture row they span)
        band, width, across = 1, fw, 1
        parts = Layout(nblocks, 4 * fw, True, "row", mx)
        rects = tuple(_run_rects(i * fw, (i + 1) * fw, parts.tex_w) for i in range(nblocks))
        quad = False
    return UboPlan(rows, cols, nblocks, chunks, per, window, fw, band, width, across, quad,
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


def windows_per_texture(stride: int, max_size: int) -> int:
    """Block windows (``stride`` texels each) one staging texture holds."""
    return max(1, (max_size * max_size) // stride)


def stage_block_passes(plan: "UboPlan", lim: Limits) -> int:
    stride = round_up(plan.vec4s, lim.block_align // 16)
    return ceil_div(plan.nblocks * len(plan.chunks),
                    windows_per_texture(stride, lim.max_texture_size))
