"""The data's units on the host: X centred and scaled (:func:`data_scale`,
:func:`normalized`: the fit is scale invariant, and refuses what a float32 embedding cannot
hold) and the PCA start (:func:`pca_init`)."""
from __future__ import annotations

import math

import numpy as np

F32_MAX = float(np.finfo(np.float32).max)
#: smallest scale_ accepted: the float32 embedding's coordinates keep an absolute resolution of
#: 2^-150 (subnormals), below 1e-9 of this
SCALE_MIN = 2.0 ** -120


def data_scale(X) -> tuple[np.ndarray, float, float]:
    """(X centred, its RMS distance to the mean, its largest distance to the mean), in float64
    without overflow or underflow for any finite X (the sums are taken of X divided by its
    largest magnitude)."""
    Xc = np.asarray(X, dtype=np.float64)
    Xc = Xc - Xc.mean(axis=0)
    big = float(np.abs(Xc).max()) if Xc.size else 0.0
    if not big > 0:
        return Xc, 0.0, 0.0
    sq = ((Xc / big) ** 2).sum(axis=1)
    return Xc, big * math.sqrt(float(sq.mean())), big * math.sqrt(float(sq.max()))


def normalized(X) -> tuple[np.ndarray, float]:
    """X centred and divided by its RMS distance to the mean ``scale``, as float32 (what the
    device fits), and ``scale``; the division is in float64, so X * s gives the same float32
    array for any s (to one float64 rounding: the fits then agree to float32 rounding, where
    a power-of-two scale of float32(X) would differ by an ulp of the data, which a fit of
    many steps may amplify to 1e-3). ValueError naming X where all samples coincide, or
    where the embedding (float32, in the units of X) could not hold X's scale."""
    Xc, scale, far = data_scale(X)
    if not scale > 0:
        raise ValueError("X: all samples coincide (every source distance is 0); the Sammon "
                         "stress is undefined")
    if 4.0 * far > F32_MAX:
        raise ValueError(f"X: samples lie up to {far:.3g} from their mean: the float32 "
                         f"embedding (in the units of X) cannot hold distances of that size "
                         f"(float32's range is +-{F32_MAX:.4g}); scale X down")
    if scale < SCALE_MIN:
        raise ValueError(f"X: the samples' RMS distance to their mean is {scale:.3g}, below "
                         f"{SCALE_MIN:.3g}: the float32 embedding (in the units of X) would "
                         "lose its precision to float32's subnormal range; scale X up")
    return (Xc / scale).astype(np.float32), scale


def pca_init(X: np.ndarray, n_components: int) -> np.ndarray:
    """Projection of the centred data on its first principal axes (float64, host)."""
    Xc = np.asarray(X, dtype=np.float64)
    Xc = Xc - Xc.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    Y = Xc @ vt[:n_components].T
    if Y.shape[1] < n_components:  # fewer source dimensions than components: pad with zeros
        Y = np.hstack([Y, np.zeros((Y.shape[0], n_components - Y.shape[1]))])
    return Y

