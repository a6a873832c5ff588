"""Classify scikit-learn's bundled 8x8 digits with a 64-MH-10 sigmoid network trained on the GPU.

    python demos/backprop_digits.py                       # fused schedule, MH = 32
    python demos/backprop_digits.py --schedule paper --steps 300

1347 training images (75 %, stratified), 450 held out; pixels scaled to [0, 1], one sigmoid
output per class (one-hot targets), full-batch gradient descent on the summed squared error.
No download: the data ship with scikit-learn.
"""
from __future__ import annotations

import sys
import time


import _demo  # demos/_demo.py: argument checks, optional packages

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import backprop as bp  # noqa: E402


def parse(argv=None):
    p = _demo.Parser(description=__doc__.split("\n")[0])
    p.add_argument("--hidden", type=_demo.positive_int, default=32,
                   help="hidden neurons MH (default 32)")
    p.add_argument("--steps", type=_demo.positive_int, default=800,
                   help="learning steps, >= 1 (default 800)")
    p.add_argument("--lr", type=_demo.positive_float, default=0.004,
                   help="learning rate of the summed error, > 0 (default 0.004)")
    p.add_argument("--schedule", choices=bp.SCHEDULES, default="fused",
                   help="fused: loops in shaders (default); paper: the 2009 pass structure")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--packed", dest="packed", action="store_true", default=True,
                   help="four training vectors per RGBA texel (default)")
    g.add_argument("--unpacked", dest="packed", action="store_false",
                   help="one value per texel")
    p.add_argument("--seed", type=_demo.nonneg_int, default=0,
                   help="weight initialisation seed (default 0)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    _demo.unbuffered()
    a = parse(argv)
    _demo.need("sklearn", "this demo (the digits data and the train/test split)")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

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
    t_start = time.perf_counter()

    def show(step, loss, net):
        el = time.perf_counter() - t_start
        print(f"  step {step + 1:5d}/{a.steps}  loss {loss:10.4f}  ({el:5.1f} s)")

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
