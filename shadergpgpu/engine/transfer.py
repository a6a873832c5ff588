"""Moving data between host memory and textures at the hardware's pace.

Uploads write the caller's float32 bytes straight into the texture when the layout's texels are
those bytes (:attr:`Layout.bytes_match <shadergpgpu.engine.layout.Layout.bytes_match>`: packed,
row order, no padding), else the packed image. Readbacks read into the destination's memory:
the caller's preallocated array (``get(out=...)``) or a new one, without an intermediate bytes
object. On a GPU they go through a pixel buffer object (the copy runs as a DMA, then one copy
into host memory, faster than reading into host memory directly and several times faster than
moderngl's bytes; docs/performance.md has the rates), from ``EngineTuning.pbo_min_bytes`` on; small reads and a
software renderer's (its textures live in host memory already) go straight into host memory.
``get(wait=False)`` issues the copy into the buffer object and
returns a :class:`Readback`: the device goes on with later passes while the copy runs, and
:meth:`Readback.result` waits for it and returns the array.

Where the context has immutable buffer storage (GL 4.4 or ``GL_ARB_buffer_storage``) the buffer
objects live in page-locked client memory, mapped once for their lifetime
(:class:`MappedBuffer`): the texture's bytes arrive there by DMA and one numpy copy moves them
into the destination, with no map call per readback (which waits and copies again): on a GPU
this reads as fast as moderngl's buffers at their best, on any host
(``benchmarks/diag/readback_paths.py`` compares the paths). Uploads from ``EngineTuning.pbo_min_bytes`` on
take the same kind of buffer the other way (:func:`write`): one numpy copy into it, then a copy
on the device that later passes are ordered after; the host returns as soon as its copy is
done.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .glraw import GLRaw
from .tuning import EngineTuning

# The size from which readbacks go through a pixel buffer object, whether buffer objects are
# used at all (not on a software renderer by default) and whether they are page-locked mapped
# buffers: the device's EngineTuning (engine/tuning.py), read at call time.

_PACK, _UNPACK = 0x88EB, 0x88EC     # GL_PIXEL_PACK_BUFFER, GL_PIXEL_UNPACK_BUFFER
_MAP_READ, _MAP_WRITE, _PERSISTENT, _COHERENT, _CLIENT = 0x1, 0x2, 0x40, 0x80, 0x200
_TEXTURE_2D, _RGBA, _FLOAT, _UNPACK_ALIGNMENT = 0x0DE1, 0x1908, 0x1406, 0x0CF5
GL_TEXTURE0 = 0x84C0
_SYNC_COMPLETE, _SYNC_FLUSH = 0x9117, 0x1
_TIMEOUT_EXPIRED, _WAIT_FAILED = 0x911B, 0x911D


def _mappable(ctx) -> bool:
    if getattr(ctx, "sg_loader", None) is not None:   # a native ES context (engine/gles.py)
        return "GL_EXT_buffer_storage" in ctx.extensions
    return ctx.version_code >= 440 or "GL_ARB_buffer_storage" in ctx.extensions


class MappedBuffer:
    """A pixel buffer in page-locked client memory, mapped for its whole life: for reading
    (a pack buffer, readbacks) or, with ``write=True``, for writing (an unpack buffer, uploads).

    Readback: :meth:`issue` starts the copy of a texture into it (returns at once),
    :meth:`wait_into` waits for that copy (a fence, no map call) and copies the bytes into a
    numpy array. Upload: :meth:`upload` copies a numpy array's bytes into it (after the
    previous upload from it has been consumed) and starts the copy into a texture on the
    device (returns at once; the caller's array may change afterwards)."""

    def __init__(self, ctx, nbytes: int, write: bool = False):
        gl = self._gl = GLRaw.get().buffers()
        GLRaw.get().drain()
        name = ctypes.c_uint(0)
        gl.glGenBuffers(1, ctypes.byref(name))
        self.glo = name.value
        self.size = nbytes
        self.write = write
        self._target = _UNPACK if write else _PACK
        self._fence = None
        access = (_MAP_WRITE if write else _MAP_READ) | _PERSISTENT | _COHERENT
        gl.glBindBuffer(self._target, self.glo)
        gl.glBufferStorage(self._target, nbytes, None, access | _CLIENT)
        ptr = gl.glMapBufferRange(self._target, 0, nbytes, access)
        gl.glBindBuffer(self._target, 0)
        err = GLRaw.get().glGetError()
        if not ptr or err:
            self._delete()
            raise OSError(f"a mapped transfer buffer of {nbytes} bytes failed "
                          f"(GL error 0x{err:04X})")
        self._view = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))

    def issue(self, dev, array) -> None:
        """Start the copy of ``array``'s texels into this buffer (ordered after every pass
        issued before)."""
        gl = self._gl
        lay = array.layout
        dev._framebuffer([array]).use()
        gl.glBindBuffer(_PACK, self.glo)
        gl.glReadPixels(0, 0, lay.tex_w, lay.tex_h, _RGBA, _FLOAT, None)
        gl.glBindBuffer(_PACK, 0)
        self._fence = gl.glFenceSync(_SYNC_COMPLETE, 0)
        gl.glFlush()

    def _wait(self) -> None:
        gl = self._gl
        if self._fence is not None:
            while True:
                r = gl.glClientWaitSync(self._fence, _SYNC_FLUSH, 1_000_000_000)
                if r == _WAIT_FAILED:
                    raise RuntimeError("waiting for a transfer failed (glClientWaitSync)")
                if r != _TIMEOUT_EXPIRED:
                    break
            gl.glDeleteSync(self._fence)
            self._fence = None

    def wait_into(self, dest: np.ndarray) -> None:
        self._wait()
        flat = dest.reshape(-1).view(np.uint8)
        if flat.size != self.size:
            raise AssertionError(f"readback of {self.size} bytes into {flat.size}")
        np.copyto(flat, self._view)

    def upload(self, array, data: np.ndarray) -> None:
        """Copy ``data`` (the texture's texels, C-contiguous float32) into this buffer, then
        start its copy into ``array``'s texture."""
        self._wait()                  # the previous upload from this buffer has been consumed
        flat = data.reshape(-1).view(np.uint8)
        if flat.size != self.size:
            raise AssertionError(f"upload of {flat.size} bytes from a {self.size}-byte buffer")
        np.copyto(self._view, flat)
        raw, gl = GLRaw.get(), self._gl
        lay = array.layout
        raw.glActiveTexture(GL_TEXTURE0 + _scratch_unit(array.device))
        raw.glBindTexture(_TEXTURE_2D, array.texture.glo)
        gl.glBindBuffer(_UNPACK, self.glo)
        gl.glPixelStorei(_UNPACK_ALIGNMENT, 4)
        gl.glTexSubImage2D(_TEXTURE_2D, 0, 0, 0, lay.tex_w, lay.tex_h, _RGBA, _FLOAT, None)
        gl.glBindBuffer(_UNPACK, 0)
        self._fence = gl.glFenceSync(_SYNC_COMPLETE, 0)
        gl.glFlush()

    def _delete(self) -> None:
        name = ctypes.c_uint(self.glo)
        self._gl.glDeleteBuffers(1, ctypes.byref(name))

    def release(self) -> None:
        if self.glo:
            if self._fence is not None:
                self._gl.glDeleteSync(self._fence)
                self._fence = None
            self._view = None
            self._gl.glBindBuffer(self._target, self.glo)
            self._gl.glUnmapBuffer(self._target)
            self._gl.glBindBuffer(self._target, 0)
            self._delete()
            self.glo = 0


def _scratch_unit(dev) -> int:
    """The texture unit uploads bind their texture on: the last one, as moderngl's own
    writes do (passes bind their inputs on units from 0 before every draw)."""
    unit = getattr(dev, "_scratch_unit", None)
    if unit is None:
        unit = dev._scratch_unit = int(dev.ctx.info["GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS"]) - 1
    return unit


class PboPool:
    """Pixel buffer objects for readbacks, reused by size (at most ``idle_bytes`` idle: the
    device's :attr:`CacheBounds.pbo_idle_bytes <shadergpgpu.engine.cache.CacheBounds>`):
    :class:`MappedBuffer` where the context has buffer storage, else moderngl buffers."""

    def __init__(self, ctx, idle_bytes: int):
        self.ctx = ctx
        self.idle_bytes = int(idle_bytes)
        self._free: list = []
        self._mappable = None

    def take(self, nbytes: int, write: bool = False, mapped: bool = True):
        """A buffer of ``nbytes`` for a readback, or with ``write`` a mapped one for an upload
        (None where there is none: the upload then goes straight); ``mapped``: a page-locked
        mapped buffer where the context has buffer storage."""
        mapped = mapped and self.mapped_available()
        for i, b in enumerate(self._free):
            kind = b.write if isinstance(b, MappedBuffer) else None   # moderngl: reads only
            if b.size == nbytes and (kind == write if mapped else kind is None and not write):
                return self._free.pop(i)
        if mapped:
            try:
                return MappedBuffer(self.ctx, nbytes, write=write)
            except (OSError, AttributeError):
                self._mappable = False
        return None if write else self.ctx.buffer(reserve=nbytes)

    def mapped_available(self) -> bool:
        if self._mappable is None:
            self._mappable = _mappable(self.ctx)
        return self._mappable

    def give(self, buf, trim: bool = True) -> None:
        """Keep ``buf`` for reuse; release the oldest idle ones past ``idle_bytes`` (not
        with ``trim=False``: from a finalizer, which may run in any thread)."""
        self._free.append(buf)
        while trim and sum(b.size for b in self._free) > self.idle_bytes:
            self._free.pop(0).release()

    def release(self) -> None:
        for b in self._free:
            b.release()
        self._free.clear()


def _issue(dev, array, pbo) -> None:
    if isinstance(pbo, MappedBuffer):
        pbo.issue(dev, array)
    else:
        array.texture.read_into(pbo)   # into the buffer object: returns at once


def _complete(pbo, dest) -> None:
    if isinstance(pbo, MappedBuffer):
        pbo.wait_into(dest)
    else:
        pbo.read_into(dest)


def _straight(dev, nbytes: int) -> bool:
    """Whether a readback of ``nbytes`` goes straight into host memory (no buffer object)."""
    t = dev.tuning(EngineTuning)
    return not t.pbo or nbytes < t.pbo_min_bytes


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
    if raw is out:
        return out
    res = from_logical(array.layout.unpack_array(raw), array.shape)
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
    nbytes = lay.nbytes
    dev.report("readback", nbytes)
    dev._written = ()                  # the device is idle after a readback
    if _straight(dev, nbytes):
        array.texture.read_into(dest)
    else:
        pbo = dev._pbos.take(nbytes, mapped=dev.tuning(EngineTuning).mapped)
        try:
            _issue(dev, array, pbo)
            _complete(pbo, dest)
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
        if dev.tracer is not None or _straight(dev, lay.nbytes):
            # llvmpipe's textures are host memory already; a trace records the read in order;
            # a small read is over before a buffer object would pay off
            self._value = array.get(out=out)
            self._pbo = None
            return
        self._pbo = dev._pbos.take(lay.nbytes, mapped=dev.tuning(EngineTuning).mapped)
        dev.report("readback", lay.nbytes)
        _issue(dev, array, self._pbo)
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
                _complete(self._pbo, dest)
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
    dev.report("readback", 16 * w * h)
    dev._written = ()                  # the device is idle after a readback
    fbo = dev._framebuffer([a])
    out = np.frombuffer(fbo.read(viewport=(x, y, w, h), components=4, dtype="f4"),
                        np.float32).copy()
    if dev.tracer is not None:
        dev.tracer.read(a.texture, out, rect=(x, y, w, h))
    return out


def write(array, data: np.ndarray) -> None:
    """Write the texels ``data`` into ``array``'s texture: from ``EngineTuning.pbo_min_bytes``
    on, on a GPU with buffer storage, through a page-locked mapped buffer (one host copy at
    memory speed, then a copy on the device that later passes wait for), else straight."""
    dev = array.device
    nbytes = data.nbytes
    if not _straight(dev, nbytes) and dev.tuning(EngineTuning).mapped and \
            data.flags.c_contiguous and nbytes == array.layout.nbytes:
        buf = dev._pbos.take(nbytes, write=True)
        if buf is not None:
            try:
                buf.upload(array, data)
            finally:
                dev._pbos.give(buf)
            return
    array.texture.write(data)


def from_logical(m: np.ndarray, shape: tuple) -> np.ndarray:
    """The (rows, cols) matrix ``m`` shaped back as the user's array (``shape``)."""
    if len(shape) == 3:
        h, w, c = shape
        return np.ascontiguousarray(m.reshape(h, w, 4)[..., :c])
    return m.reshape(shape)
