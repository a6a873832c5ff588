"""Uniform-block inputs: a window of a GL buffer read by a kernel as a std140 ``vec4`` array.

A kernel declares the input with ``In(block=True)``; the engine then generates::

    layout(std140) uniform sg_X { vec4 sg_X_data[N]; };
    #define X_VEC4S N                 // the window's length, a compile-time constant
    vec4 X_vec4(int i)                // i-th vec4 of the window

where ``N`` comes from the array's :class:`BlockLayout` (part of the layout *kind*: one program
per window length). A :class:`BlockArray` is the pass input: a GL buffer plus the window's
current offset; :meth:`BlockArray.select` moves the window (the range bound by ``bind``), so an
algorithm can point successive draws of one prepared pass at different ranges of one buffer
(:meth:`~shadergpgpu.engine.passes.Pass.sweep`'s ``each`` callback). The point of the path: a
value every fragment of a draw reads at the same address is served by the constant cache,
not by texel fetches.

GLSL ES 3.00 has uniform blocks (std140) but no ``layout(binding=)``: the binding point (the
input's index, as for texture units) is set through the API when the kernel is compiled.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lifetime import Releasable
from .layout import GUARD_VEC4, debug_guard

#: The guaranteed minimum of GL_MAX_UNIFORM_BLOCK_SIZE in OpenGL ES 3.0 / WebGL 2 (bytes); the
#: window cap used under a non-native profile (profiles list no uniform-block limit).
ES_MIN_UNIFORM_BLOCK_SIZE = 16384


@dataclass(frozen=True)
class BlockLayout:
    """A window of ``vec4s`` vec4 (16 bytes each) of a uniform buffer."""

    vec4s: int

    def __post_init__(self):
        if not isinstance(self.vec4s, (int, np.integer)) or self.vec4s < 1:
            raise ValueError(f"vec4s must be a positive integer, got {self.vec4s!r}")
        object.__setattr__(self, "vec4s", int(self.vec4s))

    # the engine's layout protocol
    packed = True
    order = "row"

    @property
    def rows(self) -> int:
        return 1

    @property
    def cols(self) -> int:
        return 4 * self.vec4s

    @property
    def nbytes(self) -> int:
        return 16 * self.vec4s

    @property
    def kind(self) -> tuple:
        return ("block", self.vec4s)

    @property
    def shape_uniform(self) -> tuple:
        return (1, 4 * self.vec4s, self.vec4s, 0)

    def glsl_input(self, name: str, check: int | None = None) -> str:
        return glsl_block_input(self.kind, name, check)


def glsl_block_input(kind: tuple, name: str, check: int | None = None) -> str:
    """Declaration and accessor of uniform-block input ``name`` (kind ``("block", N)``);
    ``check`` (debug mode: the input's number) guards the index (see
    :func:`~shadergpgpu.engine.layout.debug_guard`)."""
    n = int(kind[1])
    guard = debug_guard(check, GUARD_VEC4, "i", "0", (("i", str(n)),))
    return (f"layout(std140) uniform sg_{name} {{\n    vec4 sg_{name}_data[{n}];\n}};\n"
            f"#define {name}_VEC4S {n}\n"
            f"vec4 {name}_vec4(int i) {{\n{guard}    return sg_{name}_data[i];\n}}\n")


def has_uniform_blocks(device) -> bool:
    """Whether kernels may read uniform blocks on ``device`` (and its profile: GLSL 1.10, the
    GeForce 7800 GTX level, has none)."""
    prof = getattr(device, "profile", None)
    return prof is None or prof.glsl != "110"


def max_block_bytes(device) -> int:
    """Largest window (bytes) one uniform block may bind: GL_MAX_UNIFORM_BLOCK_SIZE of the
    context, capped at the ES 3.0 minimum (16 KiB) under a non-native profile."""
    v = int(device.ctx.info.get("GL_MAX_UNIFORM_BLOCK_SIZE") or ES_MIN_UNIFORM_BLOCK_SIZE)
    prof = getattr(device, "profile", None)
    if prof is not None and not prof.is_native:
        v = min(v, ES_MIN_UNIFORM_BLOCK_SIZE)
    return v


def offset_alignment(device) -> int:
    """GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT (bytes): window offsets are multiples of it."""
    return max(16, int(device.ctx.info.get("GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT") or 256))


class BlockArray(Releasable):
    """A GL buffer of vec4 read by a kernel through a window of ``layout.vec4s`` vec4.

    ``data``: host float32 values, shape (n, 4) (or anything of n * 4 elements), or ``None``
    with ``reserve`` bytes (fill it from a texture with :meth:`write_from_texture`). The window
    starts at vec4 ``offset`` (:meth:`select`); the buffer must hold the whole window at every
    offset used (GLSL ES requires the bound range to cover the block).
    """

    def __init__(self, device, layout: BlockLayout, data=None, reserve: int | None = None):
        if layout.nbytes > max_block_bytes(device):
            raise ValueError(f"a uniform-block window of {layout.nbytes} bytes exceeds this "
                             f"device's limit of {max_block_bytes(device)} bytes")
        self.device = device
        self.layout = layout
        self.offset = 0
        self._align = offset_alignment(device)
        device.activate()
        if data is not None:
            raw = np.ascontiguousarray(data, dtype=np.float32).reshape(-1)
            self.buffer = device.ctx.buffer(raw.tobytes())
        else:
            self.buffer = device.ctx.buffer(reserve=int(reserve))
        self.n_vec4 = self.buffer.size // 16

    def write_from_texture(self, array, offset: int = 0, nbytes: int | None = None) -> None:
        """Copy a DeviceArray's texels (in texture memory order) into the buffer at byte
        ``offset``, on the GPU. ``nbytes``: how much of the texture is meant (default all of
        it); a wrapped texture's tail past it must fit in the buffer too."""
        size = array.layout.nbytes
        # reported: a driver may wait for the passes writing the texture
        self.device.report("buffer_copy", size)
        if offset < 0 or offset + size > self.buffer.size:
            if nbytes is None or offset + nbytes > self.buffer.size:
                raise ValueError("the texture does not fit in the block buffer at that offset")
            # the texture's padding tail would overflow: copy through a temporary buffer
            self.device.activate()
            tmp = self.device.ctx.buffer(reserve=size)
            try:
                array.texture.read_into(tmp, alignment=4)
                self.device.ctx.copy_buffer(self.buffer, tmp, size=nbytes, read_offset=0,
                                             write_offset=offset)
            finally:
                tmp.release()
            return
        self.device.activate()
        array.texture.read_into(self.buffer, alignment=4, write_offset=offset)

    def select(self, offset: int) -> "BlockArray":
        """Move the window to start at vec4 ``offset`` (takes effect at the next bind)."""
        off = int(offset)
        if off < 0 or off + self.layout.vec4s > self.n_vec4:
            raise ValueError(f"window [{off}, {off + self.layout.vec4s}) is outside the "
                             f"buffer's {self.n_vec4} vec4")
        if (16 * off) % self._align:
            raise ValueError(f"window offset {16 * off} bytes is not a multiple of the "
                             f"device's GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT ({self._align})")
        self.offset = off
        return self

    # ---- the engine's input protocol (layout, bind, released) ----------------------------------
    def bind(self, unit: int) -> None:
        self.buffer.bind_to_uniform_block(unit, offset=16 * self.offset,
                                          size=self.layout.nbytes)

    @property
    def released(self) -> bool:
        return self.buffer is None

    def release(self) -> None:
        if getattr(self, "buffer", None) is not None:
            dev = self.device
            buf, self.buffer = self.buffer, None
            dev._epoch += 1  # prepared passes that read this block must not draw with it
            if not dev.released:
                dev.activate()
                buf.release()
