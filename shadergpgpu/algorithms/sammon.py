"""Sammon mapping by gradient descent, one gather pass per iteration.

Source 003 (Borisov and Myasnikov) maps N points from n to m dimensions by minimising the
Sammon stress (eq. 1)

    E = 1 / sum_{i<j} dn_ij * sum_{i<j} (dn_ij - dm_ij)^2 / dn_ij

(dn: distances in the source space, dm: in the target space) with the gradient step (eq. 3)

    y_i(t+1) = y_i(t) + mu * sum_{j != i} (dn_ij - dm_ij) / (dn_ij dm_ij) * (y_i(t) - y_j(t)),
    mu = 2 lambda / sum_{i != j} dn_ij                                             (eq. 4)

How it runs on the engine
-------------------------
* Textures: the source points ``X`` (N x n, four coordinates per RGBA texel), the positions
  ``prev`` and ``next`` (N x m, m <= 4: one texel per point), the direction ``G`` and the
  per-point stress terms ``S``. Positions, ``G`` and ``S`` share one texture shape: a near-square
  wrap of N texels (a 1 x N strip would leave half of every 2 x 2 fragment quad idle).
* One render pass per iteration (``shaders/sammon/update.frag``): fragment i owns point i,
  loops over every j, recomputes (or fetches) dn_ij, and writes three targets at once:
  ``next_i = prev_i + mu * g_i`` (eq. 3), ``g_i`` and ``s_i``. Then ``prev`` and ``next`` swap
  (ping-pong, :meth:`Pass.bind`), and the stress of ``prev`` is ``sum_i s_i / sum dn`` by the
  device sum reduction of :mod:`shadergpgpu.ops.reduce`: one float comes back per iteration.
* Source layouts (``layout=``): ``"rows"`` stores X row-major (``order="row"``, a texel holds
  four coordinates of one point; the fetch of point i is shared by four pairs) and
  ``"columns"`` column-major (``order="col"``, a texel holds one coordinate of four consecutive
  points, so one fetch serves four pairs and neighbouring fragments read the same texel).
* Cached distances (``cache=``): the constant dn can be computed once into an N x N texture
  (4 N^2 bytes: 0.4 GB at N = 10,000; it cannot hold N = 100,000) so that an iteration reads one
  texel per four pairs instead of recomputing n-dimensional distances.
* Split sweep (``split=``): the loop over j can be cut into k chunks, one pass each, summed
  into the three targets by additive blending; the first chunk adds ``prev``. The update is still
  exactly eq. 3 (only the order of the float additions changes).

Why a full sweep instead of the source's half sweep
--------------------------------------------------
The source's fastest GPU variant visits each pair once (j > i) and adds the pair's term to both
points with atomic additions. A fragment shader can only write its own output texel(s): there is
no scatter and no atomic add on this path. So every fragment does a *full sweep* (all j != i) and
*gathers* the terms of its own point i: each pair is evaluated twice (once by i, once by j), twice
the arithmetic of the half sweep, but with no write conflicts, no atomics and a deterministic
result. (Additive blending could scatter only into whole render targets in a fixed order, which
does not help for per-pair contributions to two different points.)

Step size
---------
``step="source"`` applies eq. 3 with mu from eq. 4 (``learning_rate`` = lambda) at every
iteration. That step moves almost nothing on some data and overshoots on other data, so the
default ``step="adaptive"`` keeps eq. 3's direction and adapts only the length: the first step is
eq. 4's mu, rescaled if needed so that the RMS move lies between 0.1% and 5% of the embedding's
RMS spread (a normalised step); afterwards a "bold driver" backtracking rule multiplies the
step by 2 (until the first rejection, a warm-up) or by 1.2 after each iteration that lowers the
stress, and halves it (and retries from the last accepted positions) after one that does not.
The stress of a candidate comes free with the next update pass, so a
rejected candidate costs one pass and an O(N) step pass.

Degenerate pairs
----------------
Pairs with dn_ij = 0 (duplicate source points) are skipped in the update, in the stress and in
sum dn (their term in eq. 1 is undefined). In the update dm_ij is clamped from below by
``dm_floor = 1e-6 * mean(dn)`` so coinciding targets (dm = 0) give a zero term, not 0 * inf;
the stress uses the exact dm.
"""
from __future__ import annotations

import math
import numbers
import time

import numpy as np

from ..engine.arrays import as_float32
from ..engine.layout import Layout
from ..engine.limits import LOOP_BUDGET, ceil_div
from ..engine.plans import PassPlan, register_plan
from ..ops import reduce as _reduce

#: cache="auto" keeps the N x N source distances when they take at most this many bytes.
CACHE_AUTO_BYTES = 1 << 30
#: RMS move of the first adaptive step, as a fraction of the embedding's RMS spread.
STEP_MIN, STEP_MAX = 1e-3, 5e-2
GROW, SHRINK = 1.2, 0.5
#: Until the first rejected candidate the step doubles (a warm-up: the normalised first step is
#: deliberately small), then it grows by GROW.
WARMUP_GROW = 2.0
DM_FLOOR = 1e-6


#: Most fragment-loop iterations (fragments x iterations) one pass may run. On the H200 through
#: EGL, passes of 4 s (N = 100,000 in 4 chunks) came back with wrong sums while passes of ~1.3 s
#: (6e9 iterations, 21 chunks) were verified against float64 rows; this keeps N > 100,000 there.
PASS_WORK = 6_000_000_000


def min_chunks(n_points: int, n_features: int, source: str) -> int:
    """Fewest chunks of the j sweep that keep one fragment's loop under LOOP_BUDGET and one
    pass under PASS_WORK.

    source: "rows", "columns" or "cached" (inner iterations per block of 4 points j:
    ceil(n/4), n or 1).
    """
    inner = {"rows": ceil_div(n_features, 4), "columns": n_features, "cached": 1}[source]
    blocks_per_pass = max(1, min(LOOP_BUDGET // max(inner, 1),
                                 PASS_WORK // max(inner * n_points, 1)))
    return max(1, ceil_div(ceil_div(n_points, 4), blocks_per_pass))


def _auto_split(n_points: int, n_features: int, source: str) -> int:
    """Chunks of the j sweep: the loop limit, and about 8,192 points a pass at most."""
    return max(ceil_div(n_points, 8192), min_chunks(n_points, n_features, source))


def _chunks(n_points: int, k: int) -> list:
    """k chunks [a, b) of 0..n_points, boundaries at multiples of 4."""
    blocks = ceil_div(n_points, 4)
    k = max(1, min(int(k), blocks))
    bounds = [4 * ((blocks * t) // k) for t in range(k + 1)]
    bounds[-1] = n_points
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def _plan_phases(n, n_features, layout="rows", n_evals=1, split=1, cached=False, n_rejects=0,
                 adaptive=False, fanin=None):
    fanin = fanin or _reduce.DEFAULT_FANIN
    red_n = _reduce.passes(n, fanin)
    if cached:
        setup = 1 + _reduce.passes(n * n, fanin)
    else:
        setup = min_chunks(n, n_features, layout) + red_n
    out = {"sammon/setup": setup,
           "sammon/update": n_evals * split,
           "sammon/stress": n_evals * red_n}
    if adaptive:
        out["sammon/step"] = 1 + red_n + 1 + n_rejects
    return out


register_plan(PassPlan(
    name="sammon/fit",
    formula="setup: 1 + R(N^2) cached, else c + R(N); update: E * k; stress: E * R(N); "
            "adaptive step: 2 + R(N) + rejects  (E = evaluations incl. the final stress, "
            "k = chunks of the j sweep, c = chunks of the dn row sums, R(x) = sum passes)",
    phases=_plan_phases,
    notes="setup: distance cache (or row sums of dn) and its sum; update: the gather passes of "
          "eq. 3 (one per chunk of the j sweep); stress: one device sum per evaluated position "
          "set; step (adaptive only): |G|^2 pass and its sum, first step, one step pass per "
          "rejected candidate",
    params=("n", "n_features", "layout", "n_evals", "split", "cached", "n_rejects",
            "adaptive")))


def _check_int(name, v, lo, hi=None):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__}")
    if v < lo or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in {lo}..{hi}"
        raise ValueError(f"{name} must be {rng}, got {v}")
    return int(v)


def _check_float(name, v, positive=True, allow_zero=False):
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    v = float(v)
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite {'non-negative' if allow_zero else 'positive'}"
                         f" number, got {v}")
    return v


def pca_init(X: np.ndarray, n_components: int) -> np.ndarray:
    """Projection of the centred data on its first principal axes (float64, host)."""
    Xc = np.asarray(X, dtype=np.float64)
    Xc = Xc - Xc.mean(axis=0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    Y = Xc @ vt[:n_components].T
    if Y.shape[1] < n_components:  # fewer source dimensions than components: pad with zeros
        Y = np.hstack([Y, np.zeros((Y.shape[0], n_components - Y.shape[1]))])
    return Y


class Sammon:
    """Sammon mapping on the GPU (scikit-learn manner: ``fit``, ``fit_transform``).

    Parameters
    ----------
    n_components : int, 1..4. Target dimension m.
    n_iter : int. Maximum number of update passes (gradient evaluations; with the adaptive
        step a rejected candidate counts as one).
    learning_rate : float. lambda of eq. 4 (mu = 2 lambda / sum_{i != j} dn_ij); with
        ``step="adaptive"`` it only sets the first step before normalisation.
    init : "pca" (default), "random" or an (N, n_components) array of starting positions.
    random_state : int, numpy Generator or None (for init="random").
    layout : "rows" (default) or "columns": how the source coordinates lie in the texture.
    tol : float or None. Adaptive step: stop when an accepted iteration lowers the stress by
        less than ``tol`` relative; fixed step: when the stress changes by less than that.
    step : "adaptive" (default) or "source" (eq. 3 with eq. 4's mu at every iteration).
    cache : "auto" (default), True or False: keep the N x N source distances in a texture
        ("auto": when they take at most 1 GiB and fit the texture limit).
    split : "auto" or an int >= 1: chunks of the j sweep (one blended pass each).
    device : a :class:`shadergpgpu.Device`; default the process-wide one.

    Attributes
    ----------
    embedding_ : (N, n_components) float32 array.
    stress_ : float, Sammon stress (eq. 1) of ``embedding_`` (float32 device sums).
    stress_history_ : list of float, stress of the start and of every accepted iterate.
    n_iter_ : update passes run (evaluations). ``n_rejected_``: rejected candidates.
    mu_ : eq. 4's mu for ``learning_rate``; ``step_`` : last step length used.
    cached_ , split_ : what the fit used.
    timings_ : {"setup_s": seconds for the source distances and their sum, "eval_s": wall
        seconds of each update pass + stress sum + its one-float readback}.
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

    # ---- scikit-learn plumbing ----------------------------------------------------------
    def get_params(self, deep=True):
        return {k: getattr(self, k) for k in ("n_components", "n_iter", "learning_rate", "init",
                                             "random_state", "layout", "tol", "step", "cache",
                                             "split", "device")}

    def set_params(self, **params):
        valid = self.get_params()
        for k, v in params.items():
            if k not in valid:
                raise ValueError(f"invalid parameter {k!r} for Sammon")
            setattr(self, k, v)
        return self

    def __repr__(self):
        return f"Sammon(n_components={self.n_components!r}, n_iter={self.n_iter!r}, " \
               f"step={self.step!r}, layout={self.layout!r})"

    # ---- validation ----------------------------------------------------------------------
    def _validate(self, X):
        m = _check_int("n_components", self.n_components, 1, 4)
        _check_int("n_iter", self.n_iter, 1)
        _check_float("learning_rate", self.learning_rate)
        if self.tol is not None:
            _check_float("tol", self.tol, allow_zero=True)
        if self.layout not in ("rows", "columns"):
            raise ValueError(f"layout must be 'rows' or 'columns', got {self.layout!r}")
        if self.step not in ("adaptive", "source"):
            raise ValueError(f"step must be 'adaptive' or 'source', got {self.step!r}")
        if not (self.cache == "auto" or isinstance(self.cache, bool)):
            raise ValueError(f"cache must be 'auto', True or False, got {self.cache!r}")
        if self.split != "auto":
            _check_int("split", self.split, 1)
        if hasattr(X, "device") and hasattr(X, "layout") and hasattr(X, "get"):
            raise TypeError("X: pass a numpy array (Sammon reads the source points once)")
        X = as_float32(X, "X")
        if X.ndim != 2:
            raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}")
        n, d = X.shape
        if n < 2:
            raise ValueError(f"X must hold at least 2 samples, got {n}")
        if d < 1:
            raise ValueError("X must have at least one feature")
        if not np.isfinite(X).all():
            raise ValueError("X contains NaN or infinity")
        if isinstance(self.init, str):
            if self.init not in ("pca", "random"):
                raise ValueError(f"init must be 'pca', 'random' or an array, got {self.init!r}")
        else:
            Y0 = np.asarray(self.init)
            if Y0.dtype.kind not in "biuf":
                raise TypeError(f"init: expected a real numeric array, got dtype {Y0.dtype}")
            if Y0.shape != (n, m):
                raise ValueError(f"init array must have shape {(n, m)}, got {Y0.shape}")
            if not np.isfinite(Y0).all():
                raise ValueError("init contains NaN or infinity")
        return X, m

    def _start(self, X, m):
        if isinstance(self.init, str) and self.init == "pca":
            return pca_init(X, m)
        if isinstance(self.init, str):
            rng = np.random.default_rng(self.random_state)
            Xc = X.astype(np.float64) - X.mean(axis=0)
            scale = float(np.sqrt((Xc ** 2).sum(axis=1).mean()))
            return rng.standard_normal((X.shape[0], m)) * (scale / math.sqrt(m) or 1.0)
        return np.asarray(self.init, dtype=np.float64)

    # ---- fit ---------------------------------------------------------------------------------
    def fit(self, X, y=None):
        X, m = self._validate(X)
        Y0 = self._start(X, m)
        dev = self.device
        if dev is None:
            from ..engine.device import get_device
            dev = get_device()
        run = _Run(dev, X, Y0, self)
        try:
            run.fit()
        finally:
            run.release()
        return self

    def fit_transform(self, X, y=None):
        return self.fit(X).embedding_


class _Run:
    """Device state of one fit: textures, prepared passes and the step control."""

    def __init__(self, dev, X, Y0, est):
        self.dev, self.est = dev, est
        self._arrays = []
        self._chains = []
        try:
            self._setup(dev, X, Y0, est)
        except BaseException:
            # Setup can fail after allocating textures (e.g. all samples coincide): free them.
            self.release()
            raise

    def _setup(self, dev, X, Y0, est):
        t_setup = time.perf_counter()
        self.eval_s = []
        self._y0 = np.asarray(Y0, dtype=np.float64)
        n, d = X.shape
        self.n, self.m = n, Y0.shape[1]
        order = "row" if est.layout == "rows" else "col"
        self.X = self._keep(dev.array(X, packed=True, order=order, name="X"))
        # Positions, direction and stress terms: one texel per point, near-square wrap.
        w = max(1, math.isqrt(n - 1) + 1)
        if w > dev.max_texture_size:
            w = dev.max_texture_size
        self.pos_layout = Layout(n, self.m, True, "row", w)
        self.vec_layout = Layout(n, 1, True, "row", w)
        Y0 = Y0.astype(np.float32)
        self.Y = [self._new((n, self.m), self.pos_layout) for _ in range(3)]
        self.Y[0].set(Y0)
        self.G = [self._new((n, self.m), self.pos_layout) for _ in range(2)]
        self.S = self._new((n, 1), self.vec_layout)
        self.V = self._new((n, 1), self.vec_layout)
        # Source distances: cached texture or recomputed.
        cache = est.cache
        if cache == "auto":
            cache = 4 * n * n <= CACHE_AUTO_BYTES and self._fits((n, n))
        elif cache and not self._fits((n, n)):
            raise ValueError(f"cache=True: the {n} x {n} distance matrix does not fit the "
                             f"{dev.max_texture_size}-texel texture limit")
        self.cached = bool(cache)
        source = "cached" if self.cached else est.layout
        need = min_chunks(n, d, source)
        self.split = _auto_split(n, d, source) if est.split == "auto" else max(int(est.split),
                                                                                need)
        self.chunks = _chunks(n, self.split)
        self.split = len(self.chunks)
        src_defines = {"SRC_COLS": 1} if order == "col" else {}
        with dev.phase("sammon/setup"):
            if self.cached:
                self.D = self._keep(dev.empty((n, n), packed=True, order="row"))
                dev.run("sammon/dist.frag", self.D, inputs={"X": self.X}, defines=src_defines)
                sum_dn = _reduce.total(dev, self.D)
                src_inputs = {"D": self.D}
                src_defines = {"SRC_CACHED": 1}
            else:
                for k, (a, b) in enumerate(_chunks(n, min_chunks(n, d, est.layout))):
                    dev.run("sammon/rowsum.frag", self.V, inputs={"X": self.X},
                            uniforms={"j0": a, "j1": b}, defines=src_defines, blend=k > 0)
                sum_dn = _reduce.total(dev, self.V)
                src_inputs = {"X": self.X}
        if not sum_dn > 0 or not math.isfinite(sum_dn):
            raise ValueError("X: all samples coincide (every source distance is 0); the Sammon "
                             "stress is undefined")
        self.sum_dn = sum_dn
        self.setup_s = time.perf_counter() - t_setup
        pairs = n * (n - 1)
        self.dm_floor = DM_FLOOR * sum_dn / pairs
        self.mu_source = 2.0 * float(est.learning_rate) / sum_dn
        # The update passes: first chunk writes, the others add (blend).
        self.passes = []
        for k, (a, b) in enumerate(self.chunks):
            inputs = dict(src_inputs, Y=self.Y[0])
            p = dev.prepare("sammon/update.frag", [self.Y[1], self.G[0], self.S], inputs=inputs,
                            uniforms={"j0": a, "j1": b, "keep_prev": 1.0 if k == 0 else 0.0,
                                      "dm_floor": self.dm_floor, "mu": 0.0},
                            defines=src_defines, blend=k > 0)
            self.passes.append(p)
        self.stress_sum = _reduce.SumReduction(dev, self.vec_layout, source=self.S)
        self._chains.append(self.stress_sum)
        self.stress_sum.bind(self.S)

    # ---- helpers ---------------------------------------------------------------------------
    def _fits(self, shape):
        try:
            self.dev.layout(shape, True, "row")
            return True
        except Exception:
            return False

    def _keep(self, a):
        self._arrays.append(a)
        return a

    def _new(self, shape, layout):
        return self._keep(self.dev._new(shape, layout))

    def release(self):
        for c in self._chains:
            c.release()
        self._chains.clear()
        for a in self._arrays:
            a.release()
        self._arrays.clear()

    def evaluate(self, y_in, y_out, g_out, mu):
        """One update (all chunks) from y_in; returns the stress of y_in (one float read)."""
        dev = self.dev
        t0 = time.perf_counter()
        with dev.phase("sammon/update"):
            for p in self.passes:
                p.bind(Y=y_in, OUT0=y_out, OUT1=g_out)
                p.run(mu=float(mu))
        with dev.phase("sammon/stress"):
            self.stress_sum.run()
            s = float(self.stress_sum.result.get()[0])
        self.eval_s.append(time.perf_counter() - t0)
        return s / self.sum_dn

    # ---- the two step rules ------------------------------------------------------------------
    def fit(self):
        est = self.est
        if est.step == "source":
            self._fit_source()
        else:
            self._fit_adaptive()
        est.mu_ = self.mu_source
        est.cached_ = self.cached
        est.split_ = self.split
        est.timings_ = {"setup_s": self.setup_s, "eval_s": list(self.eval_s)}

    def _finish(self, y, history, n_evals, rejected, step):
        est = self.est
        est.embedding_ = y.get().astype(np.float32)
        est.stress_ = float(history[-1])
        est.stress_history_ = [float(v) for v in history]
        est.n_iter_ = n_evals
        est.n_rejected_ = rejected
        est.step_ = float(step)
        if not np.isfinite(est.embedding_).all():  # pragma: no cover - guarded by the clamps
            raise FloatingPointError("the embedding became non-finite; lower learning_rate")

    def _fit_source(self):
        est, mu = self.est, self.mu_source
        cur, nxt = self.Y[0], self.Y[1]
        history = []
        for it in range(int(est.n_iter)):
            e = self.evaluate(cur, nxt, self.G[0], mu)
            history.append(e)
            cur, nxt = nxt, cur
            if est.tol is not None and it > 0 and abs(history[-2] - e) <= est.tol * history[-2]:
                break
        # The stress of the final positions: one more evaluation (its update is discarded).
        history.append(self.evaluate(cur, nxt, self.G[1], 0.0))
        self._finish(cur, history, len(history), 0, mu)

    def _fit_adaptive(self):
        est, dev = self.est, self.dev
        ya, yb, yc = self.Y
        ga, gb = self.G
        # Stress and direction at the start.
        e_a = self.evaluate(ya, yb, ga, 0.0)
        n_evals, history = 1, [e_a]
        with dev.phase("sammon/step"):
            dev.run("sammon/sqnorm.frag", self.V, inputs={"G": ga})
            g2 = _reduce.total(dev, self.V)
        y0 = self._y0
        spread = float(np.sqrt(((y0 - y0.mean(axis=0)) ** 2).sum() / self.n))
        rms_g = math.sqrt(max(g2, 0.0) / self.n)
        step = self.mu_source
        if rms_g > 0 and spread > 0:
            ratio = step * rms_g / spread
            step *= min(max(ratio, STEP_MIN), STEP_MAX) / ratio
        elif rms_g == 0:
            self._finish(ya, history, n_evals, 0, 0.0)
            return
        else:  # every start position equal: any move is a start
            step = 1.0 / max(rms_g, 1e-30)
        with dev.phase("sammon/step"):
            dev.run("engine/saxpy.frag", yb, inputs={"X": ga, "Y": ya}, uniforms={"alpha": step})
        rejected, streak = 0, 0
        while n_evals < est.n_iter:
            # Evaluate candidate yb; its own update (with the grown step) goes to yc.
            grow = GROW if rejected else WARMUP_GROW
            e_b = self.evaluate(yb, yc, gb, step * grow)
            n_evals += 1
            if e_b <= e_a:
                rel = (e_a - e_b) / e_a if e_a > 0 else 0.0
                ya, yb, yc = yb, yc, ya
                ga, gb = gb, ga
                e_a = e_b
                history.append(e_b)
                step *= grow
                streak = 0
                if est.tol is not None and rel < est.tol:
                    break
            else:
                rejected += 1
                streak += 1
                step *= SHRINK
                if streak > 30:
                    break
                with dev.phase("sammon/step"):
                    dev.run("engine/saxpy.frag", yb, inputs={"X": ga, "Y": ya},
                            uniforms={"alpha": step})
        self._finish(ya, history, n_evals, rejected, step)


# ---- float64 reference (numpy) ----------------------------------------------------------------
def reference_terms(Dn, Y, dm_floor=0.0):
    """(stress, direction G) of eq. 1 and eq. 3 for positions Y in float64 (dense N x N)."""
    Y = np.asarray(Y, dtype=np.float64)
    diff = Y[:, None, :] - Y[None, :, :]
    Dm = np.sqrt((diff ** 2).sum(-1))
    mask = Dn > 0
    safe = np.where(mask, Dn, 1.0)
    E = np.where(mask, (Dn - Dm) ** 2 / safe, 0.0).sum() / Dn[mask].sum()
    W = np.where(mask, (Dn - Dm) / (safe * np.maximum(Dm, dm_floor if dm_floor > 0 else 1e-300)),
                 0.0)
    G = W.sum(1)[:, None] * Y - W @ Y
    return E, G


def reference_fit(X, Y0, n_iter, learning_rate=0.5, step="source"):
    """Float64 numpy Sammon with the same rules as :class:`Sammon` (dense; for N <= ~5,000).

    Returns (Y, stress history). ``step="source"``: eq. 3 with eq. 4's mu; ``"adaptive"``:
    the normalised first step and the bold-driver rule of the class.
    """
    X = np.asarray(X, dtype=np.float64)
    sq = (X ** 2).sum(1)
    Dn = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * X @ X.T, 0.0))
    np.fill_diagonal(Dn, 0.0)
    # exact zeros for duplicates
    Dn[Dn < 1e-9 * max(Dn.max(), 1e-300)] = 0.0
    n = len(X)
    sum_dn = Dn.sum()
    mu = 2.0 * learning_rate / sum_dn
    floor = DM_FLOOR * sum_dn / (n * (n - 1))
    Y = np.asarray(Y0, dtype=np.float64).copy()
    E, G = reference_terms(Dn, Y, floor)
    hist = [E]
    if step == "source":
        for _ in range(n_iter):
            Y = Y + mu * G
            E, G = reference_terms(Dn, Y, floor)
            hist.append(E)
        return Y, hist
    spread = np.sqrt(((Y - Y.mean(0)) ** 2).sum() / n)
    rms_g = np.sqrt((G ** 2).sum() / n)
    a = mu
    ratio = a * rms_g / spread
    a *= min(max(ratio, STEP_MIN), STEP_MAX) / ratio
    evals, streak, rejected = 1, 0, 0
    while evals < n_iter:
        Yc = Y + a * G
        Ec, Gc = reference_terms(Dn, Yc, floor)
        evals += 1
        if Ec <= E:
            Y, E, G = Yc, Ec, Gc
            hist.append(E)
            a *= GROW if rejected else WARMUP_GROW
            streak = 0
        else:
            rejected += 1
            a *= SHRINK
            streak += 1
            if streak > 30:
                break
    return Y, hist
