"""Sammon mapping of scikit-learn's digits (1,797 images, 64-D) to 2-D on the GPU.

    python demos/sammon_digits.py [--out out/sammon_digits.png] [--no-reference]

Fits :class:`shadergpgpu.Sammon` with its defaults (PCA start, adaptive step), writes a
scatter plot coloured by digit (matplotlib; pillow when matplotlib is missing) and prints the
final stress beside a float64 numpy/scipy reference converged from the same start (L-BFGS on
the same stress; about half a minute on two CPU cores).
"""
from __future__ import annotations

import sys
import time

import numpy as np

import _demo  # demos/_demo.py: argument checks, output folder, optional packages

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms.sammon import pca_init  # noqa: E402

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]


def reference_stress(X, Y0, report_every=250):
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
    t0 = time.perf_counter()
    it = [0]

    def progress(_xk):
        it[0] += 1
        if report_every and it[0] % report_every == 0:
            print(f"  reference: {it[0]} L-BFGS iterations, {time.perf_counter() - t0:.1f} s")

    r = minimize(f, Y0.ravel(), jac=True, method="L-BFGS-B", callback=progress,
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


def parse(argv=None):
    p = _demo.Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=None,
                   help="scatter plot to write; its suffix picks the format (default: "
                        "out/sammon_digits.png)")
    p.add_argument("--iters", type=_demo.positive_int, default=300,
                   help="GPU update passes at most (default 300)")
    p.add_argument("--no-reference", action="store_true",
                   help="skip the float64 scipy reference (about half a minute on two cores)")
    a = p.parse_args(argv)
    suffixes = (".png", ".pdf", ".svg", ".jpg", ".jpeg") if _demo.have("matplotlib") else \
        _demo.image_suffixes()
    a.out = _demo.output_path(p, a.out, "sammon_digits.png", suffixes)
    if not a.no_reference:
        _demo.need("scipy", "the float64 reference (or pass --no-reference)")
    if not _demo.have("matplotlib"):
        print("note: matplotlib is not installed; drawing the plot with pillow "
              "(pip install 'shadergpgpu[report]' for the full plot)")
    return a


def main(argv=None) -> int:
    _demo.unbuffered()
    a = parse(argv)
    _demo.need("sklearn", "this demo (the digits data)")
    from sklearn.datasets import load_digits
    digits = load_digits()
    X, labels = digits.data.astype(np.float64), digits.target
    dev = sg.Device()
    print(f"device: {dev.caps.renderer}")
    print(f"fitting a Sammon map of {len(X)} digits (64-D -> 2-D) on the GPU, at most "
          f"{a.iters} update passes ...")
    t0 = time.perf_counter()
    s = sg.Sammon(n_iter=a.iters, device=dev).fit(X)
    t_gpu = time.perf_counter() - t0
    print(f"GPU Sammon: stress {s.stress_history_[0]:.5f} (PCA start) -> {s.stress_:.5f} in "
          f"{s.n_iter_} update passes ({s.n_rejected_} rejected), {t_gpu:.2f} s, "
          f"distances cached: {s.cached_}")
    if not a.no_reference:
        print("float64 reference (scipy L-BFGS from the same start) ...")
        t0 = time.perf_counter()
        e_ref, _ = reference_stress(X, pca_init(X, 2))
        print(f"float64 reference: stress {e_ref:.5f} in {time.perf_counter() - t0:.1f} s; "
              f"GPU / reference = {s.stress_ / e_ref:.4f}")
    plot(a.out, s.embedding_, labels, f"Sammon mapping of digits (stress {s.stress_:.4f})")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
