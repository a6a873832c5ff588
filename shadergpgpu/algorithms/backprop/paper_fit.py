"""``schedule="paper"`` of the estimators: the 2009 paper's network trained by its pass
structure (:class:`~.network.BackpropNet`), full-batch gradient descent on the summed squared
error of logistic units, on one device or data-parallel over a Dask client's workers.

The functions take the estimator as ``self`` (:class:`~.estimator.MLPClassifier` or
:class:`~.estimator.MLPRegressor`) and set its fitted attributes as scikit-learn's fit does.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy import sparse
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_random_state

from ...engine import runners
from ...engine import validation as val
from .network import BackpropNet

PAPER_NEEDS = {"solver": "sgd", "activation": "logistic", "momentum": 0.0, "alpha": 0.0,
               "learning_rate": "constant", "early_stopping": False}


def fit_paper(self, X, y, client):
    bad = [f"{k}={getattr(self, k)!r}" for k, v in PAPER_NEEDS.items()
           if getattr(self, k) != v]
    need = ", ".join(f"{k}={v!r}" for k, v in PAPER_NEEDS.items())
    what = "schedule='paper'" if client is None else "a data-parallel fit (client=)"
    if self.schedule != "paper":
        bad.insert(0, f"schedule={self.schedule!r}")
    if bad:
        raise ValueError(f"{what} trains the 2009 paper's network (logistic units, "
                         "full-batch gradient descent on the summed squared error): it "
                         f"needs schedule='paper', {need} and full batches; got "
                         f"{', '.join(bad)}")
    X, Y = self._validate_input(X, y, False, reset=True)
    if sparse.issparse(X):
        X = X.toarray()
    Y = np.asarray(Y, np.float64).reshape(X.shape[0], -1)
    n = X.shape[0]
    if self.batch_size != "auto" and self.batch_size < n or \
            self.batch_size == "auto" and n > 200:
        raise ValueError(f"batch_size={self.batch_size!r}: schedule='paper' trains on "
                         f"full batches; set batch_size >= n_samples ({n})")
    if Y.min() < 0.0 or Y.max() > 1.0:
        raise ValueError("y: schedule='paper' trains logistic outputs, so targets must "
                         f"lie in [0, 1]; got [{Y.min():g}, {Y.max():g}]")
    hidden = list(np.atleast_1d(self.hidden_layer_sizes).astype(int))
    units = [X.shape[1], *hidden, Y.shape[1]]
    self._random_state = check_random_state(self.random_state)
    self._initialize(Y, units, np.float64)
    self.out_activation_ = "logistic"
    start = [np.vstack([b[None, :], c]) for c, b in zip(self.coefs_, self.intercepts_)]
    if client is not None:
        out = runners.get("fit_mlp")(dict(sizes=units, weights=start,
                                          lr=float(self.learning_rate_init),
                                          steps=int(self.max_iter),
                                          packed=bool(self.packed)), X, Y, client)
        weights, curve, passes, self.n_shards_ = out
    else:
        dev = val.pick_device(self.device, [])
        weights, curve, passes = _paper_steps(self, dev, units, X, Y, start)
    self.coefs_ = [w[1:].copy() for w in weights]
    self.intercepts_ = [w[0].copy() for w in weights]
    self.loss_curve_ = list(curve)
    self.loss_ = curve[-1] if curve else float("nan")
    self.best_loss_ = min(curve) if curve else np.inf
    self.n_iter_ = len(curve)
    self.t_ = n * self.n_iter_
    self.passes_per_step_ = passes
    return self

def _paper_steps(self, dev, units, X, Y, start):
    """``max_iter`` full-batch steps of the paper schedule, the summed squared error read
    after each (scikit-learn's stopping rule on it)."""
    curve, passes = [], {}
    self._no_improvement_count = 0
    best = np.inf
    with BackpropNet(dev, units, X, Y, weights=start, lr=self.learning_rate_init,
                     schedule="paper", packed=self.packed) as net:
        for s in range(int(self.max_iter)):
            before = dict(dev.counter.passes) if s == 0 else None
            net.step()
            if s == 0:
                passes = {k: v - before.get(k, 0) for k, v in dev.counter.passes.items()
                          if v != before.get(k, 0)}
            curve.append(net.loss())
            if self.verbose:
                print("Iteration %d, loss = %.8f" % (s + 1, curve[-1]))
            self._no_improvement_count = (self._no_improvement_count + 1
                                          if curve[-1] > best - self.tol else 0)
            best = min(best, curve[-1])
            if self._no_improvement_count > self.n_iter_no_change:
                break
        else:
            warnings.warn("Stochastic Optimizer: Maximum iterations (%d) reached and the "
                          "optimization hasn't converged yet." % self.max_iter,
                          ConvergenceWarning)
        return net.weights(), curve, passes
