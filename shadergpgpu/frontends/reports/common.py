"""Helpers shared by the reports and benchmarks: progress, tables, output files, plots."""
from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
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


def plot_lines(path, series: dict, xlabel: str, ylabel: str, title: str, loglog: bool = True) -> bool:
    """Line plot of {label: (xs, ys)}; returns False when matplotlib is missing."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=110)
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", ms=3, label=label)
    if loglog:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def device_meta(dev) -> dict:
    return {"renderer": dev.caps.renderer, "gl_version": dev.caps.version,
            "backend": dev.caps.backend,
            "date": time.strftime("%Y-%m-%d"), "host_cpus": os.cpu_count()}


def time_call(fn, finish, repeat: int = 5, warmup: int = 1, min_time: float = 0.0) -> float:
    """Median seconds per call of ``fn`` (``finish`` waits for the GPU)."""
    for _ in range(warmup):
        fn()
    finish()
    times = []
    t_total = 0.0
    while len(times) < repeat or t_total < min_time:
        t0 = time.perf_counter()
        fn()
        finish()
        dt = time.perf_counter() - t0
        times.append(dt)
        t_total += dt
        if len(times) > 1000:
            break
    times.sort()
    return times[len(times) // 2]


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
