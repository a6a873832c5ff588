"""What the schedules adapt to and the choices they make from it.

:func:`limits` gathers the device's (or a profile's) limits; from them come the register tile's
rows (:func:`tile_rows`, the products' R), the fused update's chunk (:func:`update_chunk`), the
layout of temporaries (squarish, not thin strips), the passes a split or accumulating kernel is
drawn in, and the choices a hardware rasteriser takes (``HARDWARE``: make the first hidden layer
and its errors inside their consumers, read buffer mirrors). ``HARDWARE`` and ``_hw`` live here
and are read at call time: code or tests that change them patch this module.
Pure shape math: nothing here makes a GL object.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

from ...engine.layout import DEFAULT_MAX_SIZE, Layout


def _quads(n) -> int:
    return -(-int(n) // 4)


def update_chunk(grid_w: int, loop_cap: int | None) -> int:
    """Training-vector texels one partial-sum fragment of the fused update adds up."""
    chunk = max(8, math.isqrt(int(grid_w)))
    return chunk if loop_cap is None else max(1, min(chunk, int(loop_cap)))


def _grid_w(N, packed):
    return -(-int(N) // 4) if packed else int(N)


def _slices(kernel, loop_cap, uniforms=None, **shapes) -> int:
    """Passes the engine cuts a split kernel into for arrays of these (rows, cols)."""
    lays = {k: SimpleNamespace(rows=r, cols=c) for k, (r, c) in shapes.items()}
    return max(1, len(kernel.slices(lays, uniforms or {}, {}, loop_cap)))


# ---- the limits a schedule adapts to -----------------------------------------------------------
def limits(device=None, profile=None, loop_cap=None, software=False,
           max_texture_size=None) -> SimpleNamespace:
    """What the schedules adapt to: ``loop_cap`` (None for none), ``max_outputs`` (render
    targets per pass), ``float_blending`` (accumulation by blending; without it every
    accumulating pass becomes ping-pong passes), ``max_texture_size`` (arrays wrap past it)
    and ``software`` (a software rasteriser, which runs a gather pass's branches masked: the
    fused forward gathers one render target per pass there). From a device (its profile and
    the real context), else from a profile (name, path or Profile; None: native),
    ``loop_cap``, ``software`` and ``max_texture_size``."""
    if device is not None:
        return SimpleNamespace(loop_cap=device.loop_cap, max_outputs=int(device.max_outputs),
                               float_blending=bool(device.float_blending),
                               max_texture_size=int(device.max_texture_size),
                               software=bool(device.is_software))
    from ...engine.profiles import load
    lim = load(profile).limits
    caps = [int(c) for c in (loop_cap, lim.get("loop_cap")) if c is not None]
    sizes = [int(c) for c in (max_texture_size, lim.get("max_texture_size")) if c is not None]
    return SimpleNamespace(loop_cap=min(caps) if caps else None,
                           max_outputs=min(8, lim.get("max_draw_buffers") or 8),
                           float_blending=lim.get("float32_blend") is not False,
                           max_texture_size=min(sizes) if sizes else DEFAULT_MAX_SIZE,
                           software=bool(software))


def _gather_passes(lim, R: int, n_out: int, out_layout, last: bool = False) -> int:
    """Passes gathering a forward product's R targets into layer ``out_layout``: one, or on a
    software rasteriser (a hidden layer, unwrapped) one per non-empty target, each over the
    rows that target holds (a plain copy with f instead of R masked fetches per texel)."""
    if not lim.software or R == 1 or last or out_layout.wrapped:
        return 1
    h = -(-int(n_out) // R)
    return -(-int(n_out) // h)


def _acc(lim, n_outputs: int) -> int:
    """Passes one accumulating pass draws: 1 by blending, else 1 + 2 per output (ping-pong:
    draw into temporaries, combine, copy back; ``Device.accumulate_passes``)."""
    return 1 if lim.float_blending else 1 + 2 * int(n_outputs)


def _split_passes(kernel, lim, n_outputs, uniforms=None, **shapes) -> int:
    """Passes of a split kernel: its first slice writes, the others accumulate."""
    n = _slices(kernel, lim.loop_cap, uniforms, **shapes)
    return 1 + (n - 1) * _acc(lim, n_outputs)


def tile_rows(max_outputs: int, rows: int) -> int:
    """Rows R of the register tile (render targets) for a product with ``rows`` output rows:
    the R in (1, 4, 8) within ``max_outputs`` that needs the fewest fetches per K-quad over all
    rows, ceil(rows / R) (R + 4), counting a quarter fetch per row computed (the rows past
    ``rows`` are wasted multiply-adds: 10 rows take R = 4, three tiles, not two of 8)."""
    best, cost = 1, 5.25 * int(rows)
    for R in (4, 8):
        if R <= max_outputs:
            t = -(-int(rows) // R)
            c = t * (R + 4) + 0.25 * t * R
            if c <= cost:
                best, cost = R, c
    return best


def _product_rows(max_outputs: int, rows: int, quads: int, direct: float) -> int:
    """R for a product with ``rows`` output rows over ``quads`` K-quads, by fetches per
    column texel, counting a fragment as FRAGMENT_COST fetches: the direct kernel (R = 1, no
    gather pass) costs ``direct`` per row and K-quad; a tile of R rows ceil(rows / R) quads
    (R + 4 + R / 4: a quarter fetch per row computed) and the gather pass R + 1 per row (it
    reads every target where a rasteriser runs its branches masked)."""
    F = FRAGMENT_COST
    best, cost = 1, rows * (direct * quads + F)
    for R in (4, 8):
        if R <= max_outputs:
            c = -(-rows // R) * (quads * (1.25 * R + 4) + F) + rows * (R + 1 + F)
            if c < cost:
                best, cost = R, c
    return best


FRAGMENT_COST = 4


def _fwd_rows(lim, n_in: int, n_out: int) -> int:
    """Tile rows of the forward product of a layer with ``n_in`` inputs (threshold included):
    1 for the direct kernel (a W texel and four A texels per K-quad)."""
    return _product_rows(lim.max_outputs, n_out, _quads(n_in), 5)


FUSE_MAX_UP = 4         # widest upper layer whose errors the first gradient makes itself


# What a hardware rasteriser (``lim.software`` False) takes, measured with the fused step on an
# NVIDIA H200 (steady state, ms/step): making the first hidden layer and its errors inside their
# consumers pays there too (2-64-1 N=1,024: 7 passes 0.11-0.12, 5 passes 0.09-0.11; 2-1024-1
# N=16,384: 3.9 vs 1.5), but the buffer mirrors of the weights do not: refreshing them costs
# more than the buffer fetches save (2-64-1: 0.12-0.13 with, 0.09-0.11 without; 64-256-10
# N=4,096: 1.09 vs 0.99; 2-1024-1: 1.57 vs 1.53), so the products read the textures there.
# A software rasteriser (llvmpipe) fetches from buffers faster and takes all three.
HARDWARE = {"fuse_delta": True, "recompute": True, "buffers": False}


def _hw(lim, key) -> bool:
    return lim is None or lim.software or HARDWARE[key]


def _fused_delta(L, lim=None) -> bool:
    """Whether the fused schedule makes the first hidden layer's errors inside the first
    layer's gradient (no backprop pass into it): they feed nothing else, and the layer above
    has at most FUSE_MAX_UP neurons (one K-quad)."""
    return len(L) > 2 and L[2] <= FUSE_MAX_UP and _hw(lim, "fuse_delta")


def _recompute(L, lim=None) -> bool:
    """Whether the fused schedule never stores the first hidden layer: over at most three
    inputs (one K-quad with the threshold), each consumer (the next forward product, the
    gradients) makes it again from the inputs and the first weights, one fetch per row as
    reading it would cost; with its errors already made inside the first gradient
    (:func:`_fused_delta`), that saves the passes writing both."""
    return _fused_delta(L, lim) and L[0] + 1 <= 4 and _hw(lim, "recompute")


def _buffers(dev) -> bool:
    """Whether the products read the weights and inputs through buffer textures (mirrors)."""
    return bool(dev.buffer_textures) and _hw(limits(device=dev), "buffers")


def _bp_rows(lim, n_up: int, n_low: int) -> int:
    """Tile rows of the error backpropagation from ``n_up`` neurons to ``n_low`` rows (1: the
    direct kernel, a W element and a Dup texel per upper neuron)."""
    return _product_rows(lim.max_outputs, n_low, _quads(n_up), 8)


def _squarish(dev, rows: int, cols: int, packed: bool = True):
    """Layout of a temporary (rows x cols): as usual, or wrapped into a squarer texture when
    the usual one would be a thin strip (a 1-texel-wide column of partial sums leaves most
    lanes of a rasteriser's pixel blocks idle)."""
    return _squarish_layout(dev.max_texture_size, rows, cols, packed)


def _squarish_layout(max_size: int, rows: int, cols: int, packed: bool = True) -> Layout:
    lay = Layout(int(rows), int(cols), packed, "row", max_size)
    n = lay.n_texels
    if min(lay.tex_size) >= 16 or n <= 4096:
        return lay
    side = min(max_size, max(64, 1 << math.ceil(math.log2(math.sqrt(n)))))
    return Layout(int(rows), int(cols), packed, "row", side)
