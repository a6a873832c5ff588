"""Staging of the operands: op(X) zero-padded into a packed row-major texture, a texture
buffer, or the uniform-block windows of A, by staging passes on the device; numpy operands are
uploaded as they are first (their own bytes where they are the texels), so no staging copy
runs on the host.
"""
from __future__ import annotations

from ...engine.arrays import DeviceArray
from ...engine.blocks import BlockArray, BlockLayout, offset_alignment
from ...engine.glraw import BufferArray
from ...engine.layout import BufferLayout, Layout
from .kernels import STAGE, STAGE_BLOCK
from .ubo import UboPlan, windows_per_texture
from .variants import padded_shape, round_up


def _uploaded(dev, x):
    """A host operand on the device as it is: one upload of its own bytes where they are the
    texels (no host copy); the staging passes then pad, transpose and reorder it on the GPU,
    instead of copies on the host (several times slower than the upload on a GPU)."""
    return dev.array(x)


def stage_texture(dev, x, trans: bool, rows: int, cols: int, prows: int, pcols: int):
    """op(x) zero-padded to (prows, pcols), packed row-major, as a DeviceArray."""
    if not isinstance(x, DeviceArray):
        if not trans and x.shape == (prows, pcols):
            return _uploaded(dev, x)          # already the staged operand
        tmp = _uploaded(dev, x)
        try:
            return stage_texture(dev, tmp, trans, rows, cols, prows, pcols)
        finally:
            tmp.release()
    out = dev.empty((prows, pcols))
    with dev.phase("sgemm/stage"):
        dev.run(STAGE, out, inputs={"X": x},
                defines={"TRANS": int(trans), "TEXELS": staged_texels(x, trans)})
    return out


def stage_b(dev, v, B, trans_b: bool, N: int, K: int):
    """op(B) staged for variant ``v``: op(B)^T, its rows padded to whole fragments, for the
    tiles of 2 or 1 columns (B transposed), else op(B) zero-padded to Kp x N. It does not
    depend on M: a call pipelined by row blocks of C stages it once for every block."""
    _, Kp = padded_shape(v, 1, K)
    if v.b_transposed:
        return stage_texture(dev, B, not trans_b, N, K, round_up(N, v.tile_cols), Kp)
    return stage_texture(dev, B, trans_b, K, N, Kp, N)


def staged_texels(x, trans: bool) -> int:
    """1 where the staging kernels may copy ``x`` texel by texel (packed row-major, not
    transposed: an output texel is one texel of x), else 0 (one read per lane)."""
    lay = x.layout
    return int(not trans and bool(lay.packed) and lay.order == "row")


def stage_buffer(dev, x, trans: bool, rows: int, cols: int, prows: int, pcols: int):
    """op(x) zero-padded to (prows, pcols) in a texture buffer (staged as a texture first,
    host operands included)."""
    tex = stage_texture(dev, x, trans, rows, cols, prows, pcols)
    try:
        return BufferArray.from_texture(dev, BufferLayout(prows, pcols), tex)
    finally:
        tex.release()


def stage_block(dev, x, trans: bool, M: int, K: int, plan: UboPlan) -> BlockArray:
    """op(x) (M x K) into block windows: window (i, c) = rows rows*i .. of K chunk c, vec4
    number q * rows + t = op(x)[rows*i + t, 4*(q0_c + q) .. +3]; windows start at multiples of
    the device's uniform-buffer offset alignment."""
    rows, n = plan.rows, len(plan.chunks)
    stride = round_up(plan.vec4s, offset_alignment(dev) // 16)   # vec4 between windows
    lay = BlockLayout(plan.vec4s)
    if not isinstance(x, DeviceArray):
        tmp = _uploaded(dev, x)
        try:
            return stage_block(dev, tmp, trans, M, K, plan)
        finally:
            tmp.release()
    # one staging pass per group of windows that fits in one texture (1 but for tiny
    # texture limits), each copied on the GPU into its part of the buffer
    total = plan.nblocks * n
    group = windows_per_texture(stride, dev.max_texture_size)
    blk = BlockArray(dev, lay, reserve=16 * stride * total)
    for r0 in range(0, total, group):
        cnt = min(group, total - r0)
        tex = dev.alloc(Layout(cnt, 4 * stride, True, "row", dev.max_texture_size))
        try:
            with dev.phase("sgemm/stage"):
                dev.run(STAGE_BLOCK, tex, inputs={"X": x},
                        uniforms={"chunks": n, "chunk": plan.per, "first": r0},
                        defines={"TRANS": int(trans), "TILE_ROWS": rows,
                                 "TEXELS": staged_texels(x, trans)})
            blk.write_from_texture(tex, 16 * stride * r0, 16 * stride * cnt)
        finally:
            tex.release()
    blk.stride = stride
    return blk
