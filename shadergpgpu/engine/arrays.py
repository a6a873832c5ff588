"""Device arrays: float32 matrices held in RGBA32F textures, and the texture pool.

A :class:`DeviceArray` couples a texture with its :class:`~shadergpgpu.engine.layout.Layout` and the
shape the user sees. Arrays are created through a :class:`~shadergpgpu.engine.device.Device`
(``dev.array(x)``, ``dev.empty(shape)``), downloaded with ``.get()`` (or ``np.asarray``),
and released with ``.release()`` or by leaving a ``with`` block; a released texture goes back to
the pool, which hands it out again for the next array of the same texture size.
"""
from __future__ import annotations

import threading
from collections import OrderedDict, defaultdict

import moderngl

import numpy as np

from . import transfer
from .layout import Layout
from .lifetime import Releasable


def as_float32(x, name: str = "array") -> np.ndarray:
    """Validate a real numeric array-like and return it as float32 (a copy only if needed)."""
    a = np.asarray(x)
    if a.dtype.kind == "c":
        raise TypeError(f"{name}: complex arrays are not supported (got {a.dtype}); pass the "
                        "real and imaginary parts as separate arrays")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real numeric array, got dtype {a.dtype}")
    return np.asarray(a, dtype=np.float32)


class TexturePool:
    """Recycles RGBA32F textures by (width, height), keeping at most ``max_idle_bytes`` of idle
    textures (the least recently returned are deleted first), so memory does not grow with the
    number of distinct shapes."""

    def __init__(self, ctx, max_idle_bytes: int = 64 << 20):
        self.ctx = ctx
        self.max_idle_bytes = int(max_idle_bytes)
        self._free: dict[tuple, list] = defaultdict(list)
        self._order: OrderedDict = OrderedDict()  # id(texture) -> texture, oldest idle first
        self.idle_bytes = 0
        self.live_bytes = 0
        self.created = 0
        self.deleted = 0
        self.live = 0
        # called with each texture just before the pool deletes it (the device drops the
        # framebuffers that point at it: GL reuses deleted names)
        self.on_delete = None
        self.by_glo: dict = {}  # GL name -> texture, for every texture made and not deleted

    @staticmethod
    def _bytes(size) -> int:
        return size[0] * size[1] * 16

    def take(self, size: tuple[int, int]):
        free = self._free.get(size)
        if free:
            tex = free.pop()
            self._order.pop(id(tex), None)
            self.idle_bytes -= self._bytes(size)
        else:
            tex = self.ctx.texture(size, 4, dtype="f4")
            tex.filter = (moderngl.NEAREST, moderngl.NEAREST)  # shaders fetch exact texels
            tex.repeat_x = tex.repeat_y = False
            self.created += 1
            self.by_glo[tex.glo] = tex
        self.live += 1
        self.live_bytes += self._bytes(size)
        return tex

    def give(self, tex) -> None:
        self.live -= 1
        self.live_bytes -= self._bytes(tex.size)
        self._free[tex.size].append(tex)
        self._order[id(tex)] = tex
        self.idle_bytes += self._bytes(tex.size)
        while self.idle_bytes > self.max_idle_bytes and self._order:
            _, old = self._order.popitem(last=False)
            self._free[old.size].remove(old)
            self._delete(old)

    def _delete(self, tex) -> None:
        self.idle_bytes -= self._bytes(tex.size)
        if self.on_delete is not None:
            self.on_delete(tex)
        self.by_glo.pop(tex.glo, None)
        tex.release()
        self.deleted += 1

    @property
    def free_count(self) -> int:
        return sum(len(v) for v in self._free.values())

    def trim(self) -> int:
        """Delete every texture waiting in the pool; returns how many."""
        n = 0
        for lst in self._free.values():
            for t in lst:
                self._delete(t)
                n += 1
            lst.clear()
        self._free.clear()
        self._order.clear()
        return n


class DeviceArray(Releasable):
    """A float32 matrix (or vector, or small-channel image) living in a texture.

    Made by the Device (:meth:`Device.array`, ``empty``, ``zeros``, ``image``) or returned by
    an operation given device arrays; read back with :meth:`get` (or ``numpy.asarray``),
    written with :meth:`set`, and given back to the device's pool with :meth:`release`.

    Parameters
    ----------
    device : Device
        The device whose texture holds the values.
    layout : Layout
        Where the values sit in the texture.
    shape : tuple of int
        The logical shape :meth:`get` returns.
    texture : moderngl.Texture
        The texture.

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> dev = sg.Device()
    >>> a = dev.array(np.arange(5.0))
    >>> a.shape, a.dtype, a.packed
    ((5,), dtype('float32'), True)
    >>> a.set(np.ones(5)).get()
    array([1., 1., 1., 1., 1.], dtype=float32)
    >>> a.release()
    >>> a.released
    True
    """

    __slots__ = ("device", "layout", "shape", "texture", "_released", "__weakref__")

    def __init__(self, device, layout: Layout, shape: tuple, texture):
        self.device = device
        self.layout = layout
        self.shape = tuple(shape)
        self.texture = texture
        self._released = False

    # ---- information --------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    @property
    def dtype(self):
        return np.dtype(np.float32)

    @property
    def packed(self) -> bool:
        return self.layout.packed

    @property
    def released(self) -> bool:
        return self._released

    def __repr__(self):
        state = "released" if self._released else f"texture {self.layout.tex_w}x{self.layout.tex_h}"
        return (f"DeviceArray(shape={self.shape}, packed={self.layout.packed}, "
                f"order={self.layout.order!r}, {state})")

    # ---- use as a pass input ----------------------------------------------------------------
    def bind(self, unit: int) -> None:
        self.texture.use(unit)

    # ---- data ---------------------------------------------------------------------------
    def _check(self):
        if self._released:
            raise ValueError("this DeviceArray has been released")

    def set(self, x) -> "DeviceArray":
        """Upload new contents of the same shape (the caller's bytes as they are where the
        layout's texels are those bytes: no repacking copy)."""
        self._check()
        self.device.activate()
        a = as_float32(x)
        if a.shape != self.shape:
            raise ValueError(f"cannot write an array of shape {a.shape} into a DeviceArray "
                             f"of shape {self.shape}")
        upload(self, texels(a, self.layout))
        return self

    def get(self, out=None, wait: bool = True):
        """Download to a float32 numpy array of the array's shape: a new one, or ``out`` (a
        preallocated C-contiguous float32 array of that shape, filled and returned).

        ``wait=False`` returns at once with a :class:`~shadergpgpu.engine.transfer.Readback`
        of the array as every pass issued so far leaves it; later passes run while the copy
        does, and ``.result()`` returns the numpy array. See :mod:`shadergpgpu.engine.transfer`.
        """
        self._check()
        self.device.activate()
        if out is not None:
            out = transfer.check_out(self, out)
        if not wait:
            return transfer.Readback(self, out)
        res = transfer.read(self, out)
        tracer = self.device.tracer
        if tracer is not None:
            tracer.read(self.texture, res, layout=self.layout, shape=self.shape)
        return res

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype)

    # ---- life -----------------------------------------------------------------------------
    def release(self) -> None:
        """Give the texture back to the pool (idempotent; a no-op once the device is released,
        whose context took every texture with it)."""
        if not self._released:
            dev = self.device
            if dev._capture is not None and dev._capture.holds(self):
                return              # an open capture owns it (capture.py)
            self._released = True
            tex, self.texture = self.texture, None
            dev._epoch += 1  # prepared passes that use this array must not draw with it
            if not dev._token.alive:
                return              # the context took every texture with it
            if threading.current_thread() is dev._thread:
                dev.pool.give(tex)  # a texture it deletes is deleted in dev's context
            else:                   # e.g. collected in another thread: given back later
                dev._orphans.append(tex)


def texels(a: np.ndarray, layout: Layout) -> np.ndarray:
    """What to upload for the float32 array ``a`` (its logical shape): ``a`` itself where the
    layout's texels are its bytes, else the packed image (a copy with the padding)."""
    if layout.bytes_match and a.flags.c_contiguous and (a.ndim != 3 or a.shape[2] == 4):
        return a
    return layout.pack_array(_to_logical(a, layout))


def upload(array, data: np.ndarray) -> None:
    """Write the texel data ``data`` (the layout's packed form) into ``array``'s texture: every
    upload of host data goes through here (an open trace records it)."""
    dev = array.device
    if dev.tracer is not None:
        dev.tracer.upload(array.texture, data, array)
    dev.report("upload", data.nbytes)
    transfer.write(array, data)


def _to_logical(a: np.ndarray, layout: Layout) -> np.ndarray:
    """User-shaped float32 array -> the (rows, cols) matrix the layout describes."""
    if a.ndim == 3:  # image: (H, W, C) with C <= 4, one pixel per texel
        h, w, c = a.shape
        out = np.zeros((h, w, 4), dtype=np.float32)
        out[..., :c] = a
        return out.reshape(h, w * 4)
    return a.reshape(layout.rows, layout.cols)
