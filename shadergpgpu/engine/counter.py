"""The pass counter: render passes, fragments, GPU time and declared work per phase label.

The pass-count reports and the cost model read it; every draw records into it.
"""
from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager


class PassCounter:
    """Counts passes, fragments and (optionally) GPU nanoseconds per phase label."""

    def __init__(self):
        self.label = "default"
        self.passes: dict[str, int] = defaultdict(int)
        self.fragments: dict[str, int] = defaultdict(int)
        self.gpu_ns: dict[str, int] = defaultdict(int)
        # declared work (kernels with work=): flops, texel fetches, bytes written, and the part
        # of the fetches that reads buffer textures (the model prices it apart). Passes log
        # (label, fragments, work) -> count, one dict update on the hot path; the sums are
        # folded when read.
        self._work = {k: defaultdict(float) for k in ("flops", "fetches", "bytes",
                                                      "buffer_fetches")}
        self.work_log: dict = {}

    @contextmanager
    def phase(self, label: str):
        previous, self.label = self.label, str(label)
        try:
            yield self
        finally:
            self.label = previous

    def record(self, fragments: int, gpu_ns: int | None = None, count: int = 1) -> None:
        """Record ``count`` passes of ``fragments`` fragments each under the current label."""
        label = self.label
        self.passes[label] += count
        self.fragments[label] += fragments * count
        if gpu_ns is not None:
            self.gpu_ns[label] += gpu_ns

    def add_work(self, fragments: int, work: tuple, share: float = 1.0, count: int = 1) -> None:
        """Add ``count`` x ``fragments`` x the per-fragment ``work`` (flops, fetches, bytes
        [, buffer fetches]) x ``share`` under the current label."""
        key = (self.label, fragments * share, work)
        log = self.work_log
        log[key] = log.get(key, 0) + count

    def _fold(self) -> None:
        log, self.work_log = self.work_log, {}
        w = self._work
        for (label, frags, work), n in log.items():
            f = frags * n
            w["flops"][label] += f * work[0]
            w["fetches"][label] += f * work[1]
            w["bytes"][label] += f * work[2]
            if len(work) > 3 and work[3]:
                w["buffer_fetches"][label] += f * work[3]

    @property
    def flops(self) -> dict:
        self._fold()
        return self._work["flops"]

    @property
    def fetches(self) -> dict:
        self._fold()
        return self._work["fetches"]

    @property
    def bytes(self) -> dict:
        self._fold()
        return self._work["bytes"]

    @property
    def buffer_fetches(self) -> dict:
        self._fold()
        return self._work["buffer_fetches"]

    def reset(self) -> None:
        self.work_log = {}
        for d in (self.passes, self.fragments, self.gpu_ns, *self._work.values()):
            d.clear()

    @property
    def total(self) -> int:
        return sum(self.passes.values())

    def snapshot(self) -> dict:
        """Plain-dict copy: {label: {"passes", "fragments", "gpu_ms", "flops", "fetches",
        "bytes"}} (the last three from kernels that declare their work)."""
        out = {}
        for label in self.passes:
            out[label] = {"passes": self.passes[label], "fragments": self.fragments[label],
                          "gpu_ms": self.gpu_ns.get(label, 0) / 1e6,
                          "flops": self.flops.get(label, 0.0),
                          "fetches": self.fetches.get(label, 0.0),
                          "bytes": self.bytes.get(label, 0.0),
                          "buffer_fetches": self.buffer_fetches.get(label, 0.0)}
        return out

    def __repr__(self):
        inner = ", ".join(f"{k}={v}" for k, v in self.passes.items())
        return f"PassCounter({inner})"
