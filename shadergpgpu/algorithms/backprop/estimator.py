"""The scikit-learn estimators :class:`MLPClassifier` and :class:`MLPRegressor` (alias
:class:`MLP`), trained on the device.

They are scikit-learn's own ``MLPClassifier`` / ``MLPRegressor`` with the training and the
forward pass moved to render passes: the parameters (names, defaults, constraints), the input
checks, the label encoding, the weight initialisation, the solvers' schedules, the stopping
rule, the warnings and the fitted attributes are scikit-learn's, so code written for
``sklearn.neural_network`` runs by changing the import. Two schedules (``schedule=``):

* ``"fused"`` (default): scikit-learn's stochastic training, every batch on the device
  (:mod:`.minibatch`): softmax / logistic outputs with log-loss for classifiers, identity
  outputs with squared error for regressors, mini-batches gathered from the resident data,
  SGD (with momentum or Nesterov's) and Adam with their state in textures. The host reads the
  epoch's loss (and, with early stopping, the validation score) once per epoch.
* ``"paper"``: the network of Takizawa et al. (2009) with its pass structure
  (:class:`~.network.BackpropNet`): logistic units everywhere, full-batch gradient descent on
  the summed squared error ``E = 1/2 sum |y - t|^2`` with rate ``learning_rate_init`` (eta),
  ``max_iter`` steps; with a Dask ``client`` the steps run data-parallel over its workers.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
from scipy import sparse
from sklearn.base import is_classifier
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier as _SkClassifier
from sklearn.neural_network import MLPRegressor as _SkRegressor
from sklearn.neural_network._stochastic_optimizers import AdamOptimizer, SGDOptimizer
from sklearn.utils import gen_batches, shuffle
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import validate_data

from ...engine import validation as val
from . import minibatch as mb
from .paper_fit import fit_paper

SCHEDULES = ("fused", "paper")
_EXTRA_CONSTRAINTS = {"schedule": [StrOptions(set(SCHEDULES))], "packed": ["boolean"],
                      "device": "no_validation"}


class _DeviceMLP:
    """What the two estimators share: the device training and forward pass."""

    # ---- fit -------------------------------------------------------------------------------
    def _device_fit(self, super_fit, X, y, sample_weight, client):
        if client is not None or self.schedule == "paper":
            self._validate_params()
            if sample_weight is not None:
                raise ValueError("sample_weight: the paper schedule trains unweighted")
            return self._fit_paper(X, y, client)
        if self.solver == "lbfgs":
            self._validate_params()
            raise ValueError("solver='lbfgs' is not available on the device: use "
                             "solver='adam' (the default) or solver='sgd'")
        return super_fit(X, y, sample_weight=sample_weight)

    def _fit_stochastic(self, X, y, sample_weight, activations, deltas, coef_grads,
                        intercept_grads, layer_units, incremental):
        """scikit-learn's stochastic training loop, each batch in render passes."""
        if sparse.issparse(X):
            X = X.toarray()
        params = self.coefs_ + self.intercepts_
        if not incremental or not hasattr(self, "_optimizer"):
            if self.solver == "sgd":
                self._optimizer = SGDOptimizer(params, self.learning_rate_init,
                                               self.learning_rate, self.momentum,
                                               self.nesterovs_momentum, self.power_t)
            else:
                self._optimizer = AdamOptimizer(params, self.learning_rate_init, self.beta_1,
                                                self.beta_2, self.epsilon)
        if self.early_stopping and incremental:
            raise ValueError("partial_fit does not support early_stopping=True")
        early_stopping = self.early_stopping
        X_val = Y_val = sw_val = None
        if early_stopping:
            stratify = y if is_classifier(self) and self.n_outputs_ == 1 else None
            arrays = (X, y) if sample_weight is None else (X, y, sample_weight)
            parts = train_test_split(*arrays, random_state=self._random_state,
                                     test_size=self.validation_fraction, stratify=stratify)
            X, X_val, y, Y_val = parts[:4]
            if sample_weight is not None:
                sample_weight, sw_val = parts[4:]
            if X_val.shape[0] < 2:
                raise ValueError("The validation set is too small. Increase "
                                 "'validation_fraction' or the size of your dataset.")
        n_samples = X.shape[0]
        if self.batch_size == "auto":
            batch_size = min(200, n_samples)
        else:
            if self.batch_size > n_samples:
                warnings.warn("Got `batch_size` less than 1 or larger than sample size. It is "
                              "going to be clipped")
            batch_size = int(np.clip(self.batch_size, 1, n_samples))
        dev = val.pick_device(self.device, [])
        mb.check_fits(dev, layer_units, n_samples, batch_size,
                      self._size_names(layer_units, n_samples))
        opt = self._optimizer
        K = len(self.coefs_)
        weights = [mb.pack_layer(c, b) for c, b in zip(self.coefs_, self.intercepts_)]
        if self.solver == "adam":
            st = [opt.ms, opt.vs]
        else:
            st = [opt.velocities]
        state = [[mb.pack_layer(s[m], s[K + m]) for m in range(K)] for s in st]
        hyper = dict(alpha=self.alpha, momentum=self.momentum,
                     nesterovs_momentum=self.nesterovs_momentum, beta_1=self.beta_1,
                     beta_2=self.beta_2, epsilon=self.epsilon)
        sample_idx = np.arange(n_samples, dtype=int)
        with mb.MinibatchTrainer(dev, layer_units, self.activation, self.out_activation_,
                                 self.solver, hyper, X, y.reshape(n_samples, -1), batch_size,
                                 weights, state, sample_weight) as tr:
            if early_stopping:
                nv = len(X_val)
                swv = np.ones(nv) if sw_val is None else np.asarray(sw_val, np.float64)
                val_set = (tr._keep(dev.array(np.asarray(X_val, np.float32))),
                           tr._keep(dev.array(np.asarray(Y_val, np.float32).reshape(nv, -1))),
                           tr._keep(dev.array(swv.reshape(1, nv), packed=False)))
                best = tr.snapshot_arrays()
                tr.snapshot(best)
                self._val_weights = swv
                self._val_sst = self._val_total_squares(Y_val, swv)
            tr.set_order(sample_idx)
            started = time.perf_counter()
            try:
                self.n_iter_ = 0
                for _ in range(self.max_iter):
                    if self.shuffle:
                        sample_idx = shuffle(sample_idx, random_state=self._random_state)
                        tr.set_order(sample_idx)
                    for bs in gen_batches(n_samples, batch_size):
                        tr.step(bs.start, bs.stop - bs.start, self._step_rate(opt),
                                bs.start == 0)
                    self.n_iter_ += 1
                    data, sq = tr.epoch_sums()
                    self.loss_ = (data + 0.5 * self.alpha * sq) / n_samples
                    self.t_ += n_samples
                    self.loss_curve_.append(self.loss_)
                    if self.verbose:
                        print("Iteration %d, loss = %.8f" % (self.n_iter_, self.loss_))
                    if early_stopping:
                        score = self._device_score(tr, *val_set)
                        if self._track_validation(score):
                            tr.snapshot(best)
                    else:
                        self._track_loss()
                    opt.iteration_ends(self.t_)
                    if self._no_improvement_count > self.n_iter_no_change:
                        if early_stopping:
                            msg = ("Validation score did not improve more than tol=%f for %d "
                                   "consecutive epochs." % (self.tol, self.n_iter_no_change))
                        else:
                            msg = ("Training loss did not improve more than tol=%f for %d "
                                   "consecutive epochs." % (self.tol, self.n_iter_no_change))
                        if opt.trigger_stopping(msg, self.verbose):
                            break
                        self._no_improvement_count = 0
                    if incremental:
                        break
                    if self.n_iter_ == self.max_iter:
                        warnings.warn("Stochastic Optimizer: Maximum iterations (%d) reached "
                                      "and the optimization hasn't converged yet."
                                      % self.max_iter, ConvergenceWarning)
            except KeyboardInterrupt:
                warnings.warn("Training interrupted by user.")
            self.fit_time_ = time.perf_counter() - started
            layers = ([b.get().astype(np.float64) for b in best] if early_stopping
                      else tr.weights())
            solver_state = tr.solver_state()
        self.coefs_, self.intercepts_ = self._unpack(layers, layer_units)
        self._best_coefs = [c.copy() for c in self.coefs_]
        self._best_intercepts = [b.copy() for b in self.intercepts_]
        # the solver's state back in scikit-learn's optimizer (partial_fit continues from it)
        for s, packed in zip(st, solver_state):
            cs, bs_ = self._unpack(packed, layer_units)
            s[:] = cs + bs_
        opt.params = self.coefs_ + self.intercepts_

    @staticmethod
    def _size_names(layer_units, n_samples) -> dict:
        """What :func:`.minibatch.check_fits` names for each array: the user's arguments."""
        K = len(layer_units) - 1
        names = {"X": f"X (its {n_samples} samples, {layer_units[0]} features)",
                 "y": f"y (its {layer_units[-1]} outputs)", "batch": "batch_size"}
        names.update({f"layer{m}": f"hidden_layer_sizes[{m - 1}] = {layer_units[m]}"
                      for m in range(1, K)})
        names[f"layer{K}"] = names["y"]
        return names

    def _initialize(self, y, layer_units, dtype):
        """scikit-learn's, after the shapes are checked against the device (a network that
        cannot fit is refused before its weights are drawn on the host)."""
        n = y.shape[0]
        batch = min(200, n) if self.batch_size == "auto" else int(min(self.batch_size, n))
        mb.check_fits(val.pick_device(self.device, []), layer_units, n, batch,
                      self._size_names(layer_units, n))
        super()._initialize(y, layer_units, dtype)

    def _step_rate(self, opt) -> float:
        """The rate of the next batch's step (Adam: with its bias correction, as
        scikit-learn's ``AdamOptimizer`` computes it)."""
        if isinstance(opt, AdamOptimizer):
            opt.t += 1
            opt.learning_rate = (opt.learning_rate_init * np.sqrt(1 - opt.beta_2 ** opt.t)
                                 / (1 - opt.beta_1 ** opt.t))
        return float(opt.learning_rate)

    @staticmethod
    def _unpack(layers, layer_units):
        pairs = [mb.unpack_layer(w, layer_units[m]) for m, w in enumerate(layers)]
        return [c for c, _ in pairs], [b for _, b in pairs]

    def _track_loss(self):
        """scikit-learn's no-improvement count on the training loss."""
        if self.loss_curve_[-1] > self.best_loss_ - self.tol:
            self._no_improvement_count += 1
        else:
            self._no_improvement_count = 0
        if self.loss_curve_[-1] < self.best_loss_:
            self.best_loss_ = self.loss_curve_[-1]

    def _track_validation(self, score) -> bool:
        """scikit-learn's no-improvement count on the validation score; True when the score
        is the best so far (the weights are kept)."""
        self.validation_scores_.append(score)
        if self.verbose:
            print("Validation score: %f" % score)
        if score < self.best_validation_score_ + self.tol:
            self._no_improvement_count += 1
        else:
            self._no_improvement_count = 0
        if score > self.best_validation_score_:
            self.best_validation_score_ = score
            return True
        return False

    # ---- the forward pass ------------------------------------------------------------------
    def _forward_pass_fast(self, X, check_input=True):
        """The outputs for X, computed on the device (scikit-learn's predict, predict_proba
        and score call this)."""
        if check_input:
            X = validate_data(self, X, accept_sparse=["csr", "csc"], reset=False)
        if sparse.issparse(X):
            X = X.toarray()
        dev = val.pick_device(self.device, [])
        layers = [mb.pack_layer(c, b) for c, b in zip(self.coefs_, self.intercepts_)]
        units = [X.shape[1]] + [c.shape[1] for c in self.coefs_]
        mb.check_fits(dev, units, X.shape[0], 1, {"X": f"X (its {X.shape[0]} samples)",
                                                  "y": "the outputs"})
        return mb.predict(dev, layers, X, self.activation, self.out_activation_)

    # ---- the paper's network ---------------------------------------------------------------
    def _fit_paper(self, X, y, client):
        return fit_paper(self, X, y, client)


def _init_params(self, sk_init, given):
    """scikit-learn's ``__init__`` with its parameters, then the project's own."""
    extra = ("schedule", "packed", "device")
    sk_init(**{k: v for k, v in given.items() if k not in extra + ("self", "__class__")})
    for k in extra:
        setattr(self, k, given[k])


class MLPClassifier(_DeviceMLP, _SkClassifier):
    """scikit-learn's ``MLPClassifier``, trained and evaluated on the device.

    Parameters
    ----------
    hidden_layer_sizes, activation, solver, alpha, batch_size, learning_rate,
    learning_rate_init, power_t, max_iter, shuffle, random_state, tol, verbose, warm_start,
    momentum, nesterovs_momentum, early_stopping, validation_fraction, beta_1, beta_2, epsilon,
    n_iter_no_change, max_fun
        scikit-learn's, with its types, defaults and meanings: see
        :class:`sklearn.neural_network.MLPClassifier` (``hidden_layer_sizes=(100,)``,
        ``activation="relu"``, ``solver="adam"``, ``alpha=0.0001``, ``batch_size="auto"``,
        ``learning_rate_init=0.001``, ``max_iter=200``, ``tol=1e-4`` ...). ``solver="lbfgs"``
        is refused: the device trains with ``"adam"`` or ``"sgd"``.
    schedule : {"fused", "paper"}, default="fused"
        ``"fused"``: scikit-learn's stochastic training in render passes; ``"paper"``: the
        network and pass structure of Takizawa et al. (2009), see the module.
    packed : bool, default=True
        The paper schedule's packing (four training vectors per texel).
    device : Device or None, default=None
        The :class:`shadergpgpu.Device`; None for the thread's default device.

    Attributes
    ----------
    classes_, loss_, best_loss_, loss_curve_, validation_scores_, best_validation_score_,
    t_, coefs_, intercepts_, n_features_in_, feature_names_in_, n_iter_, n_layers_,
    n_outputs_, out_activation_
        scikit-learn's.
    fit_time_ : float
        Seconds of the last ``fit`` / ``partial_fit`` training loop.

    Raises
    ------
    ValueError
        From ``fit``: scikit-learn's parameter and input checks; ``solver="lbfgs"``;
        ``sample_weight`` or ``partial_fit`` with ``schedule="paper"``; a network or batch
        whose arrays do not fit the device's textures (naming the argument).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> import shadergpgpu as sg
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(),
    ...                     sg.MLPClassifier(hidden_layer_sizes=(16,), learning_rate_init=0.1,
    ...                                      tol=1e-2, random_state=0, device=sg.Device()))
    >>> clf.fit(X, y).score(X, y) > 0.95
    True
    >>> clf.predict(X[:3])
    array([0, 0, 0])
    """

    _parameter_constraints = {**_SkClassifier._parameter_constraints, **_EXTRA_CONSTRAINTS}

    def __init__(self, hidden_layer_sizes=(100,), activation="relu", *, solver="adam",
                 alpha=0.0001, batch_size="auto", learning_rate="constant",
                 learning_rate_init=0.001, power_t=0.5, max_iter=200, shuffle=True,
                 random_state=None, tol=1e-4, verbose=False, warm_start=False, momentum=0.9,
                 nesterovs_momentum=True, early_stopping=False, validation_fraction=0.1,
                 beta_1=0.9, beta_2=0.999, epsilon=1e-8, n_iter_no_change=10, max_fun=15000,
                 schedule="fused", packed=True, device=None):
        _init_params(self, super().__init__, locals())

    def fit(self, X, y, sample_weight=None, client=None):
        """Fit the model to X and the class labels y (scikit-learn's ``fit``); with a Dask
        ``client`` (schedule="paper"), data-parallel over its workers."""
        return self._device_fit(super().fit, X, y, sample_weight, client)

    def partial_fit(self, X, y, sample_weight=None, classes=None):
        """One epoch over X, y (scikit-learn's ``partial_fit``: ``classes`` on the first
        call)."""
        if self.schedule == "paper":
            raise ValueError("partial_fit: schedule='paper' trains full batches with fit")
        return super().partial_fit(X, y, sample_weight=sample_weight, classes=classes)

    @staticmethod
    def _val_total_squares(Y_val, sw):
        return None

    def _validate_input(self, X, y, incremental, reset):
        """scikit-learn's, after a check of the network's size from the class count alone
        (one output per class: the encoded targets are not made for a network that cannot
        fit the device)."""
        try:
            shape, labels = np.shape(X), np.asarray(y)
            k = len(np.unique(labels)) if labels.ndim == 1 else None
        except (TypeError, ValueError):
            k = None
        if k is not None and len(shape) == 2 and k > 2:
            hidden = list(np.atleast_1d(self.hidden_layer_sizes))
            units = [shape[1], *[int(h) for h in hidden], k]
            mb.check_fits(val.pick_device(self.device, []), units, shape[0], 1,
                          self._size_names(units, shape[0]))
        return super()._validate_input(X, y, incremental, reset)

    def _device_score(self, tr, Xv, Yv, SWv) -> float:
        """Accuracy on the validation set (weighted as scikit-learn's ``accuracy_score``),
        counted on the device."""
        hits = tr.score_terms(Xv, Yv, SWv, mb.SCORE_KINDS[self.out_activation_])
        return float(hits[0] / self._val_weights.sum())


class MLPRegressor(_DeviceMLP, _SkRegressor):
    """scikit-learn's ``MLPRegressor``, trained and evaluated on the device.

    Parameters
    ----------
    hidden_layer_sizes, activation, solver, alpha, batch_size, learning_rate,
    learning_rate_init, power_t, max_iter, shuffle, random_state, tol, verbose, warm_start,
    momentum, nesterovs_momentum, early_stopping, validation_fraction, beta_1, beta_2, epsilon,
    n_iter_no_change, max_fun
        scikit-learn's, with its types, defaults and meanings: see
        :class:`sklearn.neural_network.MLPRegressor` (``loss="squared_error"`` only;
        ``solver="lbfgs"`` is refused).
    schedule : {"fused", "paper"}, default="fused"
        As :class:`MLPClassifier`'s; the paper schedule needs targets within [0, 1].
    packed : bool, default=True
        The paper schedule's packing (four training vectors per texel).
    device : Device or None, default=None
        The :class:`shadergpgpu.Device`; None for the thread's default device.

    Attributes
    ----------
    loss_, best_loss_, loss_curve_, validation_scores_, best_validation_score_, t_, coefs_,
    intercepts_, n_features_in_, feature_names_in_, n_iter_, n_layers_, n_outputs_,
    out_activation_
        scikit-learn's.
    fit_time_ : float
        Seconds of the last ``fit`` / ``partial_fit`` training loop.

    Raises
    ------
    ValueError
        As :class:`MLPClassifier`'s, and a ``loss`` other than ``"squared_error"``.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> import shadergpgpu as sg
    >>> X, y = load_diabetes(return_X_y=True)
    >>> reg = make_pipeline(StandardScaler(),
    ...                     sg.MLPRegressor(hidden_layer_sizes=(16,), learning_rate_init=0.05,
    ...                                     tol=1e-2, random_state=0, device=sg.Device()))
    >>> reg.fit(X, y).score(X, y) > 0.5
    True
    """

    _parameter_constraints = {**_SkRegressor._parameter_constraints, **_EXTRA_CONSTRAINTS}

    def __init__(self, loss="squared_error", hidden_layer_sizes=(100,), activation="relu", *,
                 solver="adam", alpha=0.0001, batch_size="auto", learning_rate="constant",
                 learning_rate_init=0.001, power_t=0.5, max_iter=200, shuffle=True,
                 random_state=None, tol=1e-4, verbose=False, warm_start=False, momentum=0.9,
                 nesterovs_momentum=True, early_stopping=False, validation_fraction=0.1,
                 beta_1=0.9, beta_2=0.999, epsilon=1e-8, n_iter_no_change=10, max_fun=15000,
                 schedule="fused", packed=True, device=None):
        _init_params(self, super().__init__, locals())

    def fit(self, X, y, sample_weight=None, client=None):
        """Fit the model to X and the targets y (scikit-learn's ``fit``); with a Dask
        ``client`` (schedule="paper"), data-parallel over its workers."""
        if self.loss != "squared_error":
            self._validate_params()
            raise ValueError(f"loss={self.loss!r} is not available on the device: use "
                             "loss='squared_error'")
        return self._device_fit(super().fit, X, y, sample_weight, client)

    def partial_fit(self, X, y, sample_weight=None):
        """One epoch over X, y (scikit-learn's ``partial_fit``)."""
        if self.schedule == "paper":
            raise ValueError("partial_fit: schedule='paper' trains full batches with fit")
        return super().partial_fit(X, y, sample_weight=sample_weight)

    @staticmethod
    def _val_total_squares(Y_val, sw):
        Y = np.asarray(Y_val, np.float64).reshape(len(Y_val), -1)
        mean = np.average(Y, axis=0, weights=sw)
        return (sw[:, None] * (Y - mean) ** 2).sum(axis=0)

    def _device_score(self, tr, Xv, Yv, SWv) -> float:
        """R^2 on the validation set (scikit-learn's ``r2_score``, weighted, outputs
        averaged), from per-output squared errors summed on the device."""
        sse = tr.score_terms(Xv, Yv, SWv, mb.SCORE_KINDS["identity"])[:self.n_outputs_]
        sst = self._val_sst
        r2 = np.where(sst > 0, 1.0 - sse / np.where(sst > 0, sst, 1.0),
                      np.where(sse == 0, 1.0, 0.0))
        return float(np.mean(r2)) if np.all(np.isfinite(sse)) else float("nan")


MLP = MLPRegressor
