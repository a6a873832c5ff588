"""What the engine reports: every call it runs, every pass it draws, every host event.

A listener is any callable taking one :class:`Event`; :meth:`Observable.observe` adds it to a
device and returns an :class:`Observation` that removes it (``close()``, or the end of a
``with`` block). Nobody observing costs one test of an empty tuple per draw: the events are made
only while a listener is attached.

Event kinds:

* ``"kernel"``: one kernel call (a :meth:`Device.run`, a :meth:`Pass.run`, each value of
  :meth:`Pass.repeat` (``count``), each rect of :meth:`Pass.sweep`), however many passes it is
  cut into: its ``kernel``, ``layouts`` (name -> layout of every input and output),
  ``uniforms`` (the call's values), ``defines``, ``fragments`` (of one pass) and ``size`` (the
  drawn rectangle (w, h), None for the whole output).
* ``"pass"``: draws: ``name`` (the kernel's), ``fragments`` each, ``count``, ``targets``
  (render targets written), ``blend`` (None or the blend mode) and ``path`` (``"draw"``: the
  device's full draw, ``"prepared"``: a prepared pass's fast path, ``"repeat"``: the values of
  :meth:`Pass.repeat`).
* host events, with ``nbytes`` where bytes move: ``"upload"``, ``"readback"``, ``"finish"`` (a
  wait for the device), ``"alloc"`` (an array from the pool), ``"texture"`` (a new texture),
  ``"buffer_copy"``, and what the library reports of its own calls through
  :meth:`Observable.report` (``"call"`` for a one-line kernel, ``"api:NAME"`` for an algorithm's
  entry point; ``name`` is empty for these).

Every event carries ``label``, the device's phase label when it happened. The pass counter
counts passes, fragments and host events whether or not anybody observes.
"""
from __future__ import annotations

__all__ = ["Event", "Observable", "Observation"]


class Event:
    """One thing the engine did (see the module docstring for the kinds and their fields)."""

    __slots__ = ("kind", "label", "name", "kernel", "fragments", "count", "path", "targets",
                 "blend", "layouts", "uniforms", "defines", "size", "nbytes")

    def __init__(self, kind: str, label: str, name: str = "", kernel=None, fragments: int = 0,
                 count: int = 1, path: str = "", targets: int = 0, blend=None, layouts=None,
                 uniforms=None, defines=None, size=None, nbytes: int = 0):
        self.kind, self.label, self.name, self.kernel = kind, label, name, kernel
        self.fragments, self.count, self.path, self.targets = fragments, count, path, targets
        self.blend, self.layouts, self.uniforms, self.defines = blend, layouts, uniforms, defines
        self.size, self.nbytes = size, nbytes

    def __repr__(self):
        parts = [f"{k}={getattr(self, k)!r}" for k in ("label", "name", "fragments", "count",
                                                         "path", "nbytes")
                 if getattr(self, k) not in ("", 0, None)]
        return f"Event({self.kind!r}, {', '.join(parts)})"


class Observation:
    """A listener attached to a device; ``close()`` (or leaving a ``with`` block) detaches it."""

    __slots__ = ("device", "listener")

    def __init__(self, device, listener):
        self.device, self.listener = device, listener

    def close(self) -> None:
        dev, self.device = self.device, None
        if dev is not None:
            obs = list(dev._observers)
            if self.listener in obs:
                obs.remove(self.listener)
            dev._observers = tuple(obs)

    def __enter__(self):
        return self.listener

    def __exit__(self, *exc):
        self.close()


class Observable:
    """The device's side: its listeners, and the events the draw paths hand them."""

    #: the listeners (a tuple: empty and falsy while nobody observes)
    _observers: tuple = ()

    def observe(self, listener) -> Observation:
        """Call ``listener(event)`` for everything this device does from now on (an
        :class:`Event` each); returns the :class:`Observation` that detaches it."""
        if not callable(listener):
            raise TypeError(f"a listener must be callable, got {type(listener).__name__}")
        self._observers = self._observers + (listener,)
        return Observation(self, listener)

    def report(self, kind: str, nbytes: int = 0) -> None:
        """A host event under the current phase label: counted by the pass counter and handed
        to the listeners (e.g. ``"upload"`` with its bytes, ``"api:NAME"`` for an entry
        point's own host work)."""
        c = self.counter
        key = (c.label, kind)           # PassCounter.event, inline (a one-liner's hot path)
        c._events[key] += 1
        if nbytes:
            c.event_bytes[key] += nbytes
        if self._observers:
            self._emit(Event(kind, c.label, nbytes=nbytes))

    def _emit(self, event: Event) -> None:
        for listener in self._observers:
            listener(event)

    def _emit_call(self, kernel, layouts: dict, uniforms: dict, defines: dict, fragments: int,
                   size=None, count: int = 1) -> None:
        self._emit(Event("kernel", self.counter.label, kernel.name, kernel, fragments, count,
                         layouts=layouts, uniforms=uniforms, defines=defines,
                         size=None if size is None else tuple(size)))

    def _emit_pass(self, name: str, fragments: int, targets: int, blend, path: str,
                   count: int = 1) -> None:
        self._emit(Event("pass", self.counter.label, name, fragments=fragments, count=count,
                         path=path, targets=targets, blend=blend))
