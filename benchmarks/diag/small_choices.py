"""The choices a small case could make instead (GPU): fused backprop 2-64-1 N=1024 under each
combination of ``BackpropTuning``'s ``fuse_delta``, ``recompute`` and ``buffers``, and Sammon
N=2,000 (16 features, 20 iterations) under each tile variant and with the untiled update
(``SammonTuning.tile_rows = False``).

    python benchmarks/diag/small_choices.py
"""
import itertools
import time

import numpy as np

import shadergpgpu as sg
from shadergpgpu.algorithms import backprop as bp
from shadergpgpu.analysis.plans import backprop as bplan
from shadergpgpu.algorithms.sammon import TILE_DEFAULT, TILE_VARIANTS, Sammon, SammonTuning


def best(fn, dev, reps=5):
    fn()
    dev.finish()
    t = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        dev.finish()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    dev = sg.Device()
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (1024, 2))
    T = rng.uniform(0, 1, (1024, 1))
    keys = ["buffers", "fuse_delta", "recompute"]
    for combo in itertools.product((False, True), repeat=len(keys)):
        with dev.tuned(bp.BackpropTuning, **dict(zip(keys, combo))):
            net = bp.BackpropNet(dev, [2, 64, 1], X, T, lr=0.1, schedule="fused")
        t = best(lambda: net.step(10), dev) / 10
        print(f"backprop 2-64-1 N=1024 {dict(zip(keys, combo))}: {t * 1e3:.4f} ms/step, "
              f"{sum(bplan.passes_per_step(net).values())} passes")
        net.release()
    Xs = rng.standard_normal((2000, 16))
    for rows in (True, False):
        for var in (sorted(TILE_VARIANTS) if rows else [TILE_DEFAULT]):
            with dev.tuned(SammonTuning.variant(var, tile_rows=rows)):
                t = best(lambda: Sammon(n_iter=20, device=dev).fit_transform(Xs), dev, 3)
            print(f"sammon N=2000 tile_rows={rows} {var}: {t * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
