"""The scikit-learn estimator :class:`SVC`: parameter checks, one-vs-one training of binary
SMO problems on the device, the fitted attributes, and prediction on the host in float64.
"""
from __future__ import annotations

import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ...engine import validation as val
from ...ops import reduce as _reduce
from ...ops.reduce.levels import check_fanin
from ...ops.rbf import rbf_matrix_host
from .checks import F32_MAX, check_fits, check_rbf_range
from .smo import READBACK_EVERY, BinarySMO


class SVC(ClassifierMixin, BaseEstimator):
    """C-support vector classifier with an RBF kernel, trained by SMO on the device.

    A scikit-learn estimator (``clone``, pipelines, ``GridSearchCV``, ``cross_val_score``)
    with the parameters of :class:`sklearn.svm.SVC` that an RBF kernel uses.

    Parameters
    ----------
    C : float, default=1.0
        Regularization parameter, > 0.
    kernel : {"rbf"}, default="rbf"
        The kernel; only the RBF kernel is available.
    gamma : {"scale", "auto"} or float, default="scale"
        The RBF kernel's coefficient: "scale" = 1 / (n_features * X.var()), "auto" =
        1 / n_features, or a positive float.
    tol : float, default=1e-3
        Duality-gap stopping tolerance, > 0.
    max_iter : int, default=-1
        SMO iterations per binary problem; -1: libsvm's cap, max(10^7, 100 n).
    working_set : {"second-order", "first-order"}, default="second-order"
        "second-order" (libsvm's default) or "first-order" (maximal violating pair).
    decision_function_shape : {"ovr", "ovo"}, default="ovr"
        The shape of :meth:`decision_function`'s values for more than two classes.
    device : Device or None, default=None
        The :class:`~shadergpgpu.engine.device.Device`; None: the thread's default device.
    fanin : int or None, default=None
        Reduction fan-in of the working-set selection; None: the device's default.
    fused_select : bool, default=True
        Run the I_up and I_low selections as one two-result reduction (half the selection
        passes).
    readback_every : int, default=READBACK_EVERY
        k > 1 solves the two-variable step on the device and reads the solver's state only
        every k iterations (at most k - 1 no-op iterations past the stop); 1 solves the step
        on the host from one small readback per iteration.

    Training data are float32 on the device (float64 input is converted); predictions are
    computed on the host in float64 from the support vectors. ``y`` must be class labels:
    continuous targets are refused (``Unknown label type``).

    Attributes
    ----------
    classes_, n_features_in_, feature_names_in_, support_, support_vectors_, n_support_,
    dual_coef_, intercept_
        As scikit-learn's ``SVC``.
    n_iter_ : numpy.ndarray
        SMO iterations of each binary problem.
    dual_objective_ : numpy.ndarray
        The dual objective of each binary problem.
    fit_time_ : float
        Seconds of the last ``fit``.
    n_passes_ : int
        Render passes the last ``fit`` drew.

    Raises
    ------
    ValueError
        From ``fit``: a parameter out of its range, a single class, continuous targets, NaN
        or inf in X, more points than float32 indices reach, or a problem whose arrays do
        not fit the device's textures.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.svm import SVC as SkSVC
    >>> import shadergpgpu as sg
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = sg.SVC(C=1.0, device=sg.Device()).fit(X, y)
    >>> clf.score(X, y) > 0.95
    True
    >>> bool((clf.predict(X) == SkSVC(C=1.0).fit(X, y).predict(X)).all())   # as libsvm
    True
    """

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", tol=1e-3, max_iter=-1,
                 working_set="second-order", decision_function_shape="ovr", device=None,
                 fanin=None, fused_select=True, readback_every=READBACK_EVERY):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.max_iter = max_iter
        self.working_set = working_set
        self.decision_function_shape = decision_function_shape
        self.device = device
        self.fanin = fanin
        self.fused_select = fused_select
        self.readback_every = readback_every

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.allow_nan = False
        return tags

    # ---- validation ------------------------------------------------------------------------
    def _check_params(self, X):
        val.choice(self.kernel, "kernel", ("rbf",))
        val.real(self.C, "C", lo=0.0, closed="neither")
        val.real(self.tol, "tol", lo=0.0, closed="neither")
        val.choice(self.working_set, "working_set", ("first-order", "second-order"))
        val.choice(self.decision_function_shape, "decision_function_shape", ("ovr", "ovo"))
        if self.max_iter != -1:
            val.integer(self.max_iter, "max_iter", lo=1)
        if self.fanin is not None:
            check_fanin(self.fanin)
        val.integer(self.readback_every, "readback_every", lo=1)
        if isinstance(self.gamma, str):
            val.choice(self.gamma, "gamma", ("scale", "auto"))
            if self.gamma == "scale":
                var = float(np.asarray(X, np.float64).var())
                return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
            return 1.0 / X.shape[1]
        return val.real(self.gamma, "gamma", lo=0.0, closed="neither")

    def fit(self, X, y):
        """Train one binary SMO problem per pair of classes (one-vs-one)."""
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], ensure_min_samples=2)
        check_classification_targets(y)
        classes, yi = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}); a classifier needs two "
                             "or more classes")
        if len(X) >= _reduce.MAX_INDEX:
            raise ValueError(f"X has {len(X)} points; at most {_reduce.MAX_INDEX - 1} "
                             "(float32 indices)")
        # sizes first, from the shapes alone: nothing is allocated for a problem the device
        # cannot hold (the largest one-vs-one problem: the two largest classes)
        dev = val.pick_device(self.device, [])
        dev.report("api:svm")        # an entry point: its own host work, reported
        counts = np.sort(np.bincount(yi))
        check_fits(dev, int(counts[-1] + counts[-2]), X.shape[1])
        gamma = self._check_params(X)
        check_rbf_range(X, gamma, None if (isinstance(self.gamma, str) and
                                          self.gamma == "scale") else "gamma")
        X = X.astype(np.float32)
        self.classes_ = classes
        self._gamma = gamma
        nc = len(classes)
        t0 = time.perf_counter()
        counter0 = dev.counter.total
        per_pair = []
        for a in range(nc):
            for b in range(a + 1, nc):
                idx = np.flatnonzero((yi == a) | (yi == b))
                yy = np.where(yi[idx] == a, 1.0, -1.0)
                n = len(idx)
                max_iter = self.max_iter if self.max_iter != -1 else max(10_000_000, 100 * n)
                prob = BinarySMO(dev, X[idx], yy, self.C, gamma, self.tol, max_iter,
                                 self.working_set, self.fanin, self.fused_select,
                                 self.readback_every)
                try:
                    prob.solve()
                finally:
                    prob.release()
                if not prob.converged:
                    warnings.warn(f"SMO stopped at max_iter={max_iter} before the duality gap "
                                  f"fell below tol (gap {prob.gap:.3g})", RuntimeWarning)
                per_pair.append((a, b, idx, prob))
        self.fit_time_ = time.perf_counter() - t0
        self.n_passes_ = dev.counter.total - counter0
        self._assemble(X, yi, per_pair)
        return self

    def _assemble(self, X, yi, per_pair):
        nc = len(self.classes_)
        sv_mask = np.zeros(len(X), bool)
        for a, b, idx, p in per_pair:
            sv_mask[idx[p.alpha > 0]] = True
        # support vectors grouped by class, ascending index within a class (libsvm order)
        support = np.concatenate([np.flatnonzero(sv_mask & (yi == c)) for c in range(nc)])
        pos = {int(s): k for k, s in enumerate(support)}
        coef = np.zeros((nc - 1, len(support)))
        intercept = np.zeros(len(per_pair))
        for p_i, (a, b, idx, p) in enumerate(per_pair):
            c = p.alpha * p.y
            for t in np.flatnonzero(p.alpha > 0):
                s = pos[int(idx[t])]
                row = b - 1 if yi[idx[t]] == a else a
                coef[row, s] = c[t]
            intercept[p_i] = -p.rho
        self.support_ = support.astype(np.int32)
        self.support_vectors_ = X[support].astype(np.float64)
        self.n_support_ = np.array([np.sum(yi[support] == c) for c in range(nc)], np.int32)
        self.n_iter_ = np.array([p.n_iter for *_, p in per_pair], np.int32)
        self.dual_objective_ = np.array([p.objective for *_, p in per_pair])
        self._dual_coef_ovo = coef
        self._intercept_ovo = intercept
        if nc == 2:  # scikit-learn's sign convention: positive decision -> classes_[1]
            self.dual_coef_ = -coef
            self.intercept_ = -intercept
        else:
            self.dual_coef_ = coef
            self.intercept_ = intercept
        return self

    # ---- prediction (host, float64) -------------------------------------------------------
    def _check_fitted(self, X):
        check_is_fitted(self, "support_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        big = float(max(X.max(), -X.min()))
        if big > F32_MAX:
            raise ValueError(f"X: values up to {big:.3g} are beyond float32's range "
                             f"(+-{F32_MAX:.4g}); the model was trained on float32 data")
        return X.astype(np.float32).astype(np.float64)

    def _ovo(self, X):
        """libsvm's pairwise decision values, (n, n_pairs); positive -> the first class."""
        nc = len(self.classes_)
        starts = np.concatenate([[0], np.cumsum(self.n_support_)])
        out = np.empty((len(X), nc * (nc - 1) // 2))
        # both sides moved by the support vectors' centre: rbf_matrix_host's |a|^2 + |b|^2 -
        # 2 a.b then cancels relative to the data's spread, not to its offset (data at 1e4
        # with a spread of 1e-3 lost ~5% of every squared distance in float64 otherwise)
        sv = self.support_vectors_
        centre = sv.mean(axis=0) if len(sv) else np.zeros(X.shape[1])
        sv = sv - centre
        for lo in range(0, len(X), 2048):
            K = rbf_matrix_host(X[lo:lo + 2048] - centre, sv, self._gamma)
            p = 0
            for a in range(nc):
                sa = slice(starts[a], starts[a + 1])
                for b in range(a + 1, nc):
                    sb = slice(starts[b], starts[b + 1])
                    out[lo:lo + 2048, p] = (K[:, sa] @ self._dual_coef_ovo[b - 1, sa] +
                                            K[:, sb] @ self._dual_coef_ovo[a, sb] +
                                            self._intercept_ovo[p])
                    p += 1
        return out

    def decision_function(self, X):
        """Decision values: (n,) for two classes (positive -> ``classes_[1]``), else (n,
        n_classes) ("ovr", libsvm's vote-based transform) or (n, n_pairs) ("ovo").

        Accuracy: computed on the host in float64 from ``support_vectors_`` (the float32
        training data), ``dual_coef_``, ``intercept_`` and gamma, both sides centred on the
        support vectors' mean first, so f(x) = sum_s c_s exp(-gamma |x - x_s|^2) + b is the
        fitted model's to float64 rounding: |f - f64| <= (n_SV + n_features + 4) 2^-53
        (sum |c_s| (1 + gamma d2_max) + |b|). X is rounded to float32 as the training data
        were; X beyond float32's range is refused (ValueError naming X).

        The model itself is the float32 solver's (u = 2^-24). Each kernel value it uses,
        exp(-gamma d^2) with d^2 summed in float32 over the features, is within
        (n_features + 6) u of the exact one (t e^-t <= 1/e bounds the propagated error of
        d^2), and ``fit`` refuses the data and gammas where float32 could not hold the
        squared distances (:func:`check_rbf_range`). The gradient G is updated in float32
        once per iteration, so after ``n_iter_`` iterations ``intercept_`` (libsvm's rule on
        G) is within about (n_iter_ + 1) u (max |G| + 2 C (n_features + 8) + n_SV C) of the
        same rule on float64 G = Q alpha - 1 for the fitted alphas; the stop (duality gap <
        tol) is tested on that float32 G. ``tests/algorithms/test_algorithm_guards.py`` checks both.
        """
        X = self._check_fitted(X)
        dec = self._ovo(X)
        nc = len(self.classes_)
        if nc == 2:
            return -dec[:, 0]
        if self.decision_function_shape == "ovo":
            return dec
        votes = np.zeros((len(X), nc))
        conf = np.zeros((len(X), nc))
        p = 0
        for a in range(nc):
            for b in range(a + 1, nc):
                win_a = dec[:, p] > 0
                votes[win_a, a] += 1
                votes[~win_a, b] += 1
                conf[:, a] += dec[:, p]
                conf[:, b] -= dec[:, p]
                p += 1
        return votes + conf / (3 * (np.abs(conf) + 1))

    def predict(self, X):
        """Class labels by one-vs-one voting (libsvm's rule)."""
        X = self._check_fitted(X)
        dec = self._ovo(X)
        nc = len(self.classes_)
        votes = np.zeros((len(X), nc), np.int64)
        p = 0
        for a in range(nc):
            for b in range(a + 1, nc):
                win_a = dec[:, p] > 0
                votes[win_a, a] += 1
                votes[~win_a, b] += 1
                p += 1
        return self.classes_[np.argmax(votes, axis=1)]
