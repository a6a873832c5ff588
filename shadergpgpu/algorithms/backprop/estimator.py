"""The scikit-learn estimators: :class:`MLP` (regressor) and :class:`MLPClassifier`.

Training runs a :class:`BackpropNet` on one device; with a Dask ``client`` the estimators ask
the runner registry (:mod:`shadergpgpu.engine.runners`) for the data-parallel driver, so this
layer never imports the distributed one.
"""
from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ...engine import runners
from ...engine import validation as val
from .adapt import limits
from .checks import check_net_fits
from .network import BackpropNet, device_forward
from .plans import SCHEDULES


class _BaseMLP(BaseEstimator):
    """Shared by :class:`MLP` and :class:`MLPClassifier` (parameters, training loop)."""

    def __init__(self, hidden=(4,), schedule="paper", packed=True, lr=0.5, steps=1000, seed=0,
                 loss_every=10, device=None, callback=None):
        self.hidden = hidden
        self.schedule = schedule
        self.packed = packed
        self.lr = lr
        self.steps = steps
        self.seed = seed
        self.loss_every = loss_every
        self.device = device
        self.callback = callback

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags

    def _hidden(self):
        h = self.hidden
        if isinstance(h, (int, np.integer)) and not isinstance(h, (bool, np.bool_)):
            h = (h,)
        try:
            h = tuple(h)
        except TypeError:
            raise TypeError(f"hidden must be a tuple of layer widths, got {h!r}") from None
        return tuple(val.integer(w, "hidden", lo=1) for w in h)

    def _check_params(self):
        hidden = self._hidden()
        val.choice(self.schedule, "schedule", SCHEDULES)
        val.real(self.lr, "lr", lo=0.0, closed="neither")
        val.integer(self.steps, "steps", lo=0)
        val.integer(self.loss_every, "loss_every", lo=0)
        if self.callback is not None and not callable(self.callback):
            raise TypeError(f"callback must be callable, got {self.callback!r}")
        return hidden

    def _check_sizes(self, n_samples, n_features, n_outputs, dev=None, client=None,
                     outputs="outputs"):
        """Refuse, from the shapes alone, a network whose device arrays would not fit (before
        any weight, target or texture is made); the error names hidden[i], X or y. With a
        Dask ``client`` the weights are checked against the workers' smallest texture limit
        (each worker's net checks its shard of the training vectors itself)."""
        hidden = self._check_params()
        sizes = [int(n_features), *hidden, int(n_outputs)]
        names = {0: f"X (its {n_features} features)", -1: f"X (its {n_samples} samples)",
                 len(sizes) - 1: f"y (its {n_outputs} {outputs})"}
        names.update({m + 1: f"hidden[{m}] = {w}" for m, w in enumerate(hidden)})
        if client is not None:
            mx = min(int(i["max_texture_size"]) for i in runners.get("device_info")(client))
            lim = limits(max_texture_size=mx)
            names[-1] = f"X (its {n_samples} samples, split over the workers)"
            n_samples = 1
        else:
            lim = limits(device=dev if dev is not None else val.pick_device(self.device, []))
        check_net_fits(lim, sizes, int(n_samples), bool(self.packed), self.schedule, names)

    def _train(self, X, T, client=None):
        """Train on X (N, MI) and targets T (N, MO) in [0, 1]; sets the fitted attributes.
        With a Dask ``client``: data-parallel over its workers (shadergpgpu.distributed)."""
        if client is not None:
            self._check_sizes(X.shape[0], X.shape[1], T.shape[1], client=client)
            return runners.get("fit_mlp")(self, X, T, client)
        hidden = self._check_params()
        sizes = [X.shape[1], *hidden, T.shape[1]]
        dev = val.pick_device(self.device, [])
        self._check_sizes(X.shape[0], X.shape[1], T.shape[1], dev=dev)
        loss_curve, loss_steps = [], []
        passes = {}
        steps, every = int(self.steps), int(self.loss_every)
        with BackpropNet(dev, sizes, X, T, lr=self.lr, schedule=self.schedule,
                         packed=self.packed, seed=self.seed) as net:
            before = dict(dev.counter.passes)
            done = 0
            for s in range(steps):
                net.step()
                done = s + 1
                if s == 0:
                    passes = {k: v - before.get(k, 0) for k, v in dev.counter.passes.items()
                              if v != before.get(k, 0)}
                if (every and s % every == 0) or s == steps - 1:
                    loss = net.loss()
                    loss_curve.append(loss)
                    loss_steps.append(s)
                    if self.callback is not None and self.callback(s, loss, net) is False:
                        break
            weights = net.weights()
        return self._set_fitted(weights, sizes, loss_curve, loss_steps, done, passes)

    def _set_fitted(self, weights, sizes, loss_curve, loss_steps, done, passes):
        """The fitted attributes (one device or several: ``distributed``)."""
        self.weights_ = weights
        self.sizes_ = sizes
        self.n_outputs_ = sizes[-1]
        self.coefs_ = [w[1:] for w in weights]
        self.intercepts_ = [w[0] for w in weights]
        self.loss_curve_ = loss_curve
        self.loss_steps_ = loss_steps
        self.loss_ = loss_curve[-1] if loss_curve else float("nan")
        self.n_iter_ = done  # steps actually run (a callback may stop early)
        self.passes_per_step_ = passes
        return self

    def _forward(self, X) -> np.ndarray:
        check_is_fitted(self, "weights_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        dev = val.pick_device(self.device, [])
        return device_forward(dev, self.weights_, X, packed=bool(self.packed))


class MLP(RegressorMixin, _BaseMLP):
    """Multilayer perceptron regressor trained by backpropagation on the device.

    A scikit-learn estimator (``get_params``/``set_params``, ``clone``, pipelines, grid search).
    The output units are sigmoids: targets within [0, 1] are learned as given; other targets are
    mapped per output column into [0, 1] by their training minimum and range (``y_min_``,
    ``y_range_``) and predictions are mapped back.

    Parameters
    ----------
    hidden : tuple of hidden-layer widths, e.g. ``(64,)``.
    schedule : "paper" (the 2009 pass structure) or "fused" (loops inside shaders).
    packed : four training vectors per RGBA texel.
    lr : learning rate eta of the summed squared error (scale it with 1/N for large N).
    steps : learning steps (full-batch) per ``fit``.
    seed : weight initialisation seed.
    loss_every : read the loss back every this many steps (0: only at the end).
    device : a :class:`shadergpgpu.Device`; None for the process-wide one.
    callback : called as ``callback(step, loss, net)`` whenever the loss is read back; returning
        False stops training.

    Fitted attributes: ``weights_`` (list of (L_m + 1, L_{m+1}) matrices, threshold row 0),
    ``coefs_`` / ``intercepts_`` (scikit-learn's split), ``loss_curve_`` with ``loss_steps_``,
    ``loss_``, ``n_iter_``, ``n_features_in_``, ``n_outputs_``, ``passes_per_step_`` (measured,
    per phase), ``y_min_``, ``y_range_``.

    Sizes: ``fit`` checks every device array of the network (:func:`net_arrays`) against the
    device's texture limit from the shapes alone, before any weight, target or texture is
    made; a layer too wide (or too many samples, outputs or classes) is refused at once with
    a ValueError naming ``hidden[i]``, ``X`` or ``y``.

    Accuracy (u = 2^-24; first order in u). ``predict`` (one float32 forward pass of the
    float32 weights; X rounded to float32): with a = X for the input layer and, per layer,
    z_j = w_0j + sum_i w_ij a_i summed in float32 over its L_m + 1 terms, then
    a_j = 1 / (1 + exp(-z_j)),::

        |dz_j| <= (L_m + 3) u (|w_0j| + sum_i |w_ij| |a_i|) + sum_i |w_ij| |da_i|
        |da_j| <= a_j (1 - a_j) |dz_j| + 4 u          (da = u |X| for the inputs)

    against float64 (:func:`numpy_forward`) of the same weights; the last layer's da bounds
    the outputs (times ``y_range_`` for the regressor's mapped targets). Saturated units
    (|z| > ~88) give 0 or 1 exactly, within the bound. ``fit``: one full-batch step changes
    weight w_ij by -lr g_ij, g_ij = sum_n delta_nj a_ni summed in float32 over the N training
    vectors (by blended passes or per-chunk partial sums, in another order than float64),
    so against :func:`numpy_step` from the same weights::

        |dw_ij| <= u |w_ij| + lr ((N + 4) u sum_n |delta_nj| |a_ni|
                                  + sum_n (|d delta_nj| |a_ni| + |delta_nj| |da_ni|))

    with da from the forward bound and d delta from it by the output error
    (y - t) y (1 - y) (|d delta| <= 1.25 |dy| + 4 u |delta|) and the backpropagation
    delta_i = a_i (1 - a_i) sum_j w_ij delta_j (the dz rule above with delta for a). Over many
    steps these per-step errors are carried on by the descent itself: there is no a-priori
    bound for the whole trajectory (tests compare steps with float64 at 1e-5 relative).
    ``tests/test_algorithm_guards.py`` checks both bounds on a wide, saturating network.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X, y, client=None):
        self._check_params()
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        self._y_1d = y.ndim == 1
        Y = y.reshape(len(y), -1).astype(np.float64)
        if Y.min() >= 0.0 and Y.max() <= 1.0:
            lo, span = np.zeros(Y.shape[1]), np.ones(Y.shape[1])
        else:
            lo = Y.min(axis=0)
            span = Y.max(axis=0) - lo
            span[span == 0] = 1.0
        self.y_min_, self.y_range_ = lo, span
        return self._train(X, (Y - lo) / span, client)

    def predict(self, X) -> np.ndarray:
        """Network outputs (mapped back to the targets' range): (n_samples,) if fitted on 1-D y,
        else (n_samples, n_outputs)."""
        out = self._forward(X) * self.y_range_ + self.y_min_
        return out[:, 0] if self._y_1d else out


class MLPClassifier(ClassifierMixin, _BaseMLP):
    """Class labels in, class labels out: one sigmoid output per class (one-hot targets).

    Same parameters and fitted attributes as :class:`MLP`, plus ``classes_``. ``predict_proba``
    gives the sigmoid outputs normalised to sum to 1 per sample.
    """

    def fit(self, X, y, client=None):
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("y: needs at least two classes to train a classifier, got 1 class "
                             f"({self.classes_[0]!r})")
        # one output per class: the sizes checked before the one-hot targets are made
        self._check_sizes(X.shape[0], X.shape[1], len(self.classes_), client=client,
                          outputs="classes")
        T = np.zeros((len(y), len(self.classes_)))
        T[np.arange(len(y)), idx] = 1.0
        return self._train(X, T, client)

    def predict_proba(self, X) -> np.ndarray:
        """Per-class scores (n_samples, n_classes): sigmoid outputs normalised per sample."""
        out = np.maximum(self._forward(X), 1e-12)
        return out / out.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        out = self._forward(X)
        return self.classes_[np.argmax(out, axis=1)]
