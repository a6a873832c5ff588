"""Recording a blur instead of drawing it: :class:`_Recorder` stands for the device while a
recipe's passes are prepared (the same pass builders run on it), and the work-array helpers the
pass builders share (:func:`_like`; :func:`_release`, which leaves a recording's arrays to its
recipe)."""
from __future__ import annotations

from contextlib import contextmanager

from ...engine.arrays import DeviceArray
from ...engine.device import Device


class _Recorder:
    """Stands for the device while a blur's passes are prepared instead of drawn: the same
    code (:func:`_blur_passes`) allocates its work arrays (kept) and prepares each pass."""

    def __init__(self, dev: Device):
        self.device = dev
        self.max_outputs, self.loop_cap = dev.max_outputs, dev.loop_cap
        self.max_texture_size = dev.max_texture_size
        self.steps: list = []
        self.arrays: list = []
        self._label = ""
        self.coefficients = None  # (0: sigma_y / 1: sigma_x, steps per line) of the line pass

    def _keep(self, a):
        self.arrays.append(a)
        return a

    def empty(self, shape, packed: bool = True, order: str = "row"):
        return self._keep(self.device.empty(shape, packed, order))

    def empty_image(self, shape):
        return self._keep(self.device.empty_image(shape))

    def array(self, x, packed: bool = True, order: str = "row", name: str = "array"):
        return self._keep(self.device.array(x, packed, order, name))

    @contextmanager
    def phase(self, label: str):
        self._label = label
        yield

    @contextmanager
    def scope(self):
        yield _KeepAll()

    def run(self, kernel, outputs, inputs=None, uniforms=None, defines=None) -> int:
        p = self.device.prepare(kernel, outputs, inputs, uniforms, defines)
        self.steps.append((self._label, p, self.coefficients))
        return p.passes_per_run


class _KeepAll:
    """The scope of a recording: the recipe owns every array."""

    @staticmethod
    def track(a):
        return a

    keep = track


def _release(dev, arrs):
    """Release work arrays as the blur goes (not while recording a :class:`_Recipe`: its
    arrays live as long as it does)."""
    if isinstance(dev, _Recorder):
        return
    for a in arrs:
        a.release()


def _like(dev, x: DeviceArray, gray: bool, shape=None) -> DeviceArray:
    shape = tuple(x.shape) if shape is None else shape
    return dev.empty(shape) if gray else dev.empty_image(shape)
