"""Where the fused step's device time goes beyond its passes (issue 23): at 2-1024-1,
N = 16,384 on an H200 the passes' own timed device time sums to ~0.73 ms, a whole step to
1.34-1.62 ms. One timer query around each of: a whole step; a step without its block copies
(the weights' uniform-block mirrors not refreshed: timing only, the numbers go stale); the
copies alone; the step's phases one at a time (each phase's passes of one step, repeated).

    python benchmarks/diag/fused_gap.py [--sizes 2,1024,1] [--n 16384]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import backprop as bp  # noqa: E402


def timed(dev, fn, reps=5, inner=10):
    fn()
    dev.finish()
    best_d = best_w = float("inf")
    for _ in range(reps):
        q = dev.ctx.query(time=True)
        dev.finish()
        t0 = time.perf_counter()
        with q:
            for _ in range(inner):
                fn()
        dev.finish()
        best_w = min(best_w, (time.perf_counter() - t0) / inner)
        best_d = min(best_d, q.elapsed * 1e-9 / inner)
    return best_d * 1e3, best_w * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2,1024,1")
    ap.add_argument("--n", type=int, default=16384)
    a = ap.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    dev = sg.Device()
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (a.n, sizes[0]))
    T = rng.uniform(0, 1, (a.n, sizes[-1]))
    net = bp.BackpropNet(dev, sizes, X, T, lr=0.5 / a.n, schedule="fused")
    print(f"# {dev.caps.renderer}: fused {a.sizes} N={a.n}; ms per step (device, wall)")
    rows = [("whole step", timed(dev, lambda: net.step(1)))]
    refresh = net._refresh_copies
    rows.append(("copies alone", timed(dev, refresh)))
    net._refresh_copies = lambda: None
    rows.append(("step without copies", timed(dev, lambda: net.step(1))))
    for label, items in net._steps[net.parity]:
        def phase(items=items):
            for p, name, values in items:
                if name is None:
                    p.run()
                else:
                    p.repeat(name, values)
        rows.append((f"phase {label} alone", timed(dev, phase)))
    net._refresh_copies = refresh
    for name, (d, w) in rows:
        print(f"{name:<28} device {d:8.3f}  wall {w:8.3f}")
    net.release()


if __name__ == "__main__":
    main()
