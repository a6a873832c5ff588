"""libsvm's rules computed on the host in float64: the analytic two-variable step (the host-step
path of the solver) and the bias rho from the final gradient.
"""
from __future__ import annotations

import numpy as np

TAU = 1e-12


def two_variable_step(ai, aj, yi, yj, Gi, Gj, Kij, C):
    """libsvm's analytic solution of the two-variable subproblem (RBF: K_ii = K_jj = 1)."""
    Ci = Cj = C
    if yi != yj:
        quad = 2.0 + 2.0 * (-Kij)
        quad = quad if quad > 0 else TAU
        delta = (-Gi - Gj) / quad
        d = ai - aj
        ai += delta
        aj += delta
        if d > 0:
            if aj < 0:
                aj, ai = 0.0, d
        else:
            if ai < 0:
                ai, aj = 0.0, -d
        if d > Ci - Cj:
            if ai > Ci:
                ai, aj = Ci, Ci - d
        else:
            if aj > Cj:
                aj, ai = Cj, Cj + d
    else:
        quad = 2.0 - 2.0 * Kij
        quad = quad if quad > 0 else TAU
        delta = (Gi - Gj) / quad
        s = ai + aj
        ai -= delta
        aj += delta
        if s > Ci:
            if ai > Ci:
                ai, aj = Ci, s - Ci
        else:
            if aj < 0:
                aj, ai = 0.0, s
        if s > Cj:
            if aj > Cj:
                aj, ai = Cj, s - Cj
        else:
            if ai < 0:
                ai, aj = 0.0, s
    return ai, aj


def libsvm_rho(alpha, G, y, C):
    """libsvm's bias: mean of y G over free alphas, else the middle of the feasible range."""
    yG = y * G
    upper = alpha >= C
    lower = alpha <= 0
    free = ~upper & ~lower
    if free.any():
        return float(yG[free].mean())
    ub_set = (upper & (y < 0)) | (lower & (y > 0))
    lb_set = (upper & (y > 0)) | (lower & (y < 0))
    ub = yG[ub_set].min() if ub_set.any() else np.inf
    lb = yG[lb_set].max() if lb_set.any() else -np.inf
    return float((ub + lb) / 2)
