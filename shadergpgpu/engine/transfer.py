"""Moving data between host memory and textures at the hardware's pace.

Uploads write the caller's float32 bytes straight into the texture when the layout's texels are
those bytes (:attr:`Layout.bytes_match <shadergpgpu.engine.layout.Layout.bytes_match>`: packed,
row order, no padding), else the packed image. Readbacks read into the destination's memory:
the caller's preallocated array (``get(out=...)``) or a new one, without an intermediate bytes
object. On a GPU they go through a pixel buffer object (the copy runs as a DMA, then one copy
into host memory: 8.4 GB/s on an H200 against 6.1 GB/s reading into host memory directly and
1.1 GB/s through moderngl's bytes), from ``PBO_MIN_BYTES`` on; small reads and a software
renderer's (its textures live in host memory already) go straight into host memory. ``get(wait=False)`` issues the copy into the buffer object and
returns a :class:`Readback`: the device goes on with later passes while the copy runs, and
:meth:`Readback.result` waits for it and returns the array.
"""
from __future__ import annotations

import numpy as np

#: idle pixel buffer objects kept per device (bytes); more are released when given back
PBO_IDLE_BYTES = 512 << 20
#: readbacks from this size on go through a pixel buffer object on a GPU; smaller ones straight
#: into host memory (a buffer object adds a second synchronised call: for the small reads of an
#: iterative algorithm's host decisions it cost ~0.5 ms each on an H200, a DMA buys nothing)
PBO_MIN_BYTES = 16 << 20


class PboPool:
    """Pixel buffer objects for readbacks, reused by size (at most ``PBO_IDLE_BYTES`` idle)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._free: list = []

    def take(self, nbytes: int):
        for i, b in enumerate(self._free):
            if b.size == nbytes:
                return self._free.pop(i)
        return self.ctx.buffer(reserve=nbytes)

    def give(self, buf, trim: bool = True) -> None:
        """Keep ``buf`` for reuse; release the oldest idle ones past ``PBO_IDLE_BYTES`` (not
        with ``trim=False``: from a finalizer, which may run in any thread)."""
        self._free.append(buf)
        while trim and sum(b.size for b in self._free) > PBO_IDLE_BYTES:
            self._free.pop(0).release()

    def release(self) -> None:
        for b in self._free:
            b.release()
        self._free.clear()


def check_out(array, out) -> np.ndarray:
    """``out`` for ``array.get(out=out)``: a writable C-contiguous float32 numpy array of the
    array's shape (ValueError naming ``out`` otherwise)."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.dtype != np.float32 or out.shape != tuple(array.shape):
        raise ValueError(f"out must be float32 of shape {tuple(array.shape)}, got "
                         f"{out.dtype} {out.shape}")
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise ValueError("out must be C-contiguous and writable")
    return out


def _direct(array) -> bool:
    """Whether the texels land in the result as they are (no unpacking)."""
    if not array.layout.bytes_match:
        return False
    return len(array.shape) != 3 or array.shape[2] == 4


def _finish(array, raw, out):
    """The readback ``raw`` (texels) shaped as ``array``, in ``out`` when given."""
    from .arrays import _from_logical
    if raw is out:
        return out
    res = _from_logical(array.layout.unpack_array(raw), array.shape)
    if out is None:
        return res
    np.copyto(out, res)
    return out


def read(array, out=None) -> np.ndarray:
    """Read ``array`` back now (see the module docstring)."""
    dev = array.device
    lay = array.layout
    direct = _direct(array)
    dest = out if (direct and out is not None) else \
        np.empty(array.shape if direct else (lay.tex_h, lay.tex_w, 4), dtype=np.float32)
    nbytes = lay.tex_w * lay.tex_h * 16
    dev.counter.event("readback", nbytes)
    dev._written = ()                  # the device is idle after a readback
    if dev.is_software or nbytes < PBO_MIN_BYTES:
        array.texture.read_into(dest)
    else:
        pbo = dev._pbos.take(nbytes)
        try:
            array.texture.read_into(pbo)
            pbo.read_into(dest)
        finally:
            dev._pbos.give(pbo)
    return _finish(array, dest, out)


class Readback:
    """A readback in flight (``DeviceArray.get(wait=False)``): the copy of the texture as it is
    after every pass issued before the call; passes issued later do not change it.

    ``result()`` waits for the copy and returns the numpy array (``out`` when one was given),
    once; later calls return the same array. ``done`` says whether ``result()`` has run."""

    def __init__(self, array, out=None):
        dev = array.device
        self._array = array
        self._out = out
        self._value = None
        lay = array.layout
        if dev.is_software or dev.tracer is not None or \
                lay.tex_w * lay.tex_h * 16 < PBO_MIN_BYTES:
            # llvmpipe's textures are host memory already; a trace records the read in order;
            # a small read is over before a buffer object would pay off
            self._value = array.get(out=out)
            self._pbo = None
            return
        self._pbo = dev._pbos.take(lay.tex_w * lay.tex_h * 16)
        dev.counter.event("readback", lay.tex_w * lay.tex_h * 16)
        array.texture.read_into(self._pbo)   # into the buffer object: returns at once
        dev.flush()

    @property
    def done(self) -> bool:
        return self._value is not None

    def result(self) -> np.ndarray:
        if self._value is None:
            a, out = self._array, self._out
            dev = a.device
            dev.activate()
            direct = _direct(a)
            lay = a.layout
            dest = out if (direct and out is not None) else \
                np.empty(a.shape if direct else (lay.tex_h, lay.tex_w, 4), dtype=np.float32)
            try:
                self._pbo.read_into(dest)
            finally:
                dev._pbos.give(self._pbo)
                self._pbo = None
            self._value = _finish(a, dest, out)
        return self._value

    wait = result

    def __del__(self):
        pbo = getattr(self, "_pbo", None)
        if pbo is not None:  # never waited for: the buffer goes back (no GL call here)
            self._array.device._pbos.give(pbo, trim=False)

    def __repr__(self):
        return f"Readback(shape={tuple(self._array.shape)}, done={self.done})"


def read_rect(dev, a, rect) -> np.ndarray:
    """:meth:`Device.read_rect <shadergpgpu.engine.device.Device.read_rect>`: the raw texels of
    ``a`` inside ``rect`` = (x, y, w, h), read back now."""
    dev.activate()
    x, y, w, h = (int(v) for v in rect)
    dev.counter.event("readback", 16 * w * h)
    dev._written = ()                  # the device is idle after a readback
    fbo = dev._framebuffer([a])
    out = np.frombuffer(fbo.read(viewport=(x, y, w, h), components=4, dtype="f4"),
                        np.float32).copy()
    if dev.tracer is not None:
        dev.tracer.read(a.texture, out, rect=(x, y, w, h))
    return out
