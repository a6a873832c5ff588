"""A small bounded least-recently-used mapping for the engine's caches."""
from __future__ import annotations

from collections import OrderedDict
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
