"""A capture of the passes a block of code runs: ``with capture(dev) as cap: ...``.

While a capture is open on a device, every :meth:`Device.run
<shadergpgpu.engine.device.Device.run>` call the block makes is prepared as a
:class:`~shadergpgpu.engine.passes.Pass` (the kernel, its compiled program, the bindings, the
uniforms, the targets, the viewport and the blend mode) and kept as a :class:`Step` under the
phase label it ran in. ``draw=True`` draws each pass as it is recorded; ``draw=False`` only
prepares it (``run`` returns the passes it would draw). With ``own_arrays=True`` the arrays the
device allocates inside the block belong to the capture: a release inside the block (the code's
own, or a scope's end) leaves the array alive, and :meth:`Capture.release` releases them all.

:meth:`Capture.replay` draws the steps again, with arrays marked by :meth:`Capture.slots` bound
anew (e.g. a new input image and a new result) and uniforms set again where a step asks.

One description of a pass, :class:`PassRecord`, serves the capture and the WebGL2 trace
(:mod:`.trace`): the trace reads one back from the GL state of each draw and serializes it, so a
capture replayed under an open trace is serialized pass by pass; a step describes itself as one
from the library's bookkeeping (:meth:`Step.record`: the pass's own names and values, where GL
holds the program's active uniforms, those of the loop cuts included). The call cache (:mod:`.calls`) is the fast path of one repeated ``Device.run`` call; a
capture holds prepared passes, whose own fast path (:meth:`Pass.run`) replays them.
"""
from __future__ import annotations

from contextlib import contextmanager

__all__ = ["Capture", "PassRecord", "Step", "capture", "capturing"]


class PassRecord:
    """One pass as drawn: ``kernel`` (name), ``program`` (the GLSL text), ``samplers`` (a list of
    (uniform name, texture unit, texture)), ``uniforms`` (name -> value), ``targets`` (the
    textures written, in order), ``viewport`` (None: the whole target) and ``blend`` (None or
    the blend mode)."""

    __slots__ = ("kernel", "program", "samplers", "uniforms", "targets", "viewport", "blend")

    def __init__(self, kernel: str, program: str, samplers: list, uniforms: dict, targets: list,
                 viewport=None, blend=None):
        self.kernel, self.program, self.samplers = kernel, program, samplers
        self.uniforms, self.targets = uniforms, targets
        self.viewport, self.blend = viewport, blend


class Step:
    """One recorded call: ``label`` (its phase label; None where it ran under the label the
    capture started in, so that a replay runs it under the caller's), ``pass_`` (the prepared
    :class:`~shadergpgpu.engine.passes.Pass`), ``tag`` (what the recording code attached,
    :meth:`Capture.tag`) and ``slots`` (binding name -> slot, :meth:`Capture.slots`)."""

    __slots__ = ("label", "pass_", "tag", "slots")

    def __init__(self, label, pass_, tag=None):
        self.label, self.pass_, self.tag = label, pass_, tag
        self.slots: dict = {}

    def record(self) -> PassRecord:
        """The pass as the library's bookkeeping describes it (the trace reads the same from
        the GL state)."""
        p = self.pass_
        c = p.compiled
        samplers = [(n, u, p.inputs[n].texture) for n, u in c.units]
        return PassRecord(p.kernel.name, c.text, samplers, dict(p.values),
                          [p.outputs[n].texture for n in c.output_names],
                          p._viewport, p.blend)


class Capture:
    """The passes and (``own_arrays``) the arrays of one ``with capture(device)`` block (see the
    module docstring)."""

    def __init__(self, device, draw: bool = True, own_arrays: bool = False):
        self.device = device
        self.draw = bool(draw)
        self.own_arrays = bool(own_arrays)
        self.steps: list[Step] = []
        self.arrays: list = []          # the arrays it owns, in allocation order
        self._owned: set = set()        # their ids
        self._tag = None
        self._base = device.counter.label
        self.open = False

    # ---- recording (the device calls these while the capture is open) ---------------------
    def run(self, kernel, outputs, inputs=None, uniforms=None, defines=None, blend=False,
            rect=None, slices=None, accumulate=None) -> int:
        """Record a ``Device.run`` call as a prepared pass (drawn if ``draw``); returns the
        passes it draws."""
        if slices is not None:
            raise ValueError("a capture records prepared passes, which take no slices=")
        dev = self.device
        p = dev.prepare(kernel, outputs, inputs, uniforms, defines, blend, rect, accumulate)
        label = dev.counter.label
        self.steps.append(Step(None if label == self._base else label, p, self._tag))
        if self.draw:
            p.run()
        return p.passes_per_run

    def made(self, array) -> None:
        """The device allocated ``array`` inside the block."""
        if self.own_arrays:
            self.arrays.append(array)
            self._owned.add(id(array))

    def holds(self, array) -> bool:
        """Whether a release of ``array`` now is left to the capture (an array it owns, while
        the block runs)."""
        return self.open and id(array) in self._owned

    def tag(self, value) -> None:
        """Attach ``value`` to the steps recorded from now on (None: no tag)."""
        self._tag = value

    # ---- use ------------------------------------------------------------------------------
    def slots(self, **arrays) -> None:
        """Mark ``arrays`` (slot name -> array) as slots: each step notes which of its bindings
        hold one, and :meth:`replay` binds the array given for that slot there."""
        for st in self.steps:
            p = st.pass_
            st.slots = {n: key for n, a in (*p.inputs.items(), *p.outputs.items())
                        for key, b in arrays.items() if a is b}

    def replay(self, uniforms=None, flush=None, **arrays) -> None:
        """Draw the steps again: the slots bound to ``arrays`` (slot name -> array; the other
        outputs bound again, their framebuffers may have been evicted), ``uniforms(step)``
        (None or a dict) set, each under its phase label, ``flush()`` after each."""
        dev = self.device
        for st in self.steps:
            p = st.pass_
            binds = dict(p.outputs)
            for n, key in st.slots.items():
                binds[n] = arrays[key]
            p.bind(**binds)
            if uniforms is not None:
                u = uniforms(st)
                if u:
                    p.set(**u)
            if st.label is None:
                p.run()
            else:
                with dev.phase(st.label):
                    p.run()
            if flush is not None:
                flush()

    def records(self) -> list[PassRecord]:
        """Each step as a :class:`PassRecord`."""
        return [st.record() for st in self.steps]

    @property
    def nbytes(self) -> int:
        """Bytes of the arrays it owns and has not released."""
        return sum(a.layout.nbytes for a in self.arrays if not a.released)

    def disown(self, array) -> None:
        """Hand ``array`` back to the code (it is released as any array then)."""
        if id(array) in self._owned:
            self._owned.discard(id(array))
            self.arrays = [a for a in self.arrays if a is not array]

    def release(self) -> None:
        """Release the arrays it owns, and forget the steps."""
        self.open = False
        arrays, self.arrays = self.arrays, []
        self._owned.clear()
        for a in arrays:
            if not a.released:
                a.release()
        self.steps = []


def capturing(device):
    """The capture open on ``device``, or None."""
    return getattr(device, "_capture", None)


@contextmanager
def capture(device, draw: bool = True, own_arrays: bool = False):
    """Record the ``Device.run`` calls of the block as prepared passes (see the module
    docstring); yields the :class:`Capture`. An exception in the block releases what it owns.

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.engine.capture import capture
    >>> dev = sg.Device()
    >>> k = sg.Kernel(source="void main() { OUT = vec4(v); }", uniforms={"v": "float"},
    ...               name="fill_v")
    >>> y = dev.empty(4)
    >>> with capture(dev) as cap:
    ...     _ = dev.run(k, y, uniforms={"v": 2.0})
    >>> cap.slots(y=y)
    >>> z = dev.empty(4)
    >>> cap.replay(lambda step: {"v": 3.0}, y=z)
    >>> y.get(), z.get()
    (array([2., 2., 2., 2.], dtype=float32), array([3., 3., 3., 3.], dtype=float32))
    """
    if getattr(device, "_capture", None) is not None:
        raise RuntimeError("a capture is already open on this device")
    device.activate()
    cap = Capture(device, draw, own_arrays)
    cap.open = True
    device._capture = cap
    try:
        yield cap
    except BaseException:
        cap.release()
        raise
    finally:
        cap.open = False
        device._capture = None
