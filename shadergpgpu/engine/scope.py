"""Groups of arrays with one lifetime: :class:`Scope` (released together) and
:class:`PingPong` (two buffers that swap roles after each pass)."""
from __future__ import annotations

from .arrays import DeviceArray
from .layout import Layout


class Scope:
    """Arrays made through it are released together (see :meth:`Device.scope`)."""

    def __init__(self, device):
        self.device = device
        self._arrays: list = []

    def track(self, a):
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
        for a in self._arrays:
            a.release()
        self._arrays.clear()


class PingPong:
    """Two arrays of one layout: kernels read ``front`` and write ``back``; :meth:`swap` after
    each pass."""

    def __init__(self, front: DeviceArray, back: DeviceArray):
        self.front, self.back = front, back

    def swap(self) -> "PingPong":
        self.front, self.back = self.back, self.front
        return self

    def release(self) -> None:
        self.front.release()
        self.back.release()
