"""Tuning: the choices that trade speed and never change a result's meaning, held as values.

Each area keeps its choices in one frozen dataclass derived from :class:`Tuning` (the engine's
:class:`EngineTuning` here; each algorithm's in its own package, e.g.
``shadergpgpu.algorithms.sgemm.SgemmTuning``), with defaults per device kind: a software
renderer (Mesa's llvmpipe) and a hardware rasteriser take different ones (:meth:`Tuning.defaults`).

A device holds the values its calls use (:meth:`Device.tuning`); set them for the device's life
(``Device(tuning=...)``, :meth:`Device.tune`) or for a block of calls (:meth:`Device.tuned`)::

    >>> import shadergpgpu as sg
    >>> dev = sg.Device()
    >>> dev.tuning(sg.EngineTuning).mapped
    True
    >>> with dev.tuned(sg.EngineTuning, mapped=False):
    ...     dev.tuning(sg.EngineTuning).mapped
    False
    >>> dev.tuning(sg.EngineTuning).mapped          # the block's value ends with it
    True

Values are checked when made: a bad one raises :class:`ValueError` naming the field. Caches
that depend on a tuned choice (compiled programs, prepared passes) key on the values they used,
so a value set for one call never reaches the next.
"""
from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar

__all__ = ["Tuning", "EngineTuning", "Tunable", "check_field", "count", "flag"]


def check_field(value: "Tuning", name: str, ok: bool, expected: str) -> None:
    """Raise ValueError naming ``value``'s field ``name`` unless ``ok``."""
    if not ok:
        raise ValueError(f"{type(value).__name__}.{name} must be {expected}, "
                         f"got {getattr(value, name)!r}")


@dataclass(frozen=True)
class Tuning:
    """Base of the tuning dataclasses (frozen: change one with :meth:`replace`).

    A subclass declares its fields with their defaults; a field whose default depends on the
    device's kind defaults to None and takes its value from ``SOFTWARE`` / ``HARDWARE`` on the
    device (:meth:`for_kind`). :meth:`check` refuses bad values."""

    #: field -> default on a software renderer / on a hardware rasteriser (fields left None)
    SOFTWARE: ClassVar[dict] = {}
    HARDWARE: ClassVar[dict] = {}

    def __post_init__(self):
        for f in dataclasses.fields(self):
            kind = f.metadata.get("kind")
            v = getattr(self, f.name)
            if v is None and f.name in self.HARDWARE:
                continue                        # the device kind's default
            if kind == "bool":
                check_field(self, f.name, isinstance(v, bool), "True or False")
            elif kind == "count":
                check_field(self, f.name, isinstance(v, int) and not isinstance(v, bool)
                            and v >= f.metadata.get("min", 0),
                            f"an integer >= {f.metadata.get('min', 0)}")
        self.check()

    def check(self) -> None:
        """Refuse values out of range (ValueError naming the field); the base checks the
        fields declared with :func:`flag` and :func:`count`."""

    @classmethod
    def kind_of(cls, dev) -> str:
        """"software" or "hardware": the kind of ``dev`` whose defaults apply (the kind its
        kernels are chosen for, ``dev.plans_for_software``)."""
        return "software" if dev.plans_for_software else "hardware"

    def for_kind(self, kind: str) -> "Tuning":
        """This value with the fields left None set to the defaults of a device of ``kind``
        ("software" or "hardware")."""
        if kind not in ("software", "hardware"):
            raise ValueError(f"kind must be 'software' or 'hardware', got {kind!r}")
        table = self.SOFTWARE if kind == "software" else self.HARDWARE
        unset = {k: v for k, v in table.items() if getattr(self, k) is None}
        return dataclasses.replace(self, **unset) if unset else self

    @classmethod
    def defaults(cls, kind: str = "hardware") -> "Tuning":
        """The defaults on a device of ``kind`` ("software" or "hardware")."""
        return cls().for_kind(kind)

    def replace(self, **changes) -> "Tuning":
        """A copy with ``changes`` (checked; an unknown name raises TypeError)."""
        return dataclasses.replace(self, **changes)


def flag(default: bool) -> bool:
    """A True/False field of a tuning dataclass."""
    return field(default=default, metadata={"kind": "bool"})


def count(default: int, minimum: int = 0) -> int:
    """An integer field (at least ``minimum``) of a tuning dataclass."""
    return field(default=default, metadata={"kind": "count", "min": minimum})


@dataclass(frozen=True)
class EngineTuning(Tuning):
    """How arrays travel between host and device.

    Parameters
    ----------
    pbo_min_bytes : int, default 16 MiB
        Readbacks (and uploads) from this size on go through a pixel buffer object; smaller
        ones go straight (a buffer object adds a second synchronised call, which small reads of
        an iterative algorithm's host decisions pay for and gain nothing from).
    pbo : bool or None, default None (True on a GPU, False on a software renderer)
        Use buffer objects at all (a software renderer's textures are host memory already).
    mapped : bool, default True
        Use page-locked, persistently mapped buffers where the context has buffer storage.
    """

    pbo_min_bytes: int = count(16 << 20)
    pbo: bool | None = flag(None)
    mapped: bool = flag(True)

    SOFTWARE: ClassVar[dict] = {"pbo": False}
    HARDWARE: ClassVar[dict] = {"pbo": True}

    @classmethod
    def kind_of(cls, dev) -> str:
        """The renderer's own kind (``dev.is_software``): transfers go through its memory."""
        return "software" if dev.is_software else "hardware"


def _value(dev, value, changes) -> Tuning:
    """A tuning value from ``value`` (a value, or a class: the device's current value of it)
    with ``changes``."""
    if isinstance(value, type) and issubclass(value, Tuning):
        value = dev.tuning(value)
    elif not isinstance(value, Tuning):
        raise TypeError(f"expected a Tuning value or class, got {type(value).__name__}")
    return value.replace(**changes) if changes else value


class Tunable:
    """The tuning a device's calls use (mixed into :class:`~shadergpgpu.engine.device.Device`)."""

    _tunings: dict     # class -> the value set (fields may be None: the kind's default)
    _resolved: dict    # class -> the value calls use now

    def tuning(self, cls: type) -> Tuning:
        """The value of tuning class ``cls`` calls on this device use: the one set
        (:meth:`tune`, :meth:`tuned`, ``Device(tuning=...)``), else ``cls``'s defaults for the
        device's kind."""
        v = self._resolved.get(cls)
        if v is None:
            v = self._resolved[cls] = self._tunings.get(cls, cls()).for_kind(cls.kind_of(self))
        return v

    def tune(self, value, /, **changes) -> Tuning | None:
        """Set a tuning value for every later call on this device: a value, or a class with
        ``changes`` to its current value (``dev.tune(EngineTuning, mapped=False)``); returns the
        value set before (None: the defaults)."""
        value = _value(self, value, changes)
        before = self._tunings.get(type(value))
        self._tunings[type(value)] = value
        self._resolved.pop(type(value), None)
        return before

    def untune(self, cls: type) -> None:
        """Go back to ``cls``'s defaults on this device."""
        self._tunings.pop(cls, None)
        self._resolved.pop(cls, None)

    @contextmanager
    def tuned(self, value, /, **changes):
        """Set a tuning value (as :meth:`tune`) for the calls inside a ``with`` block only."""
        value = _value(self, value, changes)
        cls = type(value)
        before = self.tune(value)
        try:
            yield value
        finally:
            if before is None:
                self.untune(cls)
            else:
                self.tune(before)
