"""The scikit-learn estimator :class:`Sammon` (parameters, validation, ``fit`` in the units of X);
a fit runs on one device (:class:`~.run.SammonRun`) or, with a Dask ``client``, through the runner
``fit_sammon`` of :mod:`shadergpgpu.engine.runners`."""
from __future__ import annotations

import math

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import validate_data

from ...engine import runners
from ...engine import validation as _v
from .geometry import fit_geometry
from .run import SammonRun
from .scaling import normalized, pca_init

class Sammon(TransformerMixin, BaseEstimator):
    """Sammon mapping on the GPU, a scikit-learn transformer (``fit``, ``fit_transform``).

    Like :class:`sklearn.manifold.TSNE` it embeds the training data only: there is no
    ``transform`` of new points.

    Parameters
    ----------
    n_components : int, default=2
        Target dimension m, 1..4.
    n_iter : int, default=300
        Maximum number of update passes (gradient evaluations; with the adaptive step a
        rejected candidate counts as one).
    learning_rate : float, default=0.5
        lambda of eq. 4 (mu = 2 lambda / sum_{i != j} dn_ij, dn in the units of X); with
        ``step="adaptive"`` it only sets the first step before normalisation, and applies to
        X / scale_ (the fit is scale invariant).
    init : {"pca", "random"} or array of shape (N, n_components), default="pca"
        The starting positions.
    random_state : int, numpy Generator or None, default=None
        Seeds ``init="random"``.
    layout : {"rows", "columns"}, default="rows"
        How the source coordinates lie in the texture.
    tol : float or None, default=1e-6
        Adaptive step: stop when an accepted iteration lowers the stress by less than
        ``tol`` relative; fixed step: when the stress changes by less than that. None: run
        ``n_iter`` passes.
    step : {"adaptive", "source"}, default="adaptive"
        "source": eq. 3 with eq. 4's mu at every iteration.
    cache : {"auto", True, False}, default="auto"
        Keep the N x N source distances in a texture ("auto": when they take at most 1 GiB
        and fit the texture limit and the loop cap).
    split : "auto" or int, default="auto"
        At least this many passes per sweep of j (an int >= 1).
    device : Device or None, default=None
        The :class:`shadergpgpu.Device`; None: the thread's default device.

    Attributes
    ----------
    embedding_ : numpy.ndarray of shape (N, n_components)
        float32, in the units of X.
    n_features_in_ : int
        Number of source features n.
    stress_ : float
        Sammon stress (eq. 1) of ``embedding_`` (float32 device sums).
    stress_history_ : list of float
        Stress of the start and of every accepted iterate.
    n_iter_, n_rejected_ : int
        Update evaluations run; rejected candidates.
    mu_, step_ : float
        eq. 4's mu for ``learning_rate``, in the units of X (``step="source"``: 2 lambda /
        sum dn of X; adaptive: that of X / scale_, times scale_); the last step length used,
        in the units of X.
    cached_, split_, chunks_, tiled_, tile_jb_
        Whether the distances were cached; passes per sweep of j (the ping-pong
        accumulation passes included, the tiled sweep's finishing pass not); chunks of the
        sweep before the loop-cap cuts; whether the tiled update ran; its points j per
        block.
    timings_ : dict
        {"setup_s": seconds for the source distances and their sum, "eval_s": wall seconds
        of each update pass + stress sum + its one-float readback}.
    scale_ : float
        The samples' RMS distance to their mean: the device fits X / scale_ and the
        embedding is scaled back (see :meth:`fit`), so ``fit(X * s)`` is s times ``fit(X)``.

    Raises
    ------
    ValueError
        From ``fit``: a parameter out of its range, NaN or inf in X, an init array of the
        wrong shape; N or n past the device's texture limit (naming X), refused from the
        shape of X before anything is converted or allocated (:func:`fit_geometry`).
    LoopBudgetError
        A kernel loop that the device's loop cap cannot hold (a ValueError, with the
        kernel's hint).

    Accuracy
    --------
    With u = 2^-24, N points, n source features and E the stress: ``stress_`` is
    sum_i s_i / sum dn from float32 device sums (each row's terms over N pairs, then the sum
    reduction over N rows: at most 2N additions of nonnegative terms per sum), with dn within
    4 (n + 3) u relative (the tiled sweep's |x_i|^2 + |x_j|^2 - 2 x_i.x_j, recomputed exactly
    where it could cancel) and dm within (m + 3) u, so against the float64 stress of
    ``embedding_``::

        |stress_ - E64(embedding_)| <= (4N + 12n + 60) u E + (16n + 76) u sqrt(E)

    (the sqrt term: dn - dm cancels near convergence; sum |dn - dm| <= sqrt(E) sum dn). Each
    update is the float32 evaluation of eq. 3 from the current positions, checked on its first
    evaluation against float64 rows (:func:`spot_check_update`); the trajectory over many
    steps has no a-priori bound beyond that (tests compare steps with float64 at 1e-4).
    ``tests/algorithms/test_algorithm_guards.py`` checks the bound, and the scale invariance at
    s = 1e-30 .. 1e30.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> from scipy.spatial.distance import pdist
    >>> from sklearn.datasets import load_iris
    >>> X, _ = load_iris(return_X_y=True)
    >>> sammon = sg.Sammon(n_iter=50, device=sg.Device())
    >>> Y = sammon.fit_transform(X)
    >>> Y.shape, Y.dtype
    ((150, 2), dtype('float32'))
    >>> sammon.stress_ < sammon.stress_history_[0]            # lower than at the start
    True
    >>> dn, dm = pdist(X), pdist(Y.astype(float))
    >>> keep = dn > 0
    >>> E64 = ((dn - dm)[keep] ** 2 / dn[keep]).sum() / dn[keep].sum()
    >>> bool(np.isclose(sammon.stress_, E64, rtol=1e-3))      # within the bound above
    True
    """

    def __init__(self, n_components=2, n_iter=300, learning_rate=0.5, init="pca",
                 random_state=None, layout="rows", tol=1e-6, step="adaptive", cache="auto",
                 split="auto", device=None):
        self.n_components = n_components
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.init = init
        self.random_state = random_state
        self.layout = layout
        self.tol = tol
        self.step = step
        self.cache = cache
        self.split = split
        self.device = device

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The embedding is float32 whatever the input (device textures are RGBA32F).
        tags.transformer_tags.preserves_dtype = ["float32"]
        return tags

    # ---- validation ----------------------------------------------------------------------
    def _check_params(self):
        _v.integer(self.n_components, "n_components", 1, 4)
        _v.integer(self.n_iter, "n_iter", 1)
        _v.real(self.learning_rate, "learning_rate", 0, closed="neither")
        if self.tol is not None:
            _v.real(self.tol, "tol", 0)
        _v.choice(self.layout, "layout", ("rows", "columns"))
        _v.choice(self.step, "step", ("adaptive", "source"))
        if not (isinstance(self.cache, (bool, np.bool_)) or
                (isinstance(self.cache, str) and self.cache == "auto")):
            raise ValueError(f"cache must be 'auto', True or False, got {self.cache!r}")
        if not (isinstance(self.split, str) and self.split == "auto"):
            _v.integer(self.split, "split", 1)
        if isinstance(self.init, str):
            _v.choice(self.init, "init", ("pca", "random"))

    def _start(self, X, m):
        n = X.shape[0]
        if isinstance(self.init, str) and self.init == "pca":
            return pca_init(X, m)
        if isinstance(self.init, str):
            rng = np.random.default_rng(self.random_state)
            Xc = X.astype(np.float64) - X.mean(axis=0)
            scale = float(np.sqrt((Xc ** 2).sum(axis=1).mean()))
            return rng.standard_normal((n, m)) * (scale / math.sqrt(m) or 1.0)
        Y0 = _v.array(self.init, "init")
        if Y0.shape != (n, m):
            raise ValueError(f"init array must have shape {(n, m)}, got {Y0.shape}")
        return np.asarray(self.init, dtype=np.float64)

    # ---- fit ---------------------------------------------------------------------------------
    def fit(self, X, y=None, client=None):
        """Embed X (n_samples >= 2, n_features); sets ``embedding_`` and the other attributes.
        With a Dask ``client``: the points split across its workers (shadergpgpu.distributed).

        Units: the device fits X / ``scale_`` (X centred and divided by the samples' RMS
        distance to their mean, in float64 on the host, then rounded to float32), and
        ``embedding_``, ``mu_`` and ``step_`` are scaled back, so the fit does not depend on
        the units of X: ``fit(X * s)`` gives the stress of ``fit(X)`` and
        ``s`` times its embedding for any s (float32 squared distances of X itself overflowed
        from |X| ~ 1e19 and underflowed below ~1e-19: "all samples coincide"). The adaptive
        step's ``learning_rate`` applies to X / scale_; ``step="source"`` keeps eq. 4 in the
        units of X (mu = 2 lambda / sum dn), which is not scale invariant: ``fit(X * s)``
        with ``learning_rate = lambda s^2`` is s times ``fit(X)`` with lambda (to float32
        rounding: X / scale_ is rounded to float32 where the unscaled fit rounded X).
        """
        self._check_params()
        if hasattr(X, "device") and hasattr(X, "layout") and hasattr(X, "get"):
            raise TypeError("X: pass a host array (Sammon reads the source points once)")
        m = int(self.n_components)
        shape = getattr(X, "shape", None)
        geo = None
        if client is None and isinstance(X, np.ndarray) and X.ndim == 2 and \
                X.dtype.kind in "biuf" and X.shape[0] >= 2 and X.shape[1] >= 1:
            # sizes first, from the shape alone: a fit the device cannot hold is refused
            # before X is converted or anything allocated (a Dask fit: each worker checks);
            # the device run sets up from the same answer
            geo = fit_geometry(_v.pick_device(self.device, ()), int(shape[0]),
                               int(shape[1]), m, self)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        Xn, scale = normalized(X)
        # the same fit in the scaled units: eq. 4's mu for step="source" in the units of X
        # (lambda / scale^2); the adaptive step's lambda applies to X / scale
        lr = float(self.learning_rate)
        if self.step == "source":
            lr = max(lr / scale / scale, np.finfo(np.float64).tiny)
        init = self.init
        if not isinstance(init, str):
            Y0 = _v.array(init, "init")
            if Y0.shape != (X.shape[0], m):
                raise ValueError(f"init array must have shape {(X.shape[0], m)}, got "
                                 f"{Y0.shape}")
            init = np.asarray(init, dtype=np.float64) / scale
        run_est = Sammon(**dict(self.get_params(deep=False), learning_rate=lr, init=init))
        if client is not None:
            runners.get("fit_sammon")(run_est, Xn, client)
        else:
            # pca and random starts from the scaled data: the same for X * s
            Y0 = run_est._start(Xn, m)
            dev = _v.pick_device(self.device, ())
            dev.report("api:sammon")   # an entry point: its own host work, reported
            run = SammonRun(dev, Xn, Y0, run_est, geo=geo)
            try:
                run.fit()
            finally:
                run.release()
        for k, v in vars(run_est).items():
            if k.endswith("_") and not k.startswith("_") and \
                    k not in ("n_features_in_", "feature_names_in_"):
                setattr(self, k, v)
        # back to the units of X
        self.embedding_ = (run_est.embedding_.astype(np.float64) * scale).astype(np.float32)
        self.mu_ = float(run_est.mu_) * scale
        self.step_ = float(run_est.step_) * scale
        self.scale_ = scale
        return self

    def fit_transform(self, X, y=None, client=None):
        """Fit and return ``embedding_``."""
        return self.fit(X, client=client).embedding_

