"""A/B: glFlush per phase (backprop) / per iteration (SVM) on and off, interleaved."""
import sys, time, warnings
import numpy as np
import shadergpgpu as sg
from shadergpgpu.algorithms import backprop as bp, svm as S
from shadergpgpu.algorithms.svm import SVC
sys.path.insert(0, "benchmarks")
from svm import _data
warnings.simplefilter("ignore", RuntimeWarning)
dev = sg.Device()
rng = np.random.default_rng(0)
nets = []
for sizes, n in (([2, 64, 1], 1024), ([64, 256, 10], 4096), ([2, 1024, 1], 16384)):
    X = rng.uniform(0, 1, (n, sizes[0])); T = rng.uniform(0, 1, (n, sizes[-1]))
    for sched in ("fused", "paper"):
        if sched == "paper" and sizes[1] > 64:
            continue
        net = bp.BackpropNet(dev, sizes, X, T, lr=0.5 / n, schedule=sched, packed=True)
        nets.append((f"{'-'.join(map(str, sizes))} N={n} {sched}", net))
res = {}
for rep in range(5):
    for flag in (False, True):
        bp.FLUSH_PHASES = flag
        for name, net in nets:
            net.step(2); dev.finish()
            reps = 20 if "paper" not in name else 5
            t0 = time.perf_counter(); net.step(reps); dev.finish()
            dt = (time.perf_counter() - t0) / reps
            k = (name, flag); res[k] = min(res.get(k, 1e9), dt)
for name, _ in nets:
    a, b = res[(name, False)], res[(name, True)]
    print(f"backprop {name}: no flush {a*1e3:.4f} ms, flush {b*1e3:.4f} ms, ratio {b/a:.3f}", flush=True)
for n in (10000, 50000):
    X, y = _data(n)
    best = {}
    for rep in range(2):
        for flag in (False, True):
            S.FLUSH_ITERATIONS = flag
            SVC(device=dev, max_iter=20).fit(X, y)
            t0 = time.perf_counter(); SVC(device=dev, max_iter=10).fit(X, y); t1 = time.perf_counter() - t0
            t0 = time.perf_counter(); SVC(device=dev, max_iter=1010).fit(X, y); t2 = time.perf_counter() - t0
            best[flag] = min(best.get(flag, 1e9), (t2 - t1) / 1000 * 1e6)
    print(f"svm n={n}: no flush {best[False]:.1f} us/iter, flush {best[True]:.1f} us/iter", flush=True)
