"""Benchmark: RBF pair evaluation, reductions, and SMO training against scikit-learn's SVC.

    python benchmarks/svm.py [--quick] [--sizes 1000,2000,...] [--iter-sizes 10000,...]
                             [--iters N] [--reduce-n N] [--skip-sweep] [--out DIR]

A GPU run of a few minutes (the targets of the issue "Performance"; MISSED lines on an NVIDIA
renderer name the targets missed):

    python benchmarks/svm.py --sizes 1000,2000,5000,10000,20000 \
        --iter-sizes 1000,10000,20000,50000 --iters 3000 --out results/

Measured in the same run:
- fragment copy bandwidth (engine/copy.frag over a large packed array; bytes read + written);
- RBF pair pass (K(x_t, x_h), K(x_t, x_l) for all t): GFLOP/s at 6 flops per point and
  feature, against the bound copy_bw * 6 flops / 4 bytes (the source's bound);
- reductions (sum, arg-max) over n float32 values: GReductions/s against copy_bw / 4 bytes,
  and a fan-in sweep for the arg-max;
- time per SMO iteration at 10,000-50,000 points (and 1,000: the pass-issue floor, where the
  GPU work is negligible; ``us_per_pass`` = time per iteration / passes): the step solved on
  the host from one readback per iteration (``SVC(readback_every=1)``) against the step solved
  on the device with one readback every k iterations (the default), interleaved, best of
  several fits;
- SVC training (RBF, C=1, gamma="scale", tol=1e-3) on a synthetic set against
  sklearn.svm.SVC, both paths: seconds, iterations, support vectors, prediction agreement,
  and the crossover size from which the device trainer stays faster;
- SMO time per iteration by reduction fan-in (8 .. 256 at 20,000 points: fewer levels against
  longer gathers; ``SVC(fanin=F)`` picks one).
The GPU run above takes a few minutes on an H200 (scikit-learn's fits dominate: about 1 min
at 20,000 points); ``--quick`` is the llvmpipe smoke run.
Targets (checked on an NVIDIA renderer, MISSED printed otherwise): arg-max >= 70% of the copy
bound; <= 40 us per SMO iteration at 10,000-50,000 points; crossover at <= 5,000 points.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.ops import reduce as R  # noqa: E402
from shadergpgpu.ops.tuning import ReduceTuning  # noqa: E402
from shadergpgpu.ops.rbf import FLOPS_PER_POINT_FEATURE, RBFData  # noqa: E402
from shadergpgpu.analysis.reports.common import markdown_table, time_call  # noqa: E402


def copy_bandwidth(dev, texels: int) -> float:
    """Bytes per second (read + written) of the fragment copy kernel."""
    side = int(np.sqrt(texels))
    x = dev.empty((side, 4 * side))
    y = dev.empty((side, 4 * side))
    dev.fill(x, 1.0)
    p = dev.prepare(sg.builtin.COPY, y, inputs={"X": x})
    reps = 20
    sec = time_call(lambda: [p.run() for _ in range(reps)], dev.finish, repeat=5) / reps
    x.release()
    y.release()
    return 2 * 16 * side * side / sec


def rbf_rate(dev, n: int, d: int):
    rng = np.random.default_rng(0)
    data = RBFData(dev, rng.standard_normal((n, d)).astype(np.float32))
    kh, kl = data.vector(), data.vector()
    data.pair_device(0, 1, 0.1, kh, kl)
    reps = 10
    sec = time_call(lambda: [data.pair_device(5, n - 1, 0.1, kh, kl) for _ in range(reps)],
                    dev.finish, repeat=5) / reps
    # correctness spot check against float64
    x = data.host.astype(np.float64)
    ref = np.exp(-0.1 * ((x[:1000] - x[5]) ** 2).sum(1))
    err = float(np.abs(kh.get()[:1000] - ref).max())
    for a in (kh, kl):
        a.release()
    data.release()
    return FLOPS_PER_POINT_FEATURE * n * d / sec, sec, err


def reduction_rates(dev, n: int, fanins):
    rng = np.random.default_rng(1)
    v = rng.standard_normal(n).astype(np.float32)
    x = dev.array(v)
    rows = []
    reps = 10
    for F in fanins:
        for kind, fn in (("argmax", lambda: R.argmax_device(dev, x, fanin=F).release()),
                         ("sum", lambda: R.total_device(dev, x, F).release()),
                         ("dot (ReductionKernel)",
                          lambda: R.DOT.run_device(dev, (x, x), fanin=F).release())):
            sec = time_call(lambda: [fn() for _ in range(reps)], dev.finish, repeat=5) / reps
            rows.append({"kind": kind, "fanin": F, "passes": R.passes(n, F),
                         "ms": sec * 1e3, "GRed/s": n / sec / 1e9})
    # the first level with the full (value, index) comparison, for reference
    with dev.tuned(ReduceTuning, scan_strict=False):
        for F in fanins:
            fn = lambda: R.argmax_device(dev, x, fanin=F).release()  # noqa: E731
            sec = time_call(lambda: [fn() for _ in range(reps)], dev.finish, repeat=5) / reps
            rows.append({"kind": "argmax (full compare)", "fanin": F, "passes": R.passes(n, F),
                         "ms": sec * 1e3, "GRed/s": n / sec / 1e9})
    got = R.argmax(dev, x)
    ok = got == (float(v.max()), int(np.argmax(v)))
    x.release()
    return rows, ok


def _data(n):
    from sklearn.datasets import make_classification
    return make_classification(n_samples=n, n_features=20, n_informative=10, flip_y=0.02,
                               random_state=0)


def smo_fanin_sweep(dev, n, fanins, iters):
    """Time per SMO iteration at one size for several reduction fan-ins (passes vs work per
    pass), step on the device, ``iters`` iterations (max_iter)."""
    import warnings

    from shadergpgpu.algorithms.svm import SVC
    X, y = _data(n)
    rows = []
    for F in fanins:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            SVC(C=1.0, device=dev, fanin=F, max_iter=20).fit(X, y)     # compile, warm up
            t0 = time.perf_counter()
            m = SVC(C=1.0, device=dev, fanin=F, max_iter=iters).fit(X, y)
            sec = time.perf_counter() - t0
        it = int(m.n_iter_[0])
        rows.append({"n": n, "fanin": F, "passes": m.n_passes_, "iters": it,
                     "passes_per_iter": m.n_passes_ / max(it, 1),
                     "us_per_iter": 1e6 * sec / max(it, 1)})
    return rows


def per_iteration(dev, sizes, iters, repeat):
    """Time per SMO iteration, host step (readback_every=1, one readback per iteration)
    against the device step (the default), interleaved: the difference between a fit of
    ``iters`` iterations (max_iter) and one of 1 iteration, over the difference in iterations
    (so uploads, preparation and the final readbacks cancel out); best of ``repeat``."""
    import warnings

    from shadergpgpu.algorithms.svm import SVC
    rows = []
    for n in sizes:
        X, y = _data(n)
        best = {}

        def fit(kw, max_iter):
            t0 = time.perf_counter()
            m = SVC(C=1.0, device=dev, max_iter=max_iter, **kw).fit(X, y)
            return time.perf_counter() - t0, int(m.n_iter_[0]), m.n_passes_

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            for rb in (1, None):
                fit({} if rb is None else {"readback_every": rb}, 20)   # compile, warm up
            for _ in range(repeat):
                for rb in (1, None):
                    kw = {} if rb is None else {"readback_every": rb}
                    t1, it1, p1 = fit(kw, 1)
                    t2, it2, p2 = fit(kw, iters)
                    sec = (t2 - t1) / max(it2 - it1, 1)
                    best[rb] = min(best.get(rb, np.inf), sec)
                    best[(rb, "passes")] = (p2 - p1) / max(it2 - it1, 1)
        rows.append({"n": n, "iters": iters, "host_step_us": best[1] * 1e6,
                     "device_step_us": best[None] * 1e6,
                     "gain": best[1] / best[None],
                     "passes_per_iter": best[(None, "passes")],
                     "us_per_pass": best[None] * 1e6 / best[(None, "passes")]})
        print(f"  n={n}: host step {best[1] * 1e6:.0f} us/iter, device step "
              f"{best[None] * 1e6:.0f} us/iter", flush=True)
    return rows


def training(dev, sizes, max_sklearn_s: float):
    """Whole fits to convergence: device step, host step (readback_every=1), scikit-learn."""
    from sklearn.svm import SVC as SkSVC

    from shadergpgpu.algorithms.svm import SVC
    rows = []
    for n in sizes:
        X, y = _data(n)
        t0 = time.perf_counter()
        dev.counter.reset()
        ours = SVC(C=1.0, device=dev).fit(X, y)
        t_ours = time.perf_counter() - t0
        passes = dev.counter.total
        t0 = time.perf_counter()
        old = SVC(C=1.0, device=dev, readback_every=1).fit(X, y)
        t_old = time.perf_counter() - t0
        t0 = time.perf_counter()
        ref = SkSVC(C=1.0).fit(X, y)
        t_sk = time.perf_counter() - t0
        agree = float(np.mean(ours.predict(X[:5000]) == ref.predict(X[:5000])))
        a, b = set(ours.support_.tolist()), set(ref.support_.tolist())
        it = max(int(ours.n_iter_[0]), 1)
        rows.append({"n": n, "ours_s": t_ours, "host_step_s": t_old, "sklearn_s": t_sk,
                     "speedup": t_sk / t_ours, "speedup_host_step": t_sk / t_old,
                     "iters": int(ours.n_iter_[0]), "sk_iters": int(ref.n_iter_[0]),
                     "us_per_iter": 1e6 * t_ours / it, "passes": passes, "n_sv": len(a),
                     "sv_iou": len(a & b) / len(a | b), "agree": agree})
        print(f"  n={n}: ours {t_ours:.2f}s (host step {t_old:.2f}s) sklearn {t_sk:.2f}s",
              flush=True)
        if t_sk > max_sklearn_s:
            break
    return rows


def crossover(rows, key):
    """Smallest size from which the device trainer stays faster than scikit-learn."""
    cross = None
    for r in sorted(rows, key=lambda r: r["n"]):
        if r[key] > 1:
            cross = r["n"] if cross is None else cross
        else:
            cross = None
    return cross


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None, help="training sizes (whole fits against "
                    "scikit-learn, for the crossover), comma separated")
    ap.add_argument("--iter-sizes", default=None, help="sizes for the time per iteration "
                    "(host step vs device step), comma separated")
    ap.add_argument("--iters", type=int, default=None,
                    help="iterations per fit when timing per iteration")
    ap.add_argument("--reduce-n", type=int, default=None, help="length of the reduced vector")
    ap.add_argument("--skip-sweep", action="store_true", help="no fan-in sweeps")
    ap.add_argument("--out", default=None, help="write svm.json here")
    ap.add_argument("--max-sklearn-s", type=float, default=120.0,
                    help="stop growing the training size once sklearn takes this long")
    args = ap.parse_args(argv)
    dev = sg.Device()
    renderer = dev.caps.renderer
    nvidia = "nvidia" in renderer.lower()
    print(f"device: {renderer} | {time.strftime('%Y-%m-%d')}", flush=True)
    if args.quick:
        copy_texels, rbf_n, rbf_d, red_n = 1 << 18, 1 << 14, 16, 1 << 18
        fanins = [8, 16, 32]
        sizes = [500, 1000]
        iter_sizes, iters, repeat = [2000], 200, 1
    else:
        copy_texels, rbf_n, rbf_d, red_n = 1 << 24, 1 << 20, 64, 16_000_000
        fanins = [4, 8, 16, 32, 64, 128]
        sizes = [1000, 2000, 5000, 10000, 20000]
        iter_sizes, iters, repeat = [1000, 10000, 20000, 50000], 3000, 3
    if args.sizes:
        sizes = [int(v) for v in args.sizes.split(",")]
    if args.iter_sizes:
        iter_sizes = [int(v) for v in args.iter_sizes.split(",")]
    if args.iters:
        iters = args.iters
    if args.reduce_n:
        red_n = args.reduce_n
    bw = copy_bandwidth(dev, copy_texels)
    print(f"fragment copy bandwidth: {bw / 1e9:.1f} GB/s", flush=True)
    gflops, rbf_s, rbf_err = rbf_rate(dev, rbf_n, rbf_d)
    rbf_bound = bw * FLOPS_PER_POINT_FEATURE / 4
    red_rows, red_ok = reduction_rates(dev, red_n, fanins)
    # the copy bound again after the reductions (the bound is the better of the two)
    bw = max(bw, copy_bandwidth(dev, copy_texels))
    red_bound = bw / 4
    for r in red_rows:
        r["of_bound"] = r["GRed/s"] * 1e9 / red_bound
    print("\n## Reductions (n = %d, bound copy_bw / 4 B = %.2f GRed/s)\n"
          % (red_n, red_bound / 1e9))
    print(markdown_table(red_rows))
    print("## Time per SMO iteration: host step (readback every iteration) vs device step\n",
          flush=True)
    iter_rows = per_iteration(dev, iter_sizes, iters, repeat)
    print(markdown_table(iter_rows))
    print("## Training (synthetic, 20 features, C=1, gamma=scale, tol=1e-3)\n", flush=True)
    train_rows = training(dev, sizes, args.max_sklearn_s)
    print(markdown_table(train_rows))
    sweep = []
    if not args.skip_sweep:
        n_sweep = 2000 if args.quick else 20000
        sweep = smo_fanin_sweep(dev, n_sweep, [8, 16, 32, 64, 128, 256], min(iters, 2000))
        print("## SMO time per iteration by reduction fan-in (device step)\n")
        print(markdown_table(sweep))
    best = {k: max((r for r in red_rows if r["kind"] == k), key=lambda r: r["GRed/s"])
            for k in ("argmax", "sum")}
    cross = crossover(train_rows, "speedup")
    cross_old = crossover(train_rows, "speedup_host_step")
    summary = [
        {"measure": "fragment copy bandwidth", "value": f"{bw / 1e9:.1f} GB/s", "ratio": ""},
        {"measure": f"RBF pair pass, n={rbf_n}, d={rbf_d}",
         "value": f"{gflops / 1e9:.1f} GFLOP/s ({rbf_s * 1e3:.2f} ms, max err {rbf_err:.1e})",
         "ratio": f"{gflops / rbf_bound:.0%} of {rbf_bound / 1e9:.1f} GFLOP/s bound"},
    ]
    for k, r in best.items():
        summary.append({"measure": f"{k} reduction, n={red_n} (best F={r['fanin']})",
                        "value": f"{r['GRed/s']:.2f} GRed/s ({r['passes']} passes)",
                        "ratio": f"{r['of_bound']:.0%} of {red_bound / 1e9:.2f} GRed/s bound"})
    for r in iter_rows:
        summary.append({"measure": f"SMO iteration, n={r['n']}",
                        "value": f"{r['device_step_us']:.0f} us (host step "
                                 f"{r['host_step_us']:.0f} us)",
                        "ratio": f"{r['gain']:.2f}x, {r['passes_per_iter']:.1f} passes/iter"})
    last = train_rows[-1]["n"] if train_rows else 0
    summary.append({"measure": "training crossover vs sklearn SVC",
                    "value": (f"n = {cross}" if cross else f"none up to n = {last}")
                    + f" (host step: {cross_old if cross_old else 'none'})",
                    "ratio": ", ".join(f"{r['n']}: {r['speedup']:.2f}x" for r in train_rows)})
    print("## Summary\n")
    print(markdown_table(summary, ["measure", "value", "ratio"]))
    # targets (issue "Performance"): checked on an NVIDIA renderer only
    missed = []
    argmax_ratio = best["argmax"]["of_bound"]
    if argmax_ratio < 0.70:
        missed.append(f"arg-max at {argmax_ratio:.0%} of the copy bound (target >= 70%)")
    for r in iter_rows:
        if 10000 <= r["n"] <= 50000 and r["device_step_us"] > 40:
            missed.append(f"SMO iteration at n={r['n']}: {r['device_step_us']:.0f} us "
                          "(target <= 40 us)")
    if cross is None or cross > 5000:
        missed.append(f"crossover with scikit-learn at n = {cross} (target <= 5000)")
    for m in missed:
        print(("MISSED: " if nvidia else "target (checked on NVIDIA only): ") + m)
    if nvidia and not missed:
        print("all targets met")
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        with open(Path(args.out) / "svm.json", "w") as f:
            json.dump({"renderer": renderer, "copy_bw": bw, "rbf_gflops": gflops / 1e9,
                       "reductions": red_rows, "per_iteration": iter_rows,
                       "training": train_rows, "crossover": cross,
                       "crossover_host_step": cross_old, "argmax_exact": red_ok,
                       "smo_fanin": sweep, "missed": missed if nvidia else None}, f, indent=1)
    return 0 if red_ok else 1


if __name__ == "__main__":
    sys.exit(main())
