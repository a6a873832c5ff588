"""The pass counter: render passes, fragments, GPU time and host events per phase label.

Every draw records into it. The fast paths (a prepared pass, a cached :meth:`Device.run
<shadergpgpu.engine.device.Device.run>` call) count their draws in a :class:`Tally` (one
integer per kind of draw), folded into the counter's dicts whenever anything reads them: every
reader sees exact counts. What the draws compute (their work) is not counted here: a listener
(:meth:`Device.observe <shadergpgpu.engine.device.Device.observe>`) sees every call.
"""
from __future__ import annotations

from collections import defaultdict
from contextlib import contextmanager


#: At most this many tallies wait to be folded; past it the counter folds them all.
TALLIES_CAP = 1024


class Tally:
    """Draws of one kind (label, kernel, draw path, fragments per pass, host events per draw)
    counted in one integer ``n`` by a fast path; the counter folds ``n`` into its dicts when it
    is read (:meth:`PassCounter.flush`). A fast path keeps its tally while ``label`` and ``gen``
    are the counter's, else asks the counter for a new one."""

    __slots__ = ("n", "label", "gen", "kpass", "frags", "events")

    def __init__(self, label, gen, kernel: str, path: str, frags: int, events: tuple):
        self.n = 0
        self.label = label
        self.gen = gen
        self.kpass = (label, kernel, path)
        self.frags = frags
        self.events = tuple((label, kind) for kind in events)


#: A tally no counter holds: a fast path that has it asks for a real one at its next draw.
STALE = Tally(None, None, "", "", 0, ())


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
        self.resets = 0     # how often reset() cleared the counts (listeners keyed on it)
        # passes per (label, kernel name, path)
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
        """A host event (see ``events``) under the current label."""
        key = (self.label, kind)
        self._events[key] += 1
        if nbytes:
            self.event_bytes[key] += nbytes

    def tally(self, kernel: str, path: str, frags: int, events: tuple = ()) -> Tally:
        """A new :class:`Tally` under the current label for a fast path's draws of ``kernel``
        (drawn through ``path``, ``frags`` fragments each, and one host event of each kind in
        ``events`` per draw). The label and keys it will count under are entered now, so the
        dicts keep the order in which draws first came."""
        if len(self._tallies) >= TALLIES_CAP:
            self.flush()
        label = self.label
        t = Tally(label, self._gen, kernel, path, frags, events)
        for d, k in ((self._passes, label), (self._fragments, label),
                     (self._kpasses, t.kpass)):
            if k not in d:
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
        passes, frags, kp, ev = self._passes, self._fragments, self._kpasses, self._events
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

    def reset(self) -> None:
        for t in self._tallies:   # counted before the reset: dropped with the rest
            t.n = 0
        self._tallies = []
        self._gen = object()
        self.pending = []
        self.resets += 1
        for d in (self._passes, self._fragments, self.gpu_ns, self._kpasses, self.dependent, self.switches, self.kgpu_ns, self._events,
                  self.event_bytes):
            d.clear()

    @property
    def total(self) -> int:
        return sum(self.passes.values())

    def snapshot(self, host: bool = False) -> dict:
        """Plain-dict copy: {label: {"passes", "fragments", "gpu_ms", "dependent", "switches",
        "kernels", "paths", "events", "event_bytes"}}.

        ``kernels``: per kernel name, its passes (and per draw path), GPU ms (timing runs) and
        dependent passes; ``paths``: passes per draw path; ``events``/``event_bytes``: host
        events (uploads, readbacks, calls, allocations). Labels under which no pass was drawn
        (host events only) are left out unless ``host`` (an upload or a call costs time without
        drawing)."""
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
                          "dependent": 0,
                          "switches": self.switches.get(label, 0),
                          "kernels": {}, "paths": {}, "events": {}, "event_bytes": {}}
        for (label, kernel, path), n in self.kpasses.items():
            if label not in out:
                continue
            k = out[label]["kernels"].setdefault(kernel, {"passes": 0, "gpu_ms": 0.0})
            k["passes"] += n
            kp = k.setdefault("paths", {})
            kp[path] = kp.get(path, 0) + n
            paths = out[label]["paths"]
            paths[path] = paths.get(path, 0) + n
        for (label, kernel), n in self.dependent.items():
            if label not in out:
                continue
            out[label]["dependent"] += n
            k = out[label]["kernels"].setdefault(kernel, {"passes": 0, "gpu_ms": 0.0})
            k["dependent"] = k.get("dependent", 0) + n
        for (label, kernel), ns in self.kgpu_ns.items():
            if label not in out:
                continue
            k = out[label]["kernels"].setdefault(kernel, {"passes": 0, "gpu_ms": 0.0})
            k["gpu_ms"] += ns / 1e6
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
