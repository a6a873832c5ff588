"""Lloyd's algorithm in float64 numpy: the reference the device's k-means is tested against.

It follows scikit-learn's ``_kmeans_single_lloyd`` step by step (labels by the nearest centre,
ties to the lower index; empty clusters relocated to the farthest points; strict convergence
when no label changes, else a total squared centre shift within ``tol`` times the mean
variance of the features; a last assignment with the final centres unless the run converged
strictly) but computes distances as sums of squared differences, with no ``|x|^2 - 2 x.c +
|c|^2`` expansion.
"""
from __future__ import annotations

import numpy as np


def squared_distances(X, centers) -> np.ndarray:
    """(n, k) squared distances of the rows of ``X`` to the rows of ``centers`` (float64)."""
    X = np.asarray(X, np.float64)
    C = np.asarray(centers, np.float64)
    return ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)


def assign(X, centers) -> tuple[np.ndarray, np.ndarray]:
    """(labels, squared distance to the nearest centre) for every row of ``X``."""
    D = squared_distances(X, centers)
    labels = np.argmin(D, axis=1)
    return labels, D[np.arange(len(D)), labels]


def inertia(X, centers, labels) -> float:
    """Sum of the squared distances of the points to their centres."""
    X = np.asarray(X, np.float64)
    return float(((X - np.asarray(centers, np.float64)[labels]) ** 2).sum())


def update(X, centers, labels) -> np.ndarray:
    """New centres: the means of the labelled points, empty clusters handled as scikit-learn's
    ``_relocate_empty_clusters_dense`` and ``_average_centers`` do."""
    X = np.asarray(X, np.float64)
    k = len(centers)
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    sums = np.zeros((k, X.shape[1]))
    np.add.at(sums, labels, X)
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        dist = ((X - np.asarray(centers, np.float64)[labels]) ** 2).sum(axis=1)
        if dist.max() > 0:
            far = np.argpartition(dist, -len(empty))[:-len(empty) - 1:-1]
            for e, f in zip(empty, far):
                sums[labels[f]] -= X[f]
                counts[labels[f]] -= 1
                sums[e] = X[f]
                counts[e] = 1
    new = np.array(centers, np.float64)
    full = counts > 0
    new[full] = sums[full] / counts[full][:, None]
    new[~full] = new[np.argmax(counts)]
    return new


def lloyd(X, centers, max_iter: int = 300, tol: float = 1e-4):
    """One run from ``centers``: (labels, inertia, centers, n_iter); ``tol`` relative to the
    mean variance of the features of ``X``, as scikit-learn's ``tol``. The steps and the
    stopping rule are ``_kmeans_single_lloyd``'s: iteration ``i`` assigns and updates, then
    ends the run where no label changed (strict convergence), else where the total squared
    centre shift is at most the tolerance; ``n_iter`` is ``i + 1``; the labels are reassigned
    to the final centres only where the run did not converge strictly."""
    X = np.asarray(X, np.float64)
    mean = X.mean(axis=0)
    Xc = X - mean
    tol_abs = float(np.mean(np.var(X, axis=0)) * tol) if tol else 0.0
    c = np.array(centers, np.float64) - mean
    old = np.full(len(X), -1)
    labels, strict, n_iter = old, False, 0
    for i in range(int(max_iter)):
        labels, _ = assign(Xc, c)
        new = update(Xc, c, labels)
        shift = float(((new - c) ** 2).sum())
        c, n_iter = new, i + 1
        if np.array_equal(labels, old):
            strict = True
            break
        if shift <= tol_abs:
            break
        old = labels
    if not strict:
        labels, _ = assign(Xc, c)
    return labels, inertia(Xc, c, labels), c + mean, n_iter
