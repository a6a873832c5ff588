"""The float64 numpy reference of the same equations (forward, one full-batch step) and a CPU
trainer on it (:class:`NumpyMLP`, the reports' CPU column)."""
from __future__ import annotations

import numpy as np

from .checks import check_sizes, init_weights


# ---- the float64 numpy reference of the same equations ------------------------------------------
def _sigmoid(x):
    with np.errstate(over="ignore"):        # exp(-x) = inf for x << 0: sigmoid 0, as wanted
        return 1.0 / (1.0 + np.exp(-x))


def numpy_forward(weights, X):
    """Activations of every layer (without the constant row) for inputs X (N x MI)."""
    acts = [np.asarray(X, dtype=np.float64)]
    for W in weights:
        acts.append(_sigmoid(W[0] + acts[-1] @ W[1:]))
    return acts


def numpy_step(weights, X, T, lr):
    """One full-batch learning step in float64; returns (new weights, loss before the step)."""
    acts = numpy_forward(weights, X)
    y = acts[-1]
    loss = 0.5 * float(np.sum((y - T) ** 2))
    d = (y - T) * y * (1.0 - y)
    new = [None] * len(weights)
    for m in range(len(weights) - 1, -1, -1):
        a = acts[m]
        grad = np.vstack([d.sum(axis=0, keepdims=True), a.T @ d])
        if m > 0:
            d = (d @ weights[m][1:].T) * a * (1.0 - a)
        new[m] = weights[m] - lr * grad
    return new, loss


class NumpyMLP:
    """The same algorithm on the CPU (float64 or float32 numpy), for the reports' CPU column."""

    def __init__(self, sizes, X, T, lr, weights=None, seed=0, dtype=np.float64):
        self.sizes = check_sizes(sizes)
        self.dtype = dtype
        self.X = np.asarray(X, dtype=dtype)
        self.T = np.asarray(T, dtype=dtype)
        self.lr = dtype(lr)
        ws = weights if weights is not None else init_weights(self.sizes, seed)
        self.weights = [np.asarray(w, dtype=dtype).copy() for w in ws]

    def step(self, n=1):
        for _ in range(n):
            self.weights, self.last_loss = numpy_step(self.weights, self.X, self.T, self.lr)
