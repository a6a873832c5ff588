"""The work of the calls a device runs, from what the engine reports (:mod:`..engine.observe`).

:class:`WorkRecorder` is a listener: for every observed kernel call it computes the work of one
fragment (:func:`.work.work_of`: the kernel's own ``work=``, else the library's tables, by
kernel name) and adds it, times the call's fragments, under the call's phase label. Its
:meth:`~WorkRecorder.snapshot` is the pass counter's snapshot with the work beside the passes:
per label ``flops``, ``fetches``, ``bytes``, ``buffer_fetches``, and per kernel ``draws``
(what the cost model, :mod:`.model`, prices pass by pass). A reset of the pass counter
(``dev.counter.reset()``) clears the recorder too.

    with recording(dev) as rec:
        dev.counter.reset()
        run_something(dev)
        snap = rec.snapshot(host=True)
"""
from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager

from .kernel_work import work_of

__all__ = ["WorkRecorder", "recording"]

#: At most this many distinct (label, fragments, work) draw entries are kept apart; past it
#: the entries of each kernel are merged (WorkRecorder._compact).
DRAWS_CAP = 4096

_WORK_KEYS = ("flops", "fetches", "bytes", "buffer_fetches")


class WorkRecorder:
    """Declared work per phase label of the calls observed on one device (see the module
    docstring). Attach it with ``dev.observe(recorder)`` or :func:`recording`."""

    def __init__(self, device):
        self.device = device
        self._resets = device.counter.resets
        self._work = {k: defaultdict(float) for k in _WORK_KEYS}
        self.work_log: dict = {}        # (label, fragments, work) -> calls, not folded yet
        self._draws: dict = {}          # the folded log

    # ---- the listener ---------------------------------------------------------------------
    def __call__(self, event) -> None:
        if event.kind != "kernel":
            return
        if self.device.counter.resets != self._resets:
            self.reset()
        work = work_of(event.kernel, event.layouts, event.uniforms, event.defines, event.size)
        if work is None:
            return
        key = (event.label, event.fragments, work)
        log = self.work_log
        log[key] = log.get(key, 0) + event.count
        if len(log) > DRAWS_CAP:
            self._fold()

    def reset(self) -> None:
        self._resets = self.device.counter.resets
        self.work_log = {}
        self._draws = {}
        for d in self._work.values():
            d.clear()

    # ---- the sums -------------------------------------------------------------------------
    def _fold(self) -> None:
        if self.device.counter.resets != self._resets:
            self.reset()
        log, self.work_log = self.work_log, {}
        w = self._work
        draws = self._draws
        for key, n in log.items():
            if not n:
                continue
            draws[key] = draws.get(key, 0) + n
            label, frags, work = key
            f = frags * n
            w["flops"][label] += f * work[0]
            w["fetches"][label] += f * work[1]
            w["bytes"][label] += f * work[2]
            if len(work) > 3 and work[3]:
                w["buffer_fetches"][label] += f * work[3]
        if len(draws) > DRAWS_CAP:
            self._compact()

    def _compact(self) -> None:
        """Merge the draws of each (label, kernel) into one entry of the same draws, work and
        fragments in total (their mean fragments per pass): memory stays bounded however many
        shapes a long run draws; the totals, and so the work terms, are kept."""
        groups: dict = {}
        for (label, frags, work), n in self._draws.items():
            name = work[4] if len(work) > 4 else ""
            g = groups.setdefault((label, name), [0.0, 0, 0.0, 0.0, 0.0, 0.0, set()])
            g[6].add(tuple(work[5:7]))
            f = frags * n
            g[0] += f
            g[1] += n
            g[2] += f * work[0]
            g[3] += f * work[1]
            g[4] += f * work[2]
            g[5] += f * (work[3] if len(work) > 3 else 0.0)
        self._draws = {}
        for (label, name), (f, n, fl, fe, by, bf, sizes) in groups.items():
            work = (fl / f, fe / f, by / f, bf / f, name) if f else (0.0, 0.0, 0.0, 0.0, name)
            if len(sizes) == 1:         # one drawn rectangle for all: the model keeps it
                work += next(iter(sizes))
            self._draws[label, f / n if n else 0.0, work] = n

    def totals(self, key: str) -> dict:
        """Per label: ``key`` (flops, fetches, bytes or buffer_fetches) summed over the calls."""
        self._fold()
        return self._work[key]

    @property
    def flops(self) -> dict:
        return self.totals("flops")

    @property
    def fetches(self) -> dict:
        return self.totals("fetches")

    @property
    def bytes(self) -> dict:
        return self.totals("bytes")

    @property
    def buffer_fetches(self) -> dict:
        return self.totals("buffer_fetches")

    def snapshot(self, host: bool = False) -> dict:
        """The pass counter's snapshot (:meth:`PassCounter.snapshot
        <shadergpgpu.engine.counter.PassCounter.snapshot>`) with the work: per label
        ``flops``, ``fetches``, ``bytes``, ``buffer_fetches`` (after ``gpu_ms``), and per
        kernel ``draws``: a list of [fragments per pass, draws, flops, fetches, bytes, buffer
        fetches, width, height] (per fragment; the drawn rectangle, left out where merged
        draws had several)."""
        self._fold()
        snap = self.device.counter.snapshot(host)
        out = {}
        for label, s in snap.items():
            row = {}
            for k, v in s.items():
                row[k] = v
                if k == "gpu_ms":
                    for wk in _WORK_KEYS:
                        row[wk] = self._work[wk].get(label, 0.0)
            for k in row["kernels"].values():
                k.setdefault("draws", [])
            out[label] = row
        for (label, frags, work), n in self._draws.items():
            if label not in out:
                continue
            name = work[4] if len(work) > 4 else ""
            k = out[label]["kernels"].setdefault(name, {"passes": 0, "gpu_ms": 0.0,
                                                       "draws": []})
            k["draws"].append([frags, n, *[float(x) for x in work[:4]], *work[5:7]])
        return out


@contextmanager
def recording(device):
    """Observe ``device`` with a :class:`WorkRecorder` inside the block; yields it."""
    rec = WorkRecorder(device)
    with device.observe(rec):
        yield rec
