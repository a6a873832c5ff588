"""The pass counter: render passes, fragments, GPU time and declared work per phase label.

The pass-count reports and the cost model read it; every draw records into it. The fast paths
(a prepared pass, a cached :meth:`Device.run <shadergpgpu.engine.device.Device.run>` call)
count their draws in a :class:`Tally` (one integer per kind of draw), folded into the counter's
dicts whenever anything reads them: every reader sees exact counts.
"""
from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager


#: At most this many distinct (label, fragments, work) draw entries are kept apart; past it
#: the entries of each kernel are merged (PassCounter._compact).
DRAWS_CAP = 4096

#: At most this many tallies wait to be folded; past it the counter folds them all.
TALLIES_CAP = 1024


class Tally:
    """Draws of one kind (label, kernel, draw path, fragments per pass, declared work, host
    events per draw) counted in one integer ``n`` by a fast path; the counter folds ``n`` into
    its dicts when it is read (:meth:`PassCounter.flush`). A fast path keeps its tally while
    ``label`` and ``gen`` are the counter's, else asks the counter for a new one."""

    __slots__ = ("n", "label", "gen", "kpass", "frags", "wkey", "events")

    def __init__(self, label, gen, kernel: str, path: str, frags: int, work, events: tuple):
        self.n = 0
        self.label = label
        self.gen = gen
        self.kpass = (label, kernel, path)
        self.frags = frags
        self.wkey = None if work is None else (label, frags, work)
        self.events = tuple((label, kind) for kind in events)


#: A tally no counter holds: a fast path that has it asks for a real one at its next draw.
STALE = Tally(None, None, "", "", 0, None, ())


class PassCounter:
    """Counts passes, fragments and (optionally) GPU nanoseconds per phase label."""

    def __init__(self):
        self.label = "default"
        # passes, fragments, kpasses and events are read through properties that fold the
        # tallies first (the fast paths count there); the draws write the dicts below
        self._passes: dict[str, int] = defaultdict(int)
        self._fragments: dict[str, int] = defaultdict(int)
        self._tallies: list = []      # tallies of this generation, not folded yet
        self._gen = object()          # a new one whenever _tallies is emptied
        self.gpu_ns: dict[str, int] = defaultdict(int)
        # declared work (kernels with work=): flops, texel fetches, bytes written, and the part
        # of the fetches that reads buffer textures (the model prices it apart). Passes log
        # (label, fragments, work) -> count, one dict update on the hot path; the sums are
        # folded when read.
        self._work = {k: defaultdict(float) for k in ("flops", "fetches", "bytes",
                                                      "buffer_fetches")}
        self.work_log: dict = {}
        self._draws: dict = {}          # the folded log: (label, fragments, work) -> draws
        # what the cost model prices besides the work: passes per (label, kernel name, path)
        # (path: "draw" through the device's full draw, "prepared" a prepared pass's fast
        # path, "repeat" a value of Pass.repeat) and host events per (label, kind): "run"
        # (a Device.run call), "call" (a one-liner call), "upload" / "readback" (with their
        # bytes in event_bytes), "alloc" (an array from the pool), "texture" (a new texture)
        self.pending: list = []    # (timer query, label, kernel) not read yet (timing runs)
        self._kpasses: dict = defaultdict(int)
        self.dependent: dict = defaultdict(int)     # (label, kernel) -> passes reading the
        #                                             last draw's output (they cannot overlap)
        self.switches: dict = defaultdict(int)      # label -> draws into another target than
        #                                             the previous draw's (a software renderer
        #                                             hands each target's draws over apart)
        self.kgpu_ns: dict = defaultdict(int)
        self._events: dict = defaultdict(int)
        self.event_bytes: dict = defaultdict(int)

    @contextmanager
    def phase(self, label: str):
        previous, self.label = self.label, str(label)
        try:
            yield self
        finally:
            self.label = previous

    def record(self, fragments: int, gpu_ns: int | None = None, count: int = 1,
               kernel: str = "", path: str = "draw") -> None:
        """Record ``count`` passes of ``fragments`` fragments each under the current label
        (of ``kernel``, drawn through ``path``; ``gpu_ns``: their device time)."""
        label = self.label
        self._passes[label] += count
        self._fragments[label] += fragments * count
        self._kpasses[label, kernel, path] += count
        if gpu_ns is not None:
            self.gpu_ns[label] += gpu_ns
            self.kgpu_ns[label, kernel] += gpu_ns

    def settle(self) -> None:
        """Read the timer queries of timed draws still pending (waits for them)."""
        pending, self.pending = self.pending, []
        for q, label, kernel in pending:
            ns = q.elapsed
            self.gpu_ns[label] += ns
            self.kgpu_ns[label, kernel] += ns

    def event(self, kind: str, nbytes: int = 0) -> None:
        """A host event the cost model prices (see ``events``) under the current label."""
        key = (self.label, kind)
        self._events[key] += 1
        if nbytes:
            self.event_bytes[key] += nbytes

    def add_work(self, fragments: int, work: tuple, share: float = 1.0, count: int = 1) -> None:
        """Add ``count`` x ``fragments`` x the per-fragment ``work`` (flops, fetches, bytes
        [, buffer fetches]) x ``share`` under the current label."""
        key = (self.label, fragments * share, work)
        log = self.work_log
        log[key] = log.get(key, 0) + count
        if len(log) > DRAWS_CAP:
            self._fold()

    def tally(self, kernel: str, path: str, frags: int, work, events: tuple = ()) -> Tally:
        """A new :class:`Tally` under the current label for a fast path's draws of ``kernel``
        (drawn through ``path``, ``frags`` fragments each, declared ``work`` or None, and one
        host event of each kind in ``events`` per draw). The label and keys it will count
        under are entered now, so the dicts keep the order in which draws first came."""
        if len(self._tallies) >= TALLIES_CAP or len(self.work_log) > DRAWS_CAP:
            self._fold()            # folds the tallies first
        label = self.label
        t = Tally(label, self._gen, kernel, path, frags, work, events)
        for d, k in ((self._passes, label), (self._fragments, label),
                     (self._kpasses, t.kpass), (self.work_log, t.wkey)):
            if k is not None and k not in d:
                d[k] = 0
        for k in t.events:
            if k not in self._events:
                self._events[k] = 0
        self._tallies.append(t)
        return t

    def flush(self) -> None:
        """Fold the tallies' counts into the dicts (every reader calls it first); the fast
        paths then ask for new tallies."""
        tallies = self._tallies
        if not tallies:
            return
        self._tallies = []
        self._gen = object()
        passes, frags, kp, ev, log = (self._passes, self._fragments, self._kpasses,
                                      self._events, self.work_log)
        for t in tallies:
            n = t.n
            if not n:
                continue
            t.n = 0
            label = t.label
            passes[label] += n
            frags[label] += t.frags * n
            kp[t.kpass] += n
            for k in t.events:
                ev[k] += n
            if t.wkey is not None:
                log[t.wkey] = log.get(t.wkey, 0) + n
        if len(log) > DRAWS_CAP:
            self._fold()

    @property
    def passes(self) -> dict:
        """Render passes per label."""
        self.flush()
        return self._passes

    @property
    def fragments(self) -> dict:
        """Fragments shaded per label."""
        self.flush()
        return self._fragments

    @property
    def kpasses(self) -> dict:
        """Passes per (label, kernel name, draw path)."""
        self.flush()
        return self._kpasses

    @property
    def events(self) -> dict:
        """Host events per (label, kind)."""
        self.flush()
        return self._events

    def _fold(self) -> None:
        self.flush()
        log, self.work_log = self.work_log, {}
        w = self._work
        draws = self._draws
        for key, n in log.items():
            if not n:       # entered by a tally (for the order) that has not counted yet
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

    def fold_if_large(self) -> None:
        """Fold the work log when it holds more than DRAWS_CAP keys (called where a draw
        makes a new key: a counter never read keeps a bounded log)."""
        if len(self.work_log) > DRAWS_CAP:
            self._fold()

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
        for t in self._tallies:   # counted before the reset: dropped with the rest
            t.n = 0
        self._tallies = []
        self._gen = object()
        self.pending = []
        self.work_log = {}
        self._draws = {}
        for d in (self._passes, self._fragments, self.gpu_ns, *self._work.values(),
                  self._kpasses, self.dependent, self.switches, self.kgpu_ns, self._events,
                  self.event_bytes):
            d.clear()

    @property
    def total(self) -> int:
        return sum(self.passes.values())

    def snapshot(self, host: bool = False) -> dict:
        """Plain-dict copy: {label: {"passes", "fragments", "gpu_ms", "flops", "fetches",
        "bytes", "buffer_fetches", "kernels", "paths", "events", "event_bytes"}}.

        The work totals come from kernels that declare their work. ``kernels``: per kernel
        name, its passes, GPU ms (timing runs) and its draws' work as a list of [fragments
        per pass, draws, flops, fetches, bytes, buffer fetches] per fragment (what the cost
        model prices pass by pass); ``paths``: passes per draw path; ``events``/
        ``event_bytes``: host events (uploads, readbacks, calls, allocations). Labels under
        which no pass was drawn (host events only) are left out unless ``host`` (the cost
        model reads them: an upload or a call costs time without drawing)."""
        self._fold()
        if self.pending:
            self.settle()
        out = {}
        labels = list(self.passes)
        if host:
            labels += [lb for lb, _ in self.events if lb not in self.passes and
                       lb not in labels]
        for label in labels:
            out[label] = {"passes": self.passes.get(label, 0),
                          "fragments": self.fragments.get(label, 0),
                          "gpu_ms": self.gpu_ns.get(label, 0) / 1e6,
                          "flops": self.flops.get(label, 0.0),
                          "fetches": self.fetches.get(label, 0.0),
                          "bytes": self.bytes.get(label, 0.0),
                          "buffer_fetches": self.buffer_fetches.get(label, 0.0),
                          "dependent": 0,
                          "switches": self.switches.get(label, 0),
                          "kernels": {}, "paths": {}, "events": {}, "event_bytes": {}}
        for (label, kernel, path), n in self.kpasses.items():
            if label not in out:
                continue
            k = out[label]["kernels"].setdefault(kernel, {"passes": 0, "gpu_ms": 0.0,
                                                         "draws": []})
            k["passes"] += n
            kp = k.setdefault("paths", {})
            kp[path] = kp.get(path, 0) + n
            paths = out[label]["paths"]
            paths[path] = paths.get(path, 0) + n
        for (label, kernel), n in self.dependent.items():
            if label not in out:
                continue
            out[label]["dependent"] += n
            k = out[label]["kernels"].setdefault(kernel, {"passes": 0, "gpu_ms": 0.0,
                                                         "draws": []})
            k["dependent"] = k.get("dependent", 0) + n
        for (label, kernel), ns in self.kgpu_ns.items():
            if label not in out:
                continue
            k = out[label]["kernels"].setdefault(kernel, {"passes": 0, "gpu_ms": 0.0,
                                                         "draws": []})
            k["gpu_ms"] += ns / 1e6
        for (label, frags, work), n in self._draws.items():
            if label not in out:
                continue
            name = work[4] if len(work) > 4 else ""
            k = out[label]["kernels"].setdefault(name, {"passes": 0, "gpu_ms": 0.0,
                                                       "draws": []})
            # [fragments per pass, draws, flops, fetches, bytes, buffer fetches, width,
            # height] (the drawn rectangle; left out where merged draws had several)
            k["draws"].append([frags, n, *[float(x) for x in work[:4]], *work[5:7]])
        for (label, kind), n in self.events.items():
            if label not in out:
                continue
            out[label]["events"][kind] = n
            if self.event_bytes.get((label, kind)):
                out[label]["event_bytes"][kind] = self.event_bytes[label, kind]
        return out

    def __repr__(self):
        inner = ", ".join(f"{k}={v}" for k, v in self.passes.items())
        return f"PassCounter({inner})"
