"""What the schedules adapt to and the choices they make from it.

:func:`limits` gathers the device's (or a profile's) limits; from them come the register tile's
rows (:func:`tile_rows`, the products' R), the fused update's chunk (:func:`update_chunk`), the
layout of temporaries (squarish, not thin strips), the passes a split or accumulating kernel is
drawn in, the choices of the device's :class:`~.tuning.BackpropTuning` (``lim.tuning``: make
the first hidden layer and its errors inside their consumers, read buffer mirrors, the
uniform-block path: :func:`ubo_recompute`, :func:`ubo_forward_plan`). Pure shape math: nothing
here makes a GL object.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

# blocks also by module: offset_alignment is read at call time (a test sets it for an NVIDIA
# window)
from ...engine import blocks as engine_blocks
from ...engine.blocks import ES_MIN_UNIFORM_BLOCK_SIZE, has_uniform_blocks, max_block_bytes
from ...engine.layout import DEFAULT_MAX_SIZE, Layout
from ...engine.profiles import load
from .tuning import BackpropTuning


def quad_count(n) -> int:
    return -(-int(n) // 4)


def update_chunk(grid_w: int, loop_cap: int | None) -> int:
    """Training-vector texels one partial-sum fragment of the fused update adds up."""
    chunk = max(8, math.isqrt(int(grid_w)))
    return chunk if loop_cap is None else max(1, min(chunk, int(loop_cap)))


def grid_width(N, packed):
    return -(-int(N) // 4) if packed else int(N)


def _slices(kernel, loop_cap, uniforms=None, **shapes) -> int:
    """Passes the engine cuts a split kernel into for arrays of these (rows, cols)."""
    lays = {k: SimpleNamespace(rows=r, cols=c) for k, (r, c) in shapes.items()}
    return max(1, len(kernel.slices(lays, uniforms or {}, {}, loop_cap)))


# ---- the limits a schedule adapts to -----------------------------------------------------------
def limits(device=None, profile=None, loop_cap=None, software=False,
           max_texture_size=None, tuning: BackpropTuning | None = None) -> SimpleNamespace:
    """What the schedules adapt to: ``loop_cap`` (None for none), ``max_outputs`` (render
    targets per pass), ``float_blending`` (accumulation by blending; without it every
    accumulating pass becomes ping-pong passes), ``max_texture_size`` (arrays wrap past it),
    ``software`` (a software rasteriser, which runs a gather pass's branches masked: the
    fused forward gathers one render target per pass there) and ``block_bytes`` (the largest
    uniform-block window, 0 without uniform blocks; ``block_align``: window offsets are
    multiples of it). From a device (its profile and the real
    context), else from a profile (name, path or Profile; None: native, taken as a device with
    windows of ``NATIVE_BLOCK_BYTES``; another profile with uniform blocks: the GLSL ES
    minimum, 16 KiB), ``loop_cap``, ``software`` and ``max_texture_size``. ``tuning``: the
    :class:`~.tuning.BackpropTuning` the choices follow (default: the device's; without a
    device, the defaults for ``software``), as ``lim.tuning``."""
    if device is not None:
        blocks = max_block_bytes(device) if has_uniform_blocks(device) else 0
        kind = BackpropTuning.kind_of(device)
        return SimpleNamespace(loop_cap=device.loop_cap, max_outputs=int(device.max_outputs),
                               float_blending=bool(device.float_blending),
                               max_texture_size=int(device.max_texture_size),
                               software=bool(device.plans_for_software), block_bytes=int(blocks),
                               block_align=int(engine_blocks.offset_alignment(device)),
                               tuning=device.tuning(BackpropTuning) if tuning is None
                               else tuning.for_kind(kind))
    prof = load(profile)
    lim = prof.limits
    caps = [int(c) for c in (loop_cap, lim.get("loop_cap")) if c is not None]
    sizes = [int(c) for c in (max_texture_size, lim.get("max_texture_size")) if c is not None]
    blocks = (0 if prof.glsl == "110" else NATIVE_BLOCK_BYTES if prof.is_native
              else ES_MIN_UNIFORM_BLOCK_SIZE)
    return SimpleNamespace(loop_cap=min(caps) if caps else None,
                           max_outputs=min(8, lim.get("max_draw_buffers") or 8),
                           float_blending=lim.get("float32_blend") is not False,
                           max_texture_size=min(sizes) if sizes else DEFAULT_MAX_SIZE,
                           software=bool(software), block_bytes=blocks,
                           block_align=NATIVE_BLOCK_ALIGN,
                           tuning=(tuning or BackpropTuning()).for_kind(
                               "software" if software else "hardware"))


def gather_passes(lim, R: int, n_out: int, out_layout, last: bool = False) -> int:
    """Passes gathering a forward product's R targets into layer ``out_layout``: one, or on a
    software rasteriser (a hidden layer, unwrapped) one per non-empty target, each over the
    rows that target holds (a plain copy with f instead of R masked fetches per texel)."""
    if not lim.software or R == 1 or last or out_layout.wrapped:
        return 1
    h = -(-int(n_out) // R)
    return -(-int(n_out) // h)


def accumulate_pass_count(lim, n_outputs: int) -> int:
    """Passes one accumulating pass draws: 1 by blending, else 1 + 2 per output (ping-pong:
    draw into temporaries, combine, copy back; ``Device.accumulate_passes``)."""
    return 1 if lim.float_blending else 1 + 2 * int(n_outputs)


def split_passes(kernel, lim, n_outputs, uniforms=None, **shapes) -> int:
    """Passes of a split kernel: its first slice writes, the others accumulate."""
    n = _slices(kernel, lim.loop_cap, uniforms, **shapes)
    return 1 + (n - 1) * accumulate_pass_count(lim, n_outputs)


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


def fwd_rows(lim, n_in: int, n_out: int) -> int:
    """Tile rows of the forward product of a layer with ``n_in`` inputs (threshold included):
    1 for the direct kernel (a W texel and four A texels per K-quad)."""
    return _product_rows(lim.max_outputs, n_out, quad_count(n_in), 5)


FUSE_MAX_UP = 4         # widest upper layer whose errors the first gradient makes itself


# The choices of the tuning (BackpropTuning): on a hardware rasteriser making the first hidden
# layer and its errors inside their consumers pays, but the buffer mirrors of the weights do
# not (refreshing them costs more than the buffer fetches save), so the products read the
# textures there; a software rasteriser (llvmpipe) fetches from buffers faster and takes all
# three. Without limits (None), all three.
def _hw(lim, key) -> bool:
    return lim is None or bool(getattr(lim.tuning, key))


def fused_delta(L, lim=None) -> bool:
    """Whether the fused schedule makes the first hidden layer's errors inside the first
    layer's gradient (no backprop pass into it): they feed nothing else, and the layer above
    has at most FUSE_MAX_UP neurons (one K-quad)."""
    return len(L) > 2 and L[2] <= FUSE_MAX_UP and _hw(lim, "fuse_delta")


def recomputes_first_layer(L, lim=None) -> bool:
    """Whether the fused schedule never stores the first hidden layer: over at most three
    inputs (one K-quad with the threshold), each consumer (the next forward product, the
    gradients) makes it again from the inputs and the first weights, one fetch per row as
    reading it would cost; with its errors already made inside the first gradient
    (:func:`fused_delta`), that saves the passes writing both."""
    return fused_delta(L, lim) and L[0] + 1 <= 4 and _hw(lim, "recompute")


def reads_buffer_mirrors(dev) -> bool:
    """Whether the products read the weights and inputs through buffer textures (mirrors)."""
    return bool(dev.buffer_textures) and _hw(limits(device=dev), "buffers")


def bp_rows(lim, n_up: int, n_low: int) -> int:
    """Tile rows of the error backpropagation from ``n_up`` neurons to ``n_low`` rows (1: the
    direct kernel, a W element and a Dup texel per upper neuron)."""
    return _product_rows(lim.max_outputs, n_low, quad_count(n_up), 8)


def squarish_layout_of(dev, rows: int, cols: int, packed: bool = True):
    """Layout of a temporary (rows x cols): as usual, or wrapped into a squarer texture when
    the usual one would be a thin strip (a 1-texel-wide column of partial sums leaves most
    lanes of a rasteriser's pixel blocks idle)."""
    return squarish_layout(dev.max_texture_size, rows, cols, packed)


def squarish_layout(max_size: int, rows: int, cols: int, packed: bool = True) -> Layout:
    lay = Layout(int(rows), int(cols), packed, "row", max_size)
    n = lay.n_texels
    if min(lay.tex_size) >= 16 or n <= 4096:
        return lay
    side = min(max_size, max(64, 1 << math.ceil(math.log2(math.sqrt(n)))))
    return Layout(int(rows), int(cols), packed, "row", side)


# ---- the uniform-block path (weights read at one address per draw) ----------------------------
#: GL_MAX_UNIFORM_BLOCK_SIZE taken for a native profile without a device (the plans): what the
#: NVIDIA driver and Mesa report (the GL 3.3 minimum is 16 KiB).
NATIVE_BLOCK_BYTES = 65536
#: ... and its GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT (bytes; NVIDIA's, Mesa's llvmpipe has 16).
NATIVE_BLOCK_ALIGN = 256
#: The window every uniform-block input of the backprop kernels is declared with (bytes): one
#: compiled program serves every layer width (sizes are uniforms), so a device takes the path
#: only where its uniform blocks are at least this big (not under the legacy and mobile
#: profiles, whose windows are 16 KiB or none).
UBO_BLOCK_BYTES = 65536
# Where the uniform-block path is taken (BackpropTuning.ubo: by default on a hardware
# rasteriser; on llvmpipe the recompute path was slower than the texture path), whether the
# forward products of other nets read their weights from blocks (ubo_forward), and the
# recompute path's gradient pass (ubo_chunk, ubo_fragments, ubo_strided, ubo_newton_*): the
# device's tuning, as lim.tuning.


def _ubo(lim) -> bool:
    """Whether the uniform-block path may be taken under limits ``lim``."""
    return getattr(lim, "block_bytes", 0) >= UBO_BLOCK_BYTES and bool(lim.tuning.ubo)


def ubo_chunk_texels(L, grid_w: int, loop_cap, tuning: BackpropTuning) -> int | None:
    """Training-vector texels per fragment of the recompute path's gradient pass (None where
    its loop, or the apply pass's loop over the chunks, cannot fit the loop cap)."""
    lo, hi = tuning.ubo_chunk
    rows = int(L[1]) + 1
    chunk = max(lo, min(hi, -(-int(grid_w) * rows // tuning.ubo_fragments)))
    chunk = max(1, min(chunk, int(grid_w)))
    if loop_cap is not None:
        chunk = max(chunk, -(-int(grid_w) // int(loop_cap)))
        if chunk > loop_cap:
            return None
    return chunk


def ubo_recompute(L, lim, N=None, packed=True) -> bool:
    """Whether the fused schedule runs as the recompute path on uniform blocks: one hidden
    layer over at most three inputs, at most four outputs; one pass propagates forward through
    both layers (the hidden activations made and consumed in registers, the weights read from
    uniform blocks) and writes the output error, a second walks the training vectors per hidden
    unit, making its activation again and adding the gradients of both layers, then one apply
    pass per layer: 4 passes, and the hidden layer never stored (N training vectors, for the
    loop cap)."""
    if len(L) != 3 or L[0] + 1 > 4 or L[2] > 4 or not _ubo(lim):
        return False
    vec4s = UBO_BLOCK_BYTES // 16
    nq = -(-(int(L[1]) + 1) // 4)
    if L[1] > vec4s or L[2] * nq > vec4s:
        return False
    if lim.loop_cap is not None and nq > lim.loop_cap:
        return False
    if N is not None and (int(L[1]) + 1) * int(N) < lim.tuning.ubo_min_pairs:
        return False
    return N is None or \
        ubo_chunk_texels(L, grid_width(N, packed), lim.loop_cap, lim.tuning) is not None


def ubo_forward_plan(lim, n_in: int, n_out: int, N: int | None = None, packed: bool = True):
    """(R, windows, hw) of a forward layer whose tiled product reads its weights from
    uniform-block windows, or None where the layer keeps the texture path (the direct kernel,
    no uniform blocks, a K loop over the cap, a window too small for one tile's K range, the
    targets of N training vectors too large for a texture).

    The column-packed weights are copied in texture order (neuron j's K-quads from vec4
    j Q on); a window holds R hw neurons whose start is a multiple of the offset alignment,
    as few windows as hold all ``n_out`` neurons, one draw each."""
    if not (lim.tuning.ubo_forward and _ubo(lim)):
        return None
    R = fwd_rows(lim, n_in, n_out)
    Q = quad_count(n_in)
    if R == 1 or (lim.loop_cap is not None and Q > lim.loop_cap):
        return None
    align = max(1, int(getattr(lim, "block_align", NATIVE_BLOCK_ALIGN)) // 16)
    step = math.lcm(R, align // math.gcd(Q, align))       # neurons: whole tiles, aligned starts
    vec4s = UBO_BLOCK_BYTES // 16
    if step * Q > vec4s:
        return None
    windows = -(-int(n_out) * Q // vec4s)
    while True:
        per = -(-(-(-int(n_out) // windows)) // step) * step
        if per * Q <= vec4s:
            break
        windows += 1
    nw = -(-int(n_out) // per)
    if N is not None and ubo_targets(nw * (per // R), N, packed, lim.max_texture_size) is None:
        return None
    return R, nw, per // R


#: Texels a side of the 2-D run each target row takes in the uniform-block forward product:
#: a row of the product (one tile of neurons, all training vectors) is laid out as rows of
#: UBO_SIDE texels, one under the other, so a block of fragments lies within one tile and
#: reads one address.
UBO_SIDE = 32


def ubo_targets(rows: int, cols: int, packed: bool, max_size: int):
    """(Layout, rpt) of the uniform-block forward product's targets for ``rows`` tile rows of
    ``cols`` training vectors: row r's texel c at grid texel (r rpt + c / side, c % side),
    ``side`` = UBO_SIDE (or wider, for the texture to fit ``max_size``); None if it cannot."""
    grid_w = -(-int(cols) // 4) if packed else int(cols)
    side = min(UBO_SIDE, 1 << (grid_w - 1).bit_length())
    while -(-grid_w // side) * int(rows) > max_size:
        side *= 2
        if side > max_size:
            return None
    rpt = -(-grid_w // side)
    return Layout(int(rows) * rpt, side * (4 if packed else 1), packed, "row", max_size), rpt
