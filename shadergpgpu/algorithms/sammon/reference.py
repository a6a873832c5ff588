"""The float64 numpy reference (dense N x N): the stress and direction of eq. 1 and 3
(:func:`reference_terms`) and a whole fit with the estimator's step rules
(:func:`reference_fit`)."""
from __future__ import annotations

import numpy as np

from . import step as _step
from .scaling import data_scale

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
    the normalised first step (eq. 4's mu of X / scale, as :meth:`Sammon.fit` takes it) and
    the bold-driver rule of the class.
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
    if step != "source":
        # the class applies learning_rate to X / scale_ (scale invariant): in the units of X
        # eq. 4's mu times scale^2
        mu *= data_scale(X)[1] ** 2
    floor = _step.DM_FLOOR * sum_dn / (n * (n - 1))
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
    a *= min(max(ratio, _step.STEP_MIN), _step.STEP_MAX) / ratio
    evals, streak, rejected = 1, 0, 0
    while evals < n_iter:
        Yc = Y + a * G
        Ec, Gc = reference_terms(Dn, Yc, floor)
        evals += 1
        if Ec <= E:
            Y, E, G = Yc, Ec, Gc
            hist.append(E)
            a *= _step.GROW if rejected else _step.WARMUP_GROW
            streak = 0
        else:
            rejected += 1
            a *= _step.SHRINK
            streak += 1
            if streak > 30:
                break
    return Y, hist
