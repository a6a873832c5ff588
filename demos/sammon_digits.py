"""Sammon mapping of scikit-learn's digits (1,797 images, 64-D) to 2-D on the GPU.

    python demos/sammon_digits.py [--out sammon_digits.png] [--no-reference]

Fits :class:`shadergpgpu.algorithms.sammon.Sammon` with its defaults (PCA start, adaptive step), writes a
scatter plot coloured by digit (matplotlib; pillow when matplotlib is missing) and prints the
final stress beside a float64 numpy/scipy reference converged from the same start (L-BFGS on
the same stress; about half a minute on two CPU cores).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms.sammon import Sammon, pca_init  # noqa: E402

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]


def reference_stress(X, Y0):
    """Float64 Sammon stress minimised by L-BFGS (scipy) from Y0: (stress, Y)."""
    from scipy.optimize import minimize
    from scipy.spatial.distance import pdist, squareform
    Dn = squareform(pdist(X))
    mask = Dn > 0
    safe = np.where(mask, Dn, 1.0)
    c = Dn.sum()

    def f(v):
        Y = v.reshape(-1, 2)
        Dm = squareform(pdist(Y))
        E = np.where(mask, (Dn - Dm) ** 2 / safe, 0.0).sum() / c
        W = np.where(mask, (Dn - Dm) / (safe * np.maximum(Dm, 1e-300)), 0.0)
        G = W.sum(1)[:, None] * Y - W @ Y
        return E, (-4.0 / c * G).ravel()
    r = minimize(f, Y0.ravel(), jac=True, method="L-BFGS-B",
                 options={"maxiter": 5000, "ftol": 1e-14, "gtol": 1e-11})
    return float(r.fun), r.x.reshape(-1, 2)


def plot(path, Y, labels, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return plot_pillow(path, Y, labels)
    fig, ax = plt.subplots(figsize=(7, 7), dpi=110)
    for d in range(10):
        sel = labels == d
        ax.scatter(Y[sel, 0], Y[sel, 1], s=6, c=COLORS[d], label=str(d))
    ax.set_title(title)
    ax.set_aspect("equal")
    ax.legend(markerscale=3, fontsize=8, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_pillow(path, Y, labels, size=700):
    from PIL import Image, ImageDraw
    img = Image.new("RGB", (size, size), "white")
    draw = ImageDraw.Draw(img)
    lo, hi = Y.min(0), Y.max(0)
    span = float((hi - lo).max()) or 1.0
    for (x, y), d in zip((Y - lo) / span * (size - 40) + 20, labels):
        c = COLORS[int(d)]
        draw.ellipse([x - 2, size - y - 2, x + 2, size - y + 2], fill=c)
    img.save(path)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="sammon_digits.png")
    p.add_argument("--no-reference", action="store_true", help="skip the scipy reference")
    a = p.parse_args(argv)
    from sklearn.datasets import load_digits
    digits = load_digits()
    X, labels = digits.data.astype(np.float64), digits.target
    dev = sg.Device()
    t0 = time.perf_counter()
    s = Sammon(device=dev).fit(X)
    t_gpu = time.perf_counter() - t0
    print(f"device: {dev.caps.renderer}")
    print(f"GPU Sammon: stress {s.stress_history_[0]:.5f} (PCA start) -> {s.stress_:.5f} in "
          f"{s.n_iter_} update passes ({s.n_rejected_} rejected), {t_gpu:.2f} s, "
          f"distances cached: {s.cached_}")
    if not a.no_reference:
        t0 = time.perf_counter()
        e_ref, _ = reference_stress(X, pca_init(X, 2))
        print(f"float64 reference (scipy L-BFGS, same start): stress {e_ref:.5f} in "
              f"{time.perf_counter() - t0:.1f} s; GPU / reference = {s.stress_ / e_ref:.4f}")
    plot(a.out, s.embedding_, labels, f"Sammon mapping of digits (stress {s.stress_:.4f})")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
