"""A small bounded least-recently-used mapping for the engine's caches."""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable


class LRU:
    """Mapping with at most ``size`` entries; ``on_evict(key, value)`` runs for each one dropped."""

    def __init__(self, size: int, on_evict: Callable | None = None):
        if int(size) < 1:
            raise ValueError(f"cache size must be at least 1, got {size}")
        self.size = int(size)
        self.on_evict = on_evict
        self._d: OrderedDict = OrderedDict()
        self.evictions = 0

    def get(self, key, default=None):
        v = self._d.get(key, default)
        if key in self._d:
            self._d.move_to_end(key)
        return v

    def __contains__(self, key):
        return key in self._d

    def __setitem__(self, key, value):
        self._d[key] = value
        self._d.move_to_end(key)
        self._shrink()

    def _shrink(self):
        while len(self._d) > self.size:
            k, v = self._d.popitem(last=False)
            self.evictions += 1
            if self.on_evict is not None:
                self.on_evict(k, v)

    def pop(self, key, default=None):
        return self._d.pop(key, default)

    def resize(self, size: int) -> None:
        if int(size) < 1:
            raise ValueError(f"cache size must be at least 1, got {size}")
        self.size = int(size)
        self._shrink()

    def keys(self):
        return list(self._d.keys())

    def values(self):
        return list(self._d.values())

    def items(self):
        return list(self._d.items())

    def clear(self) -> None:
        items = list(self._d.items())
        self._d.clear()
        if self.on_evict is not None:
            for k, v in items:
                self.on_evict(k, v)

    def __len__(self):
        return len(self._d)


@dataclass(frozen=True)
class CacheBounds:
    """Bounds of a device's caches (``Device(caches=...)``), least recently used first out.

    Parameters
    ----------
    programs : int, default 128
        Compiled kernels kept; a program stays while a kept kernel uses it (kernels with the
        same final source share one).
    framebuffers : int, default 64
        Framebuffers kept (one per distinct set of output textures).
    resources : int, default 32
        Per-device state of operations kept (``Device.resource``: e.g. the blur's prepared
        recipes, one entry per operation kind).
    pool_bytes : int or None, default None
        Idle texture memory the pool keeps for reuse (None: 64 MiB on a software renderer,
        whose textures are host memory; 1 GiB on a GPU, where reusing a texture spares its
        allocation on the next upload).
    pbo_idle_bytes : int, default 512 MiB
        Idle pixel buffer objects kept for readbacks and uploads (more are released when
        given back).
    """

    programs: int = 128
    framebuffers: int = 64
    resources: int = 32
    pool_bytes: int | None = None
    pbo_idle_bytes: int = 512 << 20

    def __post_init__(self):
        for name in ("programs", "framebuffers", "resources", "pool_bytes", "pbo_idle_bytes"):
            v = getattr(self, name)
            if name == "pool_bytes" and v is None:
                continue
            low = 0 if name.endswith("bytes") else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"CacheBounds.{name} must be an integer >= {low}, got {v!r}")
