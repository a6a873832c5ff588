"""Where the small cases of benchmarks/versus.py spend their time (fused backprop 2-64-1
N=1024, Sammon 20 iterations N=2,000): per-phase GPU time and passes, wall time, and a profile
of the Python side. Runs on whichever tree is first on PYTHONPATH (old or new code).

    PYTHONPATH=<tree> python benchmarks/diag/small_cases.py
"""
import cProfile
import importlib
import pstats
import time

import numpy as np

import shadergpgpu as sg


def mod(name):
    for base in ("shadergpgpu.algorithms.", "shadergpgpu."):
        try:
            return importlib.import_module(base + name)
        except ModuleNotFoundError:
            pass
    raise ImportError(name)


def main():
    print("#", sg.__file__)
    rng = np.random.default_rng(0)
    bp, SM = mod("backprop"), mod("sammon")
    X = rng.uniform(0, 1, (1024, 2))
    T = rng.uniform(0, 1, (1024, 1))
    Xs = rng.standard_normal((2000, 16))
    for timing in (False, True):
        dev = sg.Device(timing=timing)
        net = bp.BackpropNet(dev, [2, 64, 1], X, T, lr=0.1, schedule="fused")
        net.step(50)
        dev.finish()
        dev.counter.reset()
        t0 = time.perf_counter()
        net.step(100)
        dev.finish()
        wall = (time.perf_counter() - t0) / 100
        snap = dev.counter.snapshot()
        print(f"backprop fused 2-64-1 N=1024 timing={timing}: {wall * 1e3:.4f} ms/step; "
              + ", ".join(f"{k}: {v['passes'] / 100:.1f} passes {v['gpu_ms'] / 100 * 1e3:.1f} us"
                          for k, v in snap.items()))
        SM.Sammon(n_iter=20, device=dev).fit_transform(Xs)
        dev.finish()
        dev.counter.reset()
        t0 = time.perf_counter()
        SM.Sammon(n_iter=20, device=dev).fit_transform(Xs)
        dev.finish()
        wall = time.perf_counter() - t0
        snap = dev.counter.snapshot()
        print(f"sammon 20 it N=2000 timing={timing}: {wall * 1e3:.2f} ms; "
              + ", ".join(f"{k}: {v['passes']} passes {v['gpu_ms']:.2f} ms"
                          for k, v in snap.items()))
        if not timing:
            pr = cProfile.Profile()
            pr.enable()
            net.step(100)
            dev.finish()
            pr.disable()
            print("## backprop step(100) profile")
            pstats.Stats(pr).sort_stats("tottime").print_stats(12)
            pr = cProfile.Profile()
            pr.enable()
            SM.Sammon(n_iter=20, device=dev).fit_transform(Xs)
            dev.finish()
            pr.disable()
            print("## sammon fit profile")
            pstats.Stats(pr).sort_stats("tottime").print_stats(15)
        dev.release()


if __name__ == "__main__":
    main()
