"""This tree against an earlier version of the library, in the same run, on the same device.

    git worktree add /tmp/old <commit>        # or any checkout of the earlier code
    python benchmarks/versus.py --old /tmp/old [--quick] [--repeats 5]

Each case runs in its own process for the old and the new code, alternately (old, new, old,
new, ...), so drift hits both alike; each process warms up, then times the median of a few
calls. The table ends with new / old per case; a case more than 5% slower prints `MISSED` and
the exit status is 1. Cases use the public API that both versions share (module paths differ:
``shadergpgpu.backprop`` then, ``shadergpgpu.algorithms.backprop`` now).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PRELUDE = r"""
import json, sys, time
import numpy as np
import shadergpgpu as sg
def mod(name):
    import importlib
    for base in ("shadergpgpu.algorithms.", "shadergpgpu.ops.", "shadergpgpu."):
        try:
            return importlib.import_module(base + name)
        except ModuleNotFoundError:
            pass
    raise ImportError(name)
dev = sg.Device()
def timed(fn, reps):
    fn(); dev.finish()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); fn(); dev.finish(); ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]
def warm(fn, seconds=0.5):
    # a GPU idles at low clocks and takes a while to reach its boost clock: a case whose timed
    # calls are a few ms of work runs it for a while first, so both versions are timed at speed
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        fn(); dev.finish()
big = "llvmpipe" not in dev.caps.renderer.lower()
Q = QUICK
rng = np.random.default_rng(0)
"""

CASES = {
    "backprop fused 2-64-1 N=1024 (step)": r"""
bp = mod("backprop")
X = rng.uniform(0, 1, (1024, 2)); T = rng.uniform(0, 1, (1024, 1))
net = bp.BackpropNet(dev, [2, 64, 1], X, T, lr=0.1, schedule="fused")
warm(lambda: net.step(10))
t = timed(lambda: net.step(10), 3 if Q else 7) / 10
""",
    "backprop paper packed 2-64-1 N=1024 (step)": r"""
bp = mod("backprop")
X = rng.uniform(0, 1, (1024, 2)); T = rng.uniform(0, 1, (1024, 1))
net = bp.BackpropNet(dev, [2, 64, 1], X, T, lr=0.1, schedule="paper", packed=True)
warm(lambda: net.step(2))
t = timed(lambda: net.step(2), 3 if Q else 5) / 2
""",
    "backprop fused 64-256-10 N=4096 (step)": r"""
bp = mod("backprop")
X = rng.uniform(0, 1, (4096, 64)); T = rng.uniform(0, 1, (4096, 10))
net = bp.BackpropNet(dev, [64, 256, 10], X, T, lr=0.01, schedule="fused")
warm(lambda: net.step(2))
t = timed(lambda: net.step(2), 3 if Q else 5) / 2
""",
    "sgemm auto n (device arrays)": r"""
S = mod("sgemm")
n = (4096 if big else 1024) // (4 if Q else 1)
A = dev.array(rng.standard_normal((n, n))); B = dev.array(rng.standard_normal((n, n)))
def run():
    out = S.sgemm(A, B)
    out.release()
t = timed(run, 3 if Q else 5)
""",
    "blur recursive hv gray (device image)": r"""
B = mod("blur")
n = (4096 if big else 1024) // (4 if Q else 1)
img = dev.image(rng.uniform(0, 1, (n, n)))
def run():
    out = B.gaussian_blur(img, 8.0, method="recursive")
    out.release()
t = timed(run, 3 if Q else 5)
""",
    "blur exact gray sigma 4 (device image)": r"""
B = mod("blur")
n = (4096 if big else 1024) // (4 if Q else 1)
img = dev.image(rng.uniform(0, 1, (n, n)))
def run():
    out = B.gaussian_blur(img, 4.0, method="exact")
    out.release()
t = timed(run, 3 if Q else 5)
""",
    "svm fit 2,000 points (one class pair)": r"""
SV = mod("svm")
n = 1000 if Q else 2000
X = rng.standard_normal((n, 16)); y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
t = timed(lambda: SV.SVC(C=1.0, gamma=0.05, device=dev).fit(X, y), 3)
""",
    "sammon 20 iterations N=2,000": r"""
SM = mod("sammon")
n = 1000 if Q else 2000
X = rng.standard_normal((n, 16))
fit = lambda: SM.Sammon(n_iter=20, device=dev).fit_transform(X)
warm(fit)
t = timed(fit, 5)
""",
}


def run_case(root: Path, code: str, quick: bool) -> float | str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # this root first; keep other entries (e.g. a folder of installed wheels), not the other root
    keep = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).resolve() not in (ROOT.resolve(), root.resolve())]
    env["PYTHONPATH"] = os.pathsep.join([str(root)] + keep)
    src = PRELUDE.replace("QUICK", str(bool(quick))) + code + "\nprint('T', t)\n"
    # run from the root so its own package (not an installed one) is imported
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, cwd=root,
                       env=env, timeout=900)
    for line in r.stdout.splitlines():
        if line.startswith("T "):
            return float(line.split()[1])
    tail = (r.stderr or r.stdout).strip().splitlines()
    return "error: " + (tail[-1] if tail else f"exit {r.returncode}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="root of the earlier checkout")
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--repeats", type=int, default=3, help="alternating process pairs per case")
    ap.add_argument("--cases", default="", help="comma-separated substrings selecting cases")
    ap.add_argument("--json", default="", help="write the rows to this file")
    args = ap.parse_args(argv)
    old = Path(args.old).resolve()
    if not (old / "shadergpgpu").is_dir():
        ap.error(f"--old {old} has no shadergpgpu package")
    import shadergpgpu as sg
    dev = sg.Device()
    print(f"# this tree vs {old}, on {dev.caps.renderer}, {time.strftime('%Y-%m-%d %H:%M')}\n")
    dev.release()
    pick = [c for c in args.cases.split(",") if c]
    rows, status = [], 0
    print("| case | old ms | new ms | new / old | |")
    print("|---|---|---|---|---|")
    for name, code in CASES.items():
        if pick and not any(p in name for p in pick):
            continue
        t_old, t_new = [], []
        err = ""
        for _ in range(args.repeats):
            for root, acc in ((old, t_old), (ROOT, t_new)):
                v = run_case(root, code, args.quick)
                if isinstance(v, str):
                    err = f"{'old' if root == old else 'new'} {v}"
                else:
                    acc.append(v)
        if err or not t_old or not t_new:
            print(f"| {name} | | | | ERROR {err} |")
            rows.append({"case": name, "error": err})
            status = 1
            continue
        o, n = statistics.median(t_old), statistics.median(t_new)
        mark = "ok" if n <= 1.05 * o else "MISSED (> 5% slower)"
        if n > 1.05 * o:
            status = 1
        rows.append({"case": name, "old_ms": o * 1e3, "new_ms": n * 1e3, "ratio": n / o,
                     "mark": mark})
        print(f"| {name} | {o * 1e3:.3g} | {n * 1e3:.3g} | {n / o:.3f} | {mark} |", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    if status:
        print("\nMISSED: at least one case is more than 5% slower than the old code (or failed)")
    return status


if __name__ == "__main__":
    sys.exit(main())
