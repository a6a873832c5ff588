"""KMeans: the scikit-learn estimator (parameters, validation at the boundary, the ``n_init``
runs on one device state, fitted attributes, predict and transform)."""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClusterMixin, TransformerMixin
from sklearn.cluster import kmeans_plusplus
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.utils import check_array, check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from ...engine import validation as val
from ...engine.device import Device
from .lloyd import LloydRun, predict_labels
from .sizes import check_fits


def _pow2_at_least(v: float) -> float:
    """The smallest power of two >= ``v`` (1 for 0): dividing by it is exact in binary."""
    return 1.0 if v <= 0 else float(2.0 ** math.ceil(math.log2(v)))


def _same_clustering(a: np.ndarray, b: np.ndarray, k: int) -> bool:
    """Whether two labelings are the same partition up to a permutation of the labels
    (scikit-learn's ``_is_same_clustering``)."""
    mapping = np.full(k, -1)
    for u, v in zip(a, b):
        if mapping[u] == -1:
            mapping[u] = v
        elif mapping[u] != v:
            return False
    return True


def _validated(est, X, reset: bool) -> np.ndarray:
    """scikit-learn's ``validate_data``, its errors naming X where its own message does not
    (a value that is no number, say)."""
    try:
        return validate_data(est, X, reset=reset, dtype=[np.float64, np.float32])
    except (TypeError, ValueError) as e:
        if " X " in f" {e} ".replace(",", " ").replace(".", " "):
            raise
        raise type(e)(f"X: {e}") from e


class KMeans(ClusterMixin, TransformerMixin, BaseEstimator):
    """K-means clustering by Lloyd's algorithm on the device.

    A scikit-learn estimator (``clone``, pipelines, ``GridSearchCV``) with the parameters of
    ``sklearn.cluster.KMeans(algorithm="lloyd")``.

    Parameters
    ----------
    n_clusters : int, default=8
        The number of clusters.
    init : {"k-means++", "random"} or array of shape (n_clusters, n_features), \
default="k-means++"
        "k-means++": scikit-learn's own seeding (:func:`sklearn.cluster.kmeans_plusplus`)
        on the host, so a ``random_state`` gives the same initial centres as
        scikit-learn's; "random": drawn as scikit-learn draws them; an array: the initial
        centres.
    n_init : "auto" or int, default="auto"
        Runs from different seeds, the lowest inertia kept ("auto": 1 for "k-means++" and an
        array, 10 for "random"; an array runs once, with a RuntimeWarning for n_init > 1, as
        scikit-learn does).
    max_iter : int, default=300
        Iterations of one run at most.
    tol : float, default=1e-4
        scikit-learn's stopping rule (``_kmeans_single_lloyd``): a run stops after the first
        iteration where no label changes (strict convergence), else after the first where the
        total squared centre shift is at most ``tol`` times the mean variance of the features
        of X (``_tolerance``, in X's dtype). After strict convergence ``labels_`` are the last
        iteration's, else those of a final assignment to the final centres.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation, as in scikit-learn.
    device : Device or None, default=None
        The :class:`~shadergpgpu.engine.device.Device`; None: the thread's default device.

    X is checked by scikit-learn's ``validate_data``, with its messages (prefixed by ``X:``
    where they do not name X).

    Attributes
    ----------
    cluster_centers_ : numpy.ndarray of shape (n_clusters, n_features)
        The centres.
    labels_ : numpy.ndarray of shape (n_samples,)
        The cluster of each training point.
    inertia_ : float
        Sum of squared distances of the points to their centres.
    n_iter_ : int
        Iterations of the kept run, the last included.
    n_features_in_, feature_names_in_
        As scikit-learn's.
    n_passes_ : int
        Render passes the fit drew.

    Raises
    ------
    ValueError
        From ``fit``: a parameter out of its range, fewer points than clusters, an init
        array of the wrong shape, NaN or inf in X (scikit-learn's checks), or arrays that do
        not fit the device's textures.

    Each iteration runs on the device (see :mod:`shadergpgpu.algorithms.kmeans.lloyd`): the
    assignment by an arg-min over the centroid distances, the centroid update by a two-level
    reduction per centroid, and a status pass; the host reads one texel per iteration. As
    scikit-learn does, X is centred on its mean first (in float64), then scaled by a power of
    two into [-1, 1] (exact), so the device's float32 arithmetic does not depend on the units
    or the offset of X.

    Empty clusters: handled as scikit-learn does (``_relocate_empty_clusters_dense``): the
    points farthest from their centroids move into the empty clusters; a cluster that stays
    empty (every point on its centroid: fewer distinct points than clusters) is placed on the
    largest cluster's centroid, and the fit warns (ConvergenceWarning) when fewer distinct
    clusters than ``n_clusters`` remain.

    Accuracy
    --------
    With u = 2^-24 and ``s`` the power of two at least ``max|X - mean(X)|`` (so ``s < 2
    max|X - mean(X)|``): with a run's labels fixed, each centroid coordinate is within
    ``(2 m + 8) u s`` of the float64 mean of its points, ``m = 4 blk + nb`` the longest chain of
    float32 additions in the update (:func:`~.plans.geometry`: 4 x 64 + 1 = 257 up to 1,024
    points); the update sums the deviations ``x - c`` from the previous centroid, which shrink
    as the run converges. ``inertia_`` is within ``gamma(d + 3 + K) I + 2^-21 max|X - mean(X)|
    sum_i ||x_i - c_(l_i)||_1`` of the float64 inertia ``I`` of the same labels and centres (d
    features; ``K`` the rounding depth of the device sum of the distances,
    :func:`shadergpgpu.ops.reduce.rounding_depth`; the second term is X and the centres
    rounded to float32). The labels are scikit-learn's wherever no point is that close to
    equidistant from two centroids; ties go to the lower index, as in scikit-learn. The shift
    each iteration compares with the tolerance is the device's float32 sum, so a shift within
    its rounding of the tolerance can end a run one iteration away from scikit-learn's.

    ``predict`` assigns on the device; ``transform`` (distances to the centres) runs on the
    host in float64 (scikit-learn's ``euclidean_distances``).

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> X = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]], float)
    >>> km = sg.KMeans(n_clusters=2, random_state=0, device=sg.Device()).fit(X)
    >>> a, b = km.labels_[0], km.labels_[3]                # the two groups, in either order
    >>> bool(km.labels_.tolist() == [a, a, a, b, b, b] and a != b)
    True
    >>> [[round(v, 4) for v in c] for c in sorted(km.cluster_centers_.tolist())]  # float32
    [[1.0, 2.0], [10.0, 2.0]]
    >>> km.predict([[0, 0], [12, 3]]).tolist() == [a, b]
    True
    >>> round(float(km.inertia_), 3)
    16.0
    """

    def __init__(self, n_clusters=8, *, init="k-means++", n_init="auto", max_iter=300,
                 tol=1e-4, random_state=None, device=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.device = device

    # ---- validation ------------------------------------------------------------------------
    def _check_params(self):
        k = val.integer(self.n_clusters, "n_clusters", lo=1)
        if isinstance(self.init, str):
            val.choice(self.init, "init", ("k-means++", "random"))
        if not (isinstance(self.n_init, str) and self.n_init == "auto"):
            if isinstance(self.n_init, str):
                raise ValueError(f"n_init must be 'auto' or an integer >= 1; got "
                                 f"{self.n_init!r}")
            val.integer(self.n_init, "n_init", lo=1)
        val.integer(self.max_iter, "max_iter", lo=1)
        val.real(self.tol, "tol", lo=0.0)
        if self.device is not None and not isinstance(self.device, Device):
            raise TypeError(f"device must be a shadergpgpu Device or None, got "
                            f"{type(self.device).__name__}")
        if self.random_state is not None and not isinstance(
                self.random_state, (numbers.Integral, np.random.RandomState)):
            raise ValueError(f"random_state must be None, an integer or a "
                             f"numpy.random.RandomState; got {self.random_state!r}")
        return k

    def _init_array(self, n_features: int):
        """The ``init`` array as float64 (k, d), or None for a named init."""
        if isinstance(self.init, str):
            return None
        if callable(self.init):
            raise TypeError("init must be 'k-means++', 'random' or an array (n_clusters, "
                            "n_features); a callable is not supported")
        init = check_array(self.init, dtype=np.float64, input_name="init", copy=True)
        want = (int(self.n_clusters), int(n_features))
        if init.shape != want:
            raise ValueError(f"init: the initial centres have shape {init.shape}; expected "
                             f"(n_clusters, n_features) = {want}")
        return init

    def _runs(self, init) -> int:
        if self.n_init == "auto":
            return 10 if isinstance(self.init, str) and self.init == "random" else 1
        if init is not None and self.n_init != 1:
            warnings.warn(f"Explicit initial center position passed: performing only one init "
                          f"in {type(self).__name__} instead of n_init={self.n_init}.",
                          RuntimeWarning, stacklevel=3)
            return 1
        return int(self.n_init)

    # ---- fit ---------------------------------------------------------------------------------
    def fit(self, X, y=None):
        """Cluster ``X`` (n_samples, n_features); ``y`` is ignored."""
        k = self._check_params()
        dev = val.pick_device(self.device, [])
        dev.report("api:kmeans")     # an entry point: its own host work, reported
        shape = getattr(X, "shape", None)
        if shape is not None and len(shape) == 2 and 0 not in tuple(shape) and shape[0] >= k:
            check_fits(dev, shape[0], shape[1], k)   # from the shapes, before any conversion
        # the shape, the dtype and the values are scikit-learn's checks, with its messages
        X = _validated(self, X, reset=True)
        n, d = X.shape
        if n < k:
            raise ValueError(f"X: n_samples={n} should be >= n_clusters={k}.")
        geo = check_fits(dev, n, d, k)
        init = self._init_array(d)
        runs = self._runs(init)
        rs = check_random_state(self.random_state)
        X64 = np.asarray(X, np.float64)
        mean = X64.mean(axis=0)
        Xc = X64 - mean
        # scikit-learn's _tolerance: on X as validated (C order, its dtype: float32 stays
        # float32)
        tol = float(np.mean(np.var(np.ascontiguousarray(X), axis=0)) * self.tol) \
            if self.tol else 0.0
        if init is not None:
            init = init - mean
        big = float(np.abs(Xc).max())
        if init is not None:
            big = max(big, float(np.abs(init).max()))
        scale = _pow2_at_least(big)
        counter0 = dev.counter.total
        best = None
        run = LloydRun(dev, (Xc / scale).astype(np.float32), geo)
        try:
            for _ in range(runs):
                if init is not None:
                    c0 = init
                elif self.init == "k-means++":
                    c0, _ = kmeans_plusplus(Xc, k, random_state=rs)
                else:
                    sw = np.ones(n)
                    c0 = Xc[rs.choice(n, size=k, replace=False, p=sw / sw.sum())]
                r = run.run(c0 / scale, self.max_iter, tol / scale ** 2)
                r.inertia *= scale ** 2
                if best is None or (r.inertia < best.inertia and
                                    not _same_clustering(r.labels, best.labels, k)):
                    best = r
        finally:
            run.release()
        self.n_passes_ = dev.counter.total - counter0
        self._shift, self._scale = mean, scale
        self._centers_device = best.centers.astype(np.float32)
        self.cluster_centers_ = best.centers * scale + mean
        self.labels_ = best.labels
        self.inertia_ = best.inertia
        self.n_iter_ = best.n_iter
        self._n_features_out = k
        distinct = len(np.unique(best.labels))
        if distinct < k:
            warnings.warn(f"Number of distinct clusters ({distinct}) found smaller than "
                          f"n_clusters ({k}). Possibly due to duplicate points in X.",
                          ConvergenceWarning, stacklevel=2)
        return self

    # ---- after the fit -------------------------------------------------------------------------
    def _checked(self, X):
        check_is_fitted(self, "cluster_centers_")
        return np.asarray(_validated(self, X, reset=False), np.float64)

    def predict(self, X):
        """The index of the nearest centre for each sample of ``X``, assigned on the device
        (the fit's assignment pass; ties to the lower index)."""
        X = self._checked(X)
        dev = val.pick_device(self.device, [])
        k, d = self.cluster_centers_.shape
        geo = check_fits(dev, X.shape[0], d, k, update=False)
        Xs = (X - self._shift) / self._scale
        centers = self._centers_device
        big = float(np.abs(Xs).max())
        if big > 1.0:   # beyond the fit's range: a scale that holds both (exact powers of two)
            s = _pow2_at_least(big)
            Xs = Xs / s
            centers = (centers.astype(np.float64) / s).astype(np.float32)
        return predict_labels(dev, Xs.astype(np.float32), centers, geo)

    def transform(self, X):
        """Euclidean distances of ``X`` to the cluster centres, (n_samples, n_clusters),
        computed on the host in float64 (scikit-learn's ``euclidean_distances``)."""
        return euclidean_distances(self._checked(X), self.cluster_centers_)
