"""Train an RBF support vector classifier on the digits by SMO on the GPU, next to scikit-learn.

    python demos/svm_digits.py [--C 10] [--gamma 0.001] [--working-set second-order]

Ten classes: 45 one-vs-one SMO problems, each iteration's kernel rows, gradient update and
arg-max/arg-min selection running as fragment-shader passes. Prints accuracy, support
vectors, iterations, render passes and time for both trainers.
"""
import argparse
import sys
import time

import numpy as np

import _demo  # demos/_demo.py: argument checks, optional packages

import shadergpgpu as sg  # noqa: E402


def gamma_value(text):
    """'scale', 'auto' or a positive number."""
    if text in ("scale", "auto"):
        return text
    try:
        return _demo.positive_float(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected 'scale', 'auto' or a positive number, got {text!r}") from None


def parse(argv=None):
    ap = _demo.Parser(description=__doc__.splitlines()[0])
    ap.add_argument("--C", type=_demo.positive_float, default=10.0,
                    help="soft-margin penalty C, > 0 (default 10)")
    ap.add_argument("--gamma", type=gamma_value, default=0.001,
                    help="RBF kernel width: 'scale', 'auto' or a positive number "
                         "(default 0.001)")
    ap.add_argument("--working-set", default="second-order",
                    choices=["second-order", "first-order"],
                    help="SMO working-set selection (default second-order, as libsvm)")
    return ap.parse_args(argv)


def main(argv=None):
    _demo.unbuffered()
    args = parse(argv)
    gamma = args.gamma
    _demo.need("sklearn", "this demo (the digits data and the reference SVC)")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.svm import SVC as SkSVC

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    dev = sg.Device()
    print(f"device: {dev.caps.renderer}")
    print(f"digits: {len(Xtr)} training / {len(Xte)} test images, 64 features, 10 classes")

    print("training 45 one-vs-one SMO problems on the GPU ...")
    ours = sg.SVC(C=args.C, gamma=gamma, working_set=args.working_set, device=dev)
    ours.fit(Xtr, ytr)
    print("training scikit-learn's SVC on the CPU ...")
    t0 = time.perf_counter()
    ref = SkSVC(C=args.C, gamma=gamma).fit(Xtr, ytr)
    t_sk = time.perf_counter() - t0
    agree = np.mean(ours.predict(Xte) == ref.predict(Xte))
    a, b = set(ours.support_.tolist()), set(ref.support_.tolist())
    rows = [("test accuracy", f"{ours.score(Xte, yte):.4f}", f"{ref.score(Xte, yte):.4f}"),
            ("support vectors", len(ours.support_), len(ref.support_)),
            ("SMO iterations (45 problems)", int(ours.n_iter_.sum()), int(ref.n_iter_.sum())),
            ("render passes", ours.n_passes_, "-"),
            ("training time (s)", f"{ours.fit_time_:.2f}", f"{t_sk:.2f}")]
    print(f"\n{'':32} {'shadergpgpu':>14} {'scikit-learn':>14}")
    for name, u, v in rows:
        print(f"{name:32} {u!s:>14} {v!s:>14}")
    print(f"\nheld-out predictions agree on {agree:.2%} of images; support-vector IoU "
          f"{len(a & b) / len(a | b):.3f}; max intercept difference "
          f"{np.abs(ours.intercept_ - ref.intercept_).max():.2e}")


if __name__ == "__main__":
    sys.exit(main())
