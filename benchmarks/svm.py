"""Benchmark: RBF pair evaluation, reductions, and SMO training against scikit-learn's SVC.

    python benchmarks/svm.py [--quick] [--sizes 2000,5000,...] [--out DIR]

Measured in the same run:
- fragment copy bandwidth (engine/copy.frag over a large packed array; bytes read + written);
- RBF pair pass (K(x_t, x_h), K(x_t, x_l) for all t): GFLOP/s at 6 flops per point and
  feature, against the bound copy_bw * 6 flops / 4 bytes (the source's bound);
- reductions (sum, arg-max) over n float32 values: GReductions/s against copy_bw / 4 bytes,
  and a fan-in sweep for the arg-max;
- SVC training (RBF, C=1, gamma="scale", tol=1e-3) on a synthetic set against
  sklearn.svm.SVC: seconds, iterations, support vectors, prediction agreement, and the
  crossover size from which the device trainer is faster.
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
from shadergpgpu.ops.rbf import FLOPS_PER_POINT_FEATURE, RBFData  # noqa: E402
from shadergpgpu.frontends.reports.common import markdown_table, time_call  # noqa: E402


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
    R.SCAN_STRICT = False
    for F in fanins:
        fn = lambda: R.argmax_device(dev, x, fanin=F).release()  # noqa: E731
        sec = time_call(lambda: [fn() for _ in range(reps)], dev.finish, repeat=5) / reps
        rows.append({"kind": "argmax (full compare)", "fanin": F, "passes": R.passes(n, F),
                     "ms": sec * 1e3, "GRed/s": n / sec / 1e9})
    R.SCAN_STRICT = True
    got = R.argmax(dev, x)
    ok = got == (float(v.max()), int(np.argmax(v)))
    x.release()
    return rows, ok


def smo_fanin_sweep(dev, n, fanins):
    """Training time at one size for several reduction fan-ins (passes vs work per pass)."""
    from sklearn.datasets import make_classification

    from shadergpgpu.algorithms.svm import SVC
    X, y = make_classification(n_samples=n, n_features=20, n_informative=10, flip_y=0.02,
                               random_state=0)
    rows = []
    for F in fanins:
        dev.counter.reset()
        t0 = time.perf_counter()
        m = SVC(C=1.0, device=dev, fanin=F).fit(X, y)
        sec = time.perf_counter() - t0
        it = int(m.n_iter_[0])
        rows.append({"n": n, "fanin": F, "seconds": sec, "iters": it,
                     "passes_per_iter": dev.counter.total / max(it, 1),
                     "us_per_iter": 1e6 * sec / max(it, 1)})
    return rows


def training(dev, sizes, max_sklearn_s: float):
    from sklearn.datasets import make_classification
    from sklearn.svm import SVC as SkSVC

    from shadergpgpu.algorithms.svm import SVC
    rows = []
    for n in sizes:
        X, y = make_classification(n_samples=n, n_features=20, n_informative=10, flip_y=0.02,
                                   random_state=0)
        t0 = time.perf_counter()
        dev.counter.reset()
        ours = SVC(C=1.0, device=dev).fit(X, y)
        t_ours = time.perf_counter() - t0
        passes = dev.counter.total
        t0 = time.perf_counter()
        ref = SkSVC(C=1.0).fit(X, y)
        t_sk = time.perf_counter() - t0
        agree = float(np.mean(ours.predict(X[:5000]) == ref.predict(X[:5000])))
        a, b = set(ours.support_.tolist()), set(ref.support_.tolist())
        rows.append({"n": n, "ours_s": t_ours, "sklearn_s": t_sk, "speedup": t_sk / t_ours,
                     "iters": int(ours.n_iter_[0]), "sk_iters": int(ref.n_iter_[0]),
                     "us_per_iter": 1e6 * t_ours / max(int(ours.n_iter_[0]), 1),
                     "passes": passes, "n_sv": len(a), "sv_iou": len(a & b) / len(a | b),
                     "agree": agree})
        print(f"  n={n}: ours {t_ours:.2f}s sklearn {t_sk:.2f}s", flush=True)
        if t_sk > max_sklearn_s:
            break
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None, help="training sizes, comma separated")
    ap.add_argument("--out", default=None, help="write svm.json here")
    ap.add_argument("--max-sklearn-s", type=float, default=120.0,
                    help="stop growing the training size once sklearn takes this long")
    args = ap.parse_args(argv)
    dev = sg.Device()
    print(f"device: {dev.caps.renderer} | {time.strftime('%Y-%m-%d')}", flush=True)
    if args.quick:
        copy_texels, rbf_n, rbf_d, red_n = 1 << 18, 1 << 14, 16, 1 << 18
        fanins = [8, 16, 32]
        sizes = [500, 1000]
    else:
        copy_texels, rbf_n, rbf_d, red_n = 1 << 24, 1 << 20, 64, 16_000_000
        fanins = [4, 8, 16, 32, 64, 128]
        sizes = [2000, 5000, 10000, 20000, 50000]
    if args.sizes:
        sizes = [int(s) for s in args.sizes.split(",")]
    bw = copy_bandwidth(dev, copy_texels)
    print(f"fragment copy bandwidth: {bw / 1e9:.1f} GB/s", flush=True)
    gflops, rbf_s, rbf_err = rbf_rate(dev, rbf_n, rbf_d)
    rbf_bound = bw * FLOPS_PER_POINT_FEATURE / 4
    red_rows, red_ok = reduction_rates(dev, red_n, fanins)
    red_bound = bw / 4
    for r in red_rows:
        r["of_bound"] = r["GRed/s"] * 1e9 / red_bound
    print("\n## Reductions (n = %d, bound copy_bw / 4 B = %.2f GRed/s)\n"
          % (red_n, red_bound / 1e9))
    print(markdown_table(red_rows))
    print("## Training (synthetic, 20 features, C=1, gamma=scale, tol=1e-3)\n", flush=True)
    train_rows = training(dev, sizes, args.max_sklearn_s)
    print(markdown_table(train_rows))
    n_sweep = 1000 if args.quick else 10000
    sweep = smo_fanin_sweep(dev, n_sweep, [8, 16, 32, 64])
    print("## SMO time per iteration by reduction fan-in\n")
    print(markdown_table(sweep))
    best = {k: max((r for r in red_rows if r["kind"] == k), key=lambda r: r["GRed/s"])
            for k in ("argmax", "sum")}
    faster = [r["n"] for r in train_rows if r["speedup"] > 1]
    cross = min(faster) if faster else None
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
    summary.append({"measure": "training crossover vs sklearn SVC",
                    "value": f"n = {cross}" if cross else f"none up to n = {train_rows[-1]['n']}",
                    "ratio": ", ".join(f"{r['n']}: {r['speedup']:.2f}x" for r in train_rows)})
    print("## Summary\n")
    print(markdown_table(summary, ["measure", "value", "ratio"]))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        with open(Path(args.out) / "svm.json", "w") as f:
            json.dump({"renderer": dev.caps.renderer, "copy_bw": bw, "rbf_gflops": gflops / 1e9,
                       "reductions": red_rows, "training": train_rows,
                       "argmax_exact": red_ok, "smo_fanin": sweep}, f, indent=1)
    return 0 if red_ok else 1


if __name__ == "__main__":
    sys.exit(main())
