"""Sammon, this tree against an earlier one (``benchmarks/versus.py``'s case "sammon 20
iterations N=2,000"), where the time goes per iteration: on one device, each tree in its own
process (old, new, old, new, ...), printed side by side:

* wall time of the whole fit (median of a few, after a warm-up) and per evaluation (the
  fit's ``timings_["eval_s"]``: update passes + stress sum + its one-float readback);
* host time: the fit's wall time less the time spent inside moderngl's waits (texture and
  buffer reads, ``Context.finish``), per evaluation, and the count of those waits per fit;
* passes per phase and per evaluation, the counter's host events where the tree records
  them (readbacks, finishes, uploads, allocations);
* GPU time per phase and per evaluation from a ``Device(timing=True)`` fit (timer queries;
  on a CPU renderer the wall time of each draw);
* with ``--profile``, the top functions of the fit's host side (cProfile, tottime).

    python benchmarks/diag/sammon_versus.py --old /path/to/first-release [--n 2000]
        [--iters 20] [--reps 7] [--variants] [--profile]

``--variants`` adds this tree twice more: with the pair kernels' per-pair accessors
(``SammonTuning(fetch_variants=False)``, what GPUs ran before the fetch variants were used on
every device), and with the stress summed on the host (``SammonTuning(stress_on_host=True)``:
no reduction passes, the terms read back). About 20-40 s on llvmpipe at N = 2,000 with
``--variants``; less on a GPU. On a CPU renderer the draws themselves run on the host, so
"host" there is nearly the whole wall time.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import cProfile, importlib, io, json, pstats, statistics, sys, time
import numpy as np
import moderngl
import shadergpgpu as sg

def mod(name):
    for base in ("shadergpgpu.algorithms.", "shadergpgpu."):
        try:
            return importlib.import_module(base + name)
        except ModuleNotFoundError:
            pass
    raise ImportError(name)

ARGS = json.loads(sys.argv[1])
SM = mod("sammon")
TUNING = {}     # trees with SammonTuning take these on the device; older ones the modules'
if ARGS["per_pair"]:
    TUNING["fetch_variants"] = False
    if not hasattr(SM, "SammonTuning"):
        importlib.import_module("shadergpgpu.algorithms.sammon.geometry").CPU_VARIANTS = False
if ARGS["stress_host"]:
    TUNING["stress_on_host"] = True
    if not hasattr(SM, "SammonTuning"):
        importlib.import_module("shadergpgpu.algorithms.sammon.step").STRESS_ON_HOST = True

# time spent waiting inside moderngl: reads (a full GPU wait each) and finish()
WAIT = {"s": 0.0, "reads": 0, "finishes": 0}
def _wrap(cls, name, kind):
    fn = getattr(cls, name, None)
    if fn is None:
        return
    def wrapped(self, *a, **k):
        t0 = time.perf_counter()
        try:
            return fn(self, *a, **k)
        finally:
            WAIT["s"] += time.perf_counter() - t0
            WAIT[kind] += 1
    setattr(cls, name, wrapped)
for cls in (moderngl.Texture, moderngl.Buffer):
    for name in ("read", "read_into"):
        _wrap(cls, name, "reads")
_wrap(moderngl.Context, "finish", "finishes")

rng = np.random.default_rng(0)
X = rng.standard_normal((ARGS["n"], 16))
out = {"file": sg.__file__}

def fit(dev):
    est = SM.Sammon(n_iter=ARGS["iters"], device=dev)
    est.fit_transform(X)
    return est

def phases(dev):
    snap = dev.counter.snapshot()
    return {k: {"passes": v["passes"], "gpu_ms": v.get("gpu_ms", 0.0)} for k, v in snap.items()}

def events(dev):
    ev = getattr(dev.counter, "events", None)
    if ev is None:
        return None
    tot = {}
    for (label, kind), n in ev.items():
        tot[kind] = tot.get(kind, 0) + n
    return tot

dev = sg.Device()
if TUNING and hasattr(SM, "SammonTuning"):
    dev.tune(SM.SammonTuning, **TUNING)
out["renderer"] = dev.caps.renderer
fit(dev); fit(dev); dev.finish()
t_end = time.perf_counter() + ARGS["warm"]
while time.perf_counter() < t_end:       # a GPU reaches its boost clock
    fit(dev); dev.finish()
walls, hosts, waits, evals = [], [], [], []
for _ in range(ARGS["reps"]):
    dev.finish()
    WAIT.update(s=0.0, reads=0, finishes=0)
    t0 = time.perf_counter()
    est = fit(dev)
    dev.finish()
    wall = time.perf_counter() - t0
    walls.append(wall)
    hosts.append(wall - WAIT["s"])
    waits.append((WAIT["reads"], WAIT["finishes"] - 1))    # less the timing's own finish
    evals.append(est.timings_["eval_s"])
k = sorted(range(len(walls)), key=walls.__getitem__)[len(walls) // 2]
out.update(wall_ms=walls[k] * 1e3, host_ms=hosts[k] * 1e3, reads=waits[k][0],
           finishes=waits[k][1], n_iter=est.n_iter_, cached=bool(est.cached_),
           tiled=getattr(est, "tiled_", None), split=est.split_,
           eval_ms=[statistics.median(e[i] for e in evals) * 1e3
                    for i in range(min(len(e) for e in evals))],
           setup_ms=est.timings_["setup_s"] * 1e3)
dev.counter.reset()
fit(dev)
dev.finish()
out["phases"] = phases(dev)
out["events"] = events(dev)
if ARGS["profile"]:
    pr = cProfile.Profile()
    pr.enable()
    fit(dev)
    dev.finish()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(14)
    out["profile"] = s.getvalue()
dev.release()

dev = sg.Device(timing=True)
if dev.timing:
    fit(dev); dev.finish()
    dev.counter.reset()
    fit(dev)
    dev.finish()
    out["gpu"] = phases(dev)
dev.release()
print("RESULT " + json.dumps(out))
"""


def run_tree(root: Path, args, per_pair: bool = False, stress_host: bool = False) -> dict:
    # the tree first; the rest of the caller's path kept (where the wheels may live), with
    # this tree's own root dropped from it
    here = str(Path(__file__).resolve().parents[2])
    rest = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
            if p and Path(p).resolve() != Path(here)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *rest]))
    a = dict(n=args.n, iters=args.iters, reps=args.reps, warm=args.warm,
             profile=args.profile, per_pair=per_pair, stress_host=stress_host)
    r = subprocess.run([sys.executable, "-c", CHILD, json.dumps(a)], capture_output=True,
                       text=True, cwd=root, env=env, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (r.stderr or r.stdout).strip().splitlines()
    raise RuntimeError(f"{root}: " + (tail[-1] if tail else f"exit {r.returncode}"))


def report(name: str, r: dict) -> None:
    ev = max(1, int(r["n_iter"]))
    print(f"\n== {name}: {r['file']}")
    print(f"   cached {r['cached']}, tiled {r['tiled']}, split {r['split']}, evaluations {ev}")
    print(f"   fit wall {r['wall_ms']:.2f} ms (setup {r['setup_ms']:.2f} ms), host (wall less "
          f"moderngl waits) {r['host_ms']:.2f} ms = {r['host_ms'] / ev:.3f} ms per evaluation")
    print(f"   waits per fit: {r['reads']} reads, {r['finishes']} finish; per evaluation "
          f"{r['reads'] / ev:.2f} reads")
    e = r["eval_ms"]
    if e:
        print(f"   evaluation wall: first {e[0]:.3f} ms, median {statistics.median(e):.3f} ms, "
              f"sum {sum(e):.2f} ms")
    gpu = r.get("gpu") or {}
    total_p = sum(v["passes"] for v in r["phases"].values())
    print(f"   passes per fit {total_p} ({total_p / ev:.2f} per evaluation); GPU ms "
          f"{sum(v['gpu_ms'] for v in gpu.values()):.3f}" if gpu else
          f"   passes per fit {total_p} ({total_p / ev:.2f} per evaluation); no timer queries")
    for k, v in r["phases"].items():
        g = gpu.get(k, {}).get("gpu_ms")
        print(f"     {k:16s} {v['passes']:4d} passes ({v['passes'] / ev:5.2f} / evaluation)"
              + (f"  GPU {g:8.3f} ms ({g / ev:.4f} / evaluation)" if g is not None else ""))
    if r["events"] is not None:
        print("   counter events per fit: " + ", ".join(f"{k} {n}" for k, n in
                                                      sorted(r["events"].items())))
    if r.get("profile"):
        print("   host profile (one fit, cProfile, tottime):")
        lines = [ln for ln in r["profile"].splitlines() if ln.strip()]
        start = next((i for i, ln in enumerate(lines) if ln.strip().startswith("ncalls")), 0)
        for ln in lines[start:start + 15]:
            print("     " + ln)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old", required=True, help="root of the earlier checkout")
    ap.add_argument("--n", type=int, default=2000, help="points (16 features)")
    ap.add_argument("--iters", type=int, default=20, help="n_iter of the fit")
    ap.add_argument("--reps", type=int, default=5, help="timed fits per process (median)")
    ap.add_argument("--warm", type=float, default=0.5, help="seconds of warm-up fits")
    ap.add_argument("--rounds", type=int, default=1, help="alternating process pairs")
    ap.add_argument("--variants", action="store_true",
                    help="also this tree with the per-pair accessors (fetch_variants=False) "
                         "and with the stress summed on the host (stress_on_host=True)")
    ap.add_argument("--profile", action="store_true", help="print a host profile per tree")
    args = ap.parse_args(argv)
    old = Path(args.old).resolve()
    if not (old / "shadergpgpu").is_dir():
        ap.error(f"--old {old} has no shadergpgpu package")
    runs = [("old", old, {}), ("new", ROOT, {})]
    if args.variants:
        runs += [("new, per-pair accessors", ROOT, {"per_pair": True}),
                 ("new, stress on host", ROOT, {"stress_host": True})]
    results = {name: [] for name, _, _ in runs}
    for _ in range(max(1, args.rounds)):
        for name, root, kw in runs:
            results[name].append(run_tree(root, args, **kw))
    best = {}
    for name, rs in results.items():
        r = sorted(rs, key=lambda x: x["wall_ms"])[len(rs) // 2]
        best[name] = r
        report(name, r)
    print(f"\n# {best['old']['renderer']}; N = {args.n}, 16 features, n_iter = {args.iters}")
    o = best["old"]
    print(f"{'tree':28s} {'fit ms':>9s} {'host ms':>9s} {'GPU ms':>9s} {'passes':>7s} "
          f"{'reads':>6s} {'/ old':>7s}")
    for name, r in best.items():
        gpu = r.get("gpu")
        g = f"{sum(v['gpu_ms'] for v in gpu.values()):9.3f}" if gpu else f"{'-':>9s}"
        p = sum(v["passes"] for v in r["phases"].values())
        print(f"{name:28s} {r['wall_ms']:9.2f} {r['host_ms']:9.2f} {g} {p:7d} {r['reads']:6d} "
              f"{r['wall_ms'] / o['wall_ms']:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
