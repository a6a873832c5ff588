"""Groups of arrays with one lifetime: :class:`Scope` (released together) and
:class:`PingPong` (two buffers that swap roles after each pass)."""
from __future__ import annotations

from .arrays import DeviceArray
from .layout import Layout


class Scope:
    """Arrays made through it are released together (see :meth:`Device.scope`).

    Its ``empty``, ``empty_like``, ``zeros``, ``array``, ``alloc`` and ``pingpong`` are the
    Device's, and the arrays they make are released when the scope ends (:meth:`release`).

    Parameters
    ----------
    device : Device
        The device the arrays are made on.

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> dev = sg.Device()
    >>> with dev.scope() as s:
    ...     tmp = s.array(np.ones(4))
    ...     kept = s.keep(s.zeros(4))
    >>> tmp.released, kept.released
    (True, False)
    """

    def __init__(self, device):
        self.device = device
        self._arrays: list = []

    def track(self, a):
        """Release ``a`` (an array or a :class:`PingPong`) with the scope; returns it."""
        self._arrays.append(a)
        return a

    def keep(self, a):
        """Exempt ``a`` from the release at the end of the scope; returns it."""
        self._arrays = [x for x in self._arrays if x is not a]
        return a

    def empty(self, shape, packed: bool = True, order: str = "row") -> DeviceArray:
        return self.track(self.device.empty(shape, packed, order))

    def empty_like(self, a) -> DeviceArray:
        return self.track(self.device.empty_like(a))

    def zeros(self, shape, packed: bool = True, order: str = "row") -> DeviceArray:
        return self.track(self.device.zeros(shape, packed, order))

    def array(self, x, packed: bool = True, order: str = "row", name: str = "array"):
        return self.track(self.device.array(x, packed, order, name))

    def alloc(self, layout: Layout, shape=None) -> DeviceArray:
        return self.track(self.device.alloc(layout, shape))

    def pingpong(self, shape=None, packed: bool = True, order: str = "row", layout=None):
        pp = self.device.pingpong(shape, packed, order, layout)
        self.track(pp)
        return pp

    def release(self) -> None:
        """Release every array the scope holds (the ``with`` block's end calls it)."""
        for a in self._arrays:
            a.release()
        self._arrays.clear()


class PingPong:
    """Two arrays of one layout: kernels read ``front`` and write ``back``; :meth:`swap` after
    each pass.

    Parameters
    ----------
    front, back : DeviceArray
        Two arrays of one layout (:meth:`Device.pingpong` makes them).

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> dev = sg.Device()
    >>> pp = dev.pingpong((8,))
    >>> dev.fill(pp.front, 1.0)
    >>> for _ in range(3):                          # doubles the values three times
    ...     _ = sg.builtin.SAXPY(pp.back, X=pp.front, Y=pp.front, alpha=1.0)
    ...     _ = pp.swap()
    >>> pp.front.get()
    array([8., 8., 8., 8., 8., 8., 8., 8.], dtype=float32)
    """

    def __init__(self, front: DeviceArray, back: DeviceArray):
        self.front, self.back = front, back

    def swap(self) -> "PingPong":
        """Exchange ``front`` and ``back``; returns the pair."""
        self.front, self.back = self.back, self.front
        return self

    def release(self) -> None:
        """Release both arrays."""
        self.front.release()
        self.back.release()
