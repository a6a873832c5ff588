"""Classify scikit-learn's bundled 8x8 digits with a 64-MH-10 sigmoid network trained on the GPU.

    python demos/backprop_digits.py                       # fused schedule, MH = 32
    python demos/backprop_digits.py --schedule paper --steps 300

1347 training images (75 %, stratified), 450 held out; pixels scaled to [0, 1], one sigmoid
output per class (one-hot targets), full-batch gradient descent on the summed squared error.
No download: the data ship with scikit-learn.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import shadergpgpu as sg
from shadergpgpu.algorithms import backprop as bp


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hidden", type=int, default=32, help="hidden neurons MH (default 32)")
    p.add_argument("--steps", type=int, default=800, help="learning steps (default 800)")
    p.add_argument("--lr", type=float, default=0.004,
                   help="learning rate of the summed error (default 0.004)")
    p.add_argument("--schedule", choices=bp.SCHEDULES, default="fused")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--packed", dest="packed", action="store_true", default=True)
    g.add_argument("--unpacked", dest="packed", action="store_false")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    try:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
    except ImportError:
        print("error: this demo needs scikit-learn (pip install scikit-learn)", file=sys.stderr)
        return 2
    d = load_digits()
    X = d.data / 16.0
    Xtr, Xte, ytr, yte = train_test_split(X, d.target, test_size=0.25, random_state=0,
                                          stratify=d.target)
    dev = sg.Device()
    print(f"device: {dev.caps.renderer}")
    print(f"network 64-{a.hidden}-10, {len(Xtr)} training / {len(Xte)} held-out images, "
          f"schedule {a.schedule}, {'packed' if a.packed else 'unpacked'}, lr {a.lr:g}, "
          f"{a.steps} steps")
    every = max(1, a.steps // 8)

    def show(step, loss, net):
        print(f"  step {step + 1:5d}  loss {loss:10.4f}")

    model = bp.MLPClassifier(hidden=(a.hidden,), schedule=a.schedule, packed=a.packed,
                             lr=a.lr, steps=a.steps, seed=a.seed, loss_every=every,
                             device=dev, callback=show)
    t0 = time.perf_counter()
    model.fit(Xtr, ytr)
    dt = time.perf_counter() - t0
    acc_tr = model.score(Xtr, ytr)
    acc = model.score(Xte, yte)
    print(f"trained in {dt:.2f} s ({dt / a.steps * 1e3:.2f} ms per step); passes per step: "
          f"{sum(model.passes_per_step_.values())} {model.passes_per_step_}")
    print(f"training accuracy {acc_tr:.4f}")
    print(f"held-out accuracy {acc:.4f}  ({'>= 0.95 ok' if acc >= 0.95 else 'below 0.95'})")
    return 0 if acc >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
