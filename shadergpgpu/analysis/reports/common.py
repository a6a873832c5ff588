"""Helpers shared by the reports and benchmarks: progress, tables, output files, verdicts
(:class:`Checks`: loud ``MISMATCH``/``MISSED`` lines and a non-zero exit status), device and
date stamps, one timing policy per report (:class:`Timer`), the cost model's prediction beside
each measured time (a :class:`Timer` with a :class:`.predicted.Predictor`: the model's columns
per point), plots with device and date in the title (a prediction dashed). The cost model's
columns, their sentence and summary live in :mod:`.predicted`, which builds on this module.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path


def parser(name: str, description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"shadergpgpu report {name}", description=description)
    p.add_argument("--quick", action="store_true", help="small grid, a few seconds (CI)")
    p.add_argument("--out", default=f"reports/{name}", help="output folder (default: %(default)s)")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--backend", default=None, help="GL backend (default: egl)")
    return p


class Progress:
    """A one-line progress bar on stderr (silent when disabled or not a terminal-like run)."""

    def __init__(self, total: int, label: str = "", enabled: bool = True, stream=None):
        self.total = max(int(total), 1)
        self.label = label
        self.n = 0
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.t0 = time.perf_counter()

    def step(self, note: str = "") -> None:
        self.n += 1
        if not self.enabled:
            return
        frac = self.n / self.total
        bar = "#" * int(30 * frac)
        el = time.perf_counter() - self.t0
        eta = el / frac - el if frac > 0 else 0.0
        self.stream.write(f"\r{self.label} [{bar:<30}] {self.n}/{self.total} "
                          f"{el:6.1f}s eta {eta:6.1f}s {note[:40]:<40}")
        self.stream.flush()
        if self.n >= self.total:
            self.stream.write("\n")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.enabled and self.n < self.total:
            self.stream.write("\n")


def markdown_table(rows: list[dict], columns: list[str] | None = None, floatfmt: str = ".4g") -> str:
    if not rows:
        return "(no rows)\n"
    columns = columns or list(rows[0])

    def fmt(v):
        if isinstance(v, float):
            return format(v, floatfmt)
        return "" if v is None else str(v)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c)) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(out: str | os.PathLike, stem: str, rows: list[dict], meta: dict | None = None) -> Path:
    """Write ``stem.csv`` and ``stem.json`` (rows + meta) under ``out``; returns the folder."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if rows:
        cols = list(dict.fromkeys(k for r in rows for k in r))
        with open(out / f"{stem}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols)
            w.writeheader()
            w.writerows(rows)
    with open(out / f"{stem}.json", "w") as f:
        json.dump({"meta": meta or {}, "rows": rows}, f, indent=1, default=str)
    return out


# ---- device and date ------------------------------------------------------------------------

_LAST_META: dict = {}


def today() -> str:
    """Today's date (UTC), ISO format: the date every report and plot is stamped with."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%d")


def device_name(dev) -> str:
    """The renderer and backend in a few words, e.g. ``llvmpipe (LLVM 15.0.6, 256 bits) [egl]``."""
    return f"{dev.caps.renderer} [{dev.caps.backend}]"


def device_meta(dev) -> dict:
    """Device and date of a report (written into its JSON and plot titles)."""
    meta = {"renderer": dev.caps.renderer, "gl_version": dev.caps.version,
            "backend": dev.caps.backend, "device": device_name(dev),
            "loop_cap": getattr(dev, "loop_cap", None),
            "date": today(), "host_cpus": os.cpu_count()}
    _LAST_META.clear()
    _LAST_META.update(meta)
    return meta


def stamp(meta: dict | None = None) -> str:
    """``device, date`` for a title or a report header (default: the last :func:`device_meta`)."""
    meta = meta if meta is not None else _LAST_META
    dev = meta.get("device") or meta.get("renderer")
    return f"{dev}, {meta.get('date') or today()}" if dev else today()


# ---- verdicts: plan vs counter, targets ------------------------------------------------------

class Checks:
    """Collects a report's (benchmark's) verdicts; failures are printed loudly and make the
    exit status non-zero::

        checks = Checks("blur")
        checks.plan("recursive-hv 1024x1024", planned=18, measured=snap_total)
        checks.target("recursive time max/min across sigma", ratio, "<=", 1.2)
        ...
        return checks.finish()          # prints a summary; 0 if all passed, else 1

    A failed plan prints ``MISMATCH <what>: plan P, counter M``; a missed target prints
    ``MISSED <what>: V (target <= T)``, at once, on stdout (beside the report text);
    :meth:`finish` repeats them in the summary (also on stderr when stdout is redirected).
    """

    _OPS = {"<=": lambda v, t: v <= t, "<": lambda v, t: v < t, ">=": lambda v, t: v >= t,
            ">": lambda v, t: v > t, "==": lambda v, t: v == t}

    def __init__(self, name: str = "", stream=None):
        self.name = name
        self.stream = stream
        self.passed = 0
        self.failures: list[str] = []

    def _fail(self, line: str) -> None:
        self.failures.append(line)
        print(line, file=self.stream or sys.stdout, flush=True)

    def plan(self, what: str, planned, measured) -> bool:
        """Passes planned vs passes the counter measured; ``MISMATCH`` when they differ."""
        ok = planned == measured
        if ok:
            self.passed += 1
        else:
            self._fail(f"MISMATCH {what}: plan {planned}, counter {measured}")
        return ok

    def compare(self, what: str, rows: list[dict]) -> bool:
        """Rows of :func:`shadergpgpu.analysis.plans.compare` (phase, expected, measured, match):
        one verdict per planned phase (phases the plan does not count are left out)."""
        ok = True
        for r in rows:
            if r.get("expected") is None:
                continue
            ok &= self.plan(f"{what} phase {r['phase']}", r["expected"], r["measured"])
        return ok

    def target(self, what: str, value, op: str, target, unit: str = "") -> bool:
        """``value op target`` (e.g. ``ratio, "<=", 1.2``); ``MISSED`` when it does not hold."""
        if op not in self._OPS:
            raise ValueError(f"op must be one of {', '.join(self._OPS)}")
        ok = value is not None and bool(self._OPS[op](value, target))
        if ok:
            self.passed += 1
        else:
            v = "not measured" if value is None else _fmt(value) + unit
            self._fail(f"MISSED {what}: {v} (target {op} {_fmt(target)}{unit})")
        return ok

    def require(self, what: str, ok: bool, detail: str = "") -> bool:
        """Any other yes/no check (e.g. a result against its reference): ``MISMATCH``."""
        if ok:
            self.passed += 1
        else:
            self._fail(f"MISMATCH {what}" + (f": {detail}" if detail else ""))
        return bool(ok)

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def summary(self) -> str:
        n = self.passed + len(self.failures)
        head = f"{self.name}: " if self.name else ""
        if self.ok:
            return f"{head}all {n} checks passed"
        return (f"{head}{len(self.failures)} of {n} checks FAILED:\n"
                + "\n".join(f"  {f}" for f in self.failures))

    def markdown(self) -> str:
        """The verdicts as a markdown section (for the report file)."""
        if self.ok:
            return f"## Checks\n\nAll {self.passed} checks passed (plans match the pass " \
                   "counter, targets met).\n"
        return "## Checks\n\n" + "\n".join(f"- **{f}**" for f in self.failures) + "\n"

    def finish(self) -> int:
        """Print the summary; return the exit status (0 all passed, 1 otherwise)."""
        text = self.summary()
        print(text, file=self.stream or sys.stdout, flush=True)
        if self.stream is None and not self.ok and not _isatty(sys.stdout):
            print(text, file=sys.stderr, flush=True)
        return self.exit_code


def passes_only(snapshot: dict) -> dict:
    """A counter snapshot without the phases that drew no pass (host events only: uploads,
    allocations): what a pass plan is held against."""
    return {k: v for k, v in snapshot.items() if v.get("passes")}


def _isatty(f) -> bool:
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def _fmt(v) -> str:
    return format(v, ".4g") if isinstance(v, float) else str(v)


# ---- timing ----------------------------------------------------------------------------------

@dataclass
class Timing:
    """Seconds per call of one measured point: median of ``n`` repeats after warm-up, with the
    fastest and slowest repeat (``spread`` = slowest / fastest)."""

    median: float
    min: float
    max: float
    n: int
    #: the cost model's columns for this point (:meth:`Predictor.of`), or None
    model: dict | None = None

    @property
    def ms(self) -> float:
        return self.median * 1e3

    @property
    def spread(self) -> float:
        return self.max / self.min if self.min > 0 else float("inf")

    def row(self, prefix: str = "ms") -> dict:
        """Columns for a table row: median, min, max in ms and the spread (and the cost
        model's columns when the :class:`Timer` had a :class:`Predictor`)."""
        return {prefix: self.median * 1e3, f"{prefix}_min": self.min * 1e3,
                f"{prefix}_max": self.max * 1e3, "spread": self.spread, "repeats": self.n,
                **(self.model or {})}


def measure(fn, finish=None, repeat: int = 5, warmup: int = 1, min_time: float = 0.0,
            max_repeat: int = 1000) -> Timing:
    """Time ``fn``: ``warmup`` untimed calls, then at least ``repeat`` timed calls (more until
    ``min_time`` seconds are spent, at most ``max_repeat``); ``finish`` waits for the GPU after
    each call (``dev.finish``)."""
    finish = finish or (lambda: None)
    for _ in range(max(0, int(warmup))):
        fn()
    finish()
    times = []
    total = 0.0
    while len(times) < max(1, int(repeat)) or total < min_time:
        t0 = time.perf_counter()
        fn()
        finish()
        dt = time.perf_counter() - t0
        times.append(dt)
        total += dt
        if len(times) >= max_repeat:
            break
    times.sort()
    return Timing(times[len(times) // 2], times[0], times[-1], len(times))


class Timer:
    """One timing policy for a whole report, so every point is measured the same way::

        timer = Timer(dev.finish, repeat=5, warmup=1, min_time=0.05)
        t = timer(lambda: blur(x, s))          # a Timing
        row.update(t.row())

    With ``model=Predictor(dev)`` every point also gets the cost model's columns
    (``Timing.model``, in ``Timing.row``): the counter snapshot of one more call of ``fn``,
    predicted and held against the median.
    """

    def __init__(self, finish=None, repeat: int = 5, warmup: int = 1, min_time: float = 0.0,
                 model=None):
        self.finish, self.repeat, self.warmup, self.min_time = finish, repeat, warmup, min_time
        self.model = model

    def __call__(self, fn) -> Timing:
        t = measure(fn, self.finish, self.repeat, self.warmup, self.min_time)
        if self.model is not None:
            t.model = self.model.of(fn, t.median)
        return t

    def describe(self) -> str:
        s = f"median of {self.repeat}"
        if self.min_time:
            s += f" (or more, at least {self.min_time:g} s)"
        return s + f" timed calls after {self.warmup} warm-up call(s), waiting for the GPU " \
                   "after each"


def blas_threads(n: int = 1):
    """A context that limits numpy's BLAS to ``n`` threads (threadpoolctl, installed with
    scikit-learn): the CPU baselines of the reports run on one thread, so they do not fight
    the renderer's threads on a small shared host (where a multi-threaded BLAS runs many times
    slower than one thread). A no-op without threadpoolctl."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:                      # pragma: no cover - comes with scikit-learn
        import contextlib
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def time_call(fn, finish, repeat: int = 5, warmup: int = 1, min_time: float = 0.0) -> float:
    """Median seconds per call of ``fn`` (``finish`` waits for the GPU); see :func:`measure`."""
    return measure(fn, finish, repeat, warmup, min_time).median


# ---- plots -----------------------------------------------------------------------------------

def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def plot_title(title: str, meta: dict | None = None) -> str:
    """``title`` with a second line naming the device and the date."""
    return f"{title}\n{stamp(meta)}"


def _gapped(xs_all: list, xs, ys) -> tuple[list, list]:
    """The series on the union of x values, NaN where it was not measured (breaks the line)."""
    got = {}
    for x, y in zip(xs, ys):
        got[x] = float("nan") if y is None else float(y)
    return list(xs_all), [got.get(x, float("nan")) for x in xs_all]


def plot_lines(path, series: dict, xlabel: str, ylabel: str, title: str, loglog: bool = True,
               meta: dict | None = None, logx: bool | None = None,
               logy: bool | None = None, bands: dict | None = None,
               hlines: dict | None = None, styles: dict | None = None,
               note: str | None = None, predicts: dict | None = None) -> bool:
    """Plot ``{label: (xs, ys)}`` to ``path``; returns False when matplotlib is missing.

    Every point has a marker; a series' line is broken where it was not measured (an x value
    another series has, or a y of None/NaN), so no line crosses unmeasured sizes. The title
    gets a second line with the device and date (``meta`` or the last :func:`device_meta`);
    the legend sits outside the axes, off the data.

    Optional: ``bands`` ``{label: (lows, highs)}`` (same x as the series) draws the spread of
    the repeats (fastest..slowest) as error bars; ``hlines`` ``{label: y}`` draws dashed
    horizontal lines (ceilings, a paper's figure); ``styles`` ``{label: dict}`` passes plot
    keywords per series (e.g. ``{"ls": "none", "marker": "*"}`` for isolated reference
    points); ``note`` is a line of small text under the axes (what the labels mean).

    ``predicts`` ``{predicted label: measured label}`` says which series is the cost model's
    prediction of which: a prediction is drawn dashed with hollow markers in the colour of the
    series it predicts (after the measured series, so their colours are known; beneath them,
    so a measured or published point is never hidden). A series whose
    label says "predicted" is drawn dashed too, even without a partner, so predictions look
    alike in every plot.
    """
    plt = _pyplot()
    if plt is None:
        return False
    predicts = predicts or {}
    xs_all = sorted({x for xs, _ in series.values() for x in xs})
    fig, ax = plt.subplots(figsize=(7.6, 4.4), dpi=110)
    is_pred = {lb: lb in predicts or "predicted" in lb.lower() for lb in series}
    order = [lb for lb in series if not is_pred[lb]] + [lb for lb in series if is_pred[lb]]
    colours = {}
    for label in order:
        xs, ys = series[label]
        gx, gy = _gapped(xs_all, xs, ys)
        kw = {"marker": "o", "ms": 4, "lw": 1.2}
        if is_pred[label]:
            kw.update(ls=(0, (5, 3)), mfc="none", ms=3.5, zorder=1.9)   # under measured points
            if predicts.get(label) in colours:
                kw["color"] = colours[predicts[label]]
        kw.update((styles or {}).get(label, {}))
        line, = ax.plot(gx, gy, label=label, **kw)
        colours[label] = line.get_color()
        if bands and label in bands:
            lo, hi = bands[label]
            _, glo = _gapped(xs_all, xs, lo)
            _, ghi = _gapped(xs_all, xs, hi)
            err = [[max(y - a, 0.0) if y == y and a == a else 0.0 for y, a in zip(gy, glo)],
                   [max(b - y, 0.0) if y == y and b == b else 0.0 for y, b in zip(gy, ghi)]]
            ax.errorbar(gx, gy, yerr=err, fmt="none", ecolor=line.get_color(), elinewidth=0.9,
                        capsize=2.5, alpha=0.8)
    for i, (label, y) in enumerate((hlines or {}).items()):
        if y is not None and y == y:
            ax.axhline(y, ls=(0, (5, 3)) if i % 2 == 0 else (0, (1, 2)), lw=1.2,
                       color=f"C{(len(series) + i) % 10}", label=label)
    logx = loglog if logx is None else logx
    logy = loglog if logy is None else logy
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(plot_title(title, meta), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if series or hlines:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    if note:
        fig.text(0.01, -0.02, note, fontsize=7, ha="left", va="top", wrap=True)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return True


def plot_points(path, series: dict, xlabel: str, ylabel: str, title: str,
                loglog: bool = True, meta: dict | None = None) -> bool:
    """Like :func:`plot_lines` but markers only (points measured at scattered sizes)."""
    plt = _pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(7.6, 4.4), dpi=110)
    for label, (xs, ys) in series.items():
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None and y == y]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], ls="none", marker="o", ms=4,
                label=label)
    if loglog:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(plot_title(title, meta), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if series:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)
    return True


def cuda_torch():
    """torch with CUDA and TF32 off (plain FP32 for fair comparisons), or None if unavailable."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch

