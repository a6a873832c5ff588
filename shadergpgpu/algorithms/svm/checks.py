"""What float32 and the device can hold, checked on the host before any device work: the RBF
kernel's range for the data and gamma (:func:`check_rbf_range`) and the size of one binary
problem against the texture limit (:func:`check_fits`).
"""
from __future__ import annotations

import math

import numpy as np

from ...engine.errors import TooLargeError
from ...engine.layout import Layout
from ...engine.limits import ceil_div
from ...ops import rbf as _rbf
from .choices import padded_count

F32_MAX = float(np.finfo(np.float32).max)
#: float32's smallest normal number: a GPU may flush anything smaller to 0
_F32_TINY = float(np.finfo(np.float32).tiny)
#: exp(-t) is 0 in float32 for t past this (exp(-104) < 2^-149, the smallest subnormal)
_EXP_ZERO = 104.0
#: most error the flushing of tiny squared distances may add to a kernel value
#: (gamma x n_features x _F32_TINY): about the float32 rounding of the kernel itself
_UNDERFLOW_TOL = 2.0 ** -20


def _scale_hint(gamma_name):
    return ("scale X (with gamma='scale' the kernel does not change when X is scaled)"
            if gamma_name is None else f"scale X, or {gamma_name} with it")


def check_rbf_range(X, gamma: float, gamma_name: str | None = None) -> None:
    """Refuse data ``X`` (float64 host array) and ``gamma`` whose RBF kernel the device,
    computing ``exp(-gamma sum_k (x_k - y_k)^2)`` in float32, cannot evaluate: values beyond
    float32's range; squared distances past float32's largest value (they overflow to inf)
    unless gamma makes every such pair's kernel 0 anyway (gamma x 3.4e38 >= 104); gamma
    itself outside float32's normal range where it matters (a GPU flushes subnormal numbers
    to 0); and squared distances below float32's smallest normal number (flushed to 0) where
    gamma weighs them (gamma x n_features x 1.2e-38 > 2^-20). ``gamma_name``: the parameter
    that set gamma (None: gamma="scale", derived from X's variance, so that scaling X leaves
    the kernel unchanged). Bounds from the data in
    O(n_samples n_features): the largest squared distance is at most the sum over features
    of their squared ranges. Raises ValueError naming X (and the gamma parameter)."""
    hi = X.max(axis=0).astype(np.float64)
    lo = X.min(axis=0).astype(np.float64)
    n_feat = X.shape[1]
    big = float(max(hi.max(), -lo.min()))
    if big > F32_MAX:
        raise ValueError(f"X: values up to {big:.3g} are beyond float32's range "
                         f"(+-{F32_MAX:.4g}); the device holds X in float32")
    span = hi - lo
    top = float(span.max())
    d2_max = top * top * float(((span / top) ** 2).sum()) if top > 0 else 0.0
    fit = math.sqrt(F32_MAX / n_feat) / 2
    if d2_max >= F32_MAX and gamma * F32_MAX < _EXP_ZERO:
        raise ValueError(
            f"X: squared distances between samples reach {d2_max:.3g}, beyond float32's "
            f"largest value {F32_MAX:.4g}: the device's RBF kernel would overflow (inf, then "
            f"NaN) where gamma = {gamma:.3g} still gives pairs a weight. With {n_feat} "
            f"feature(s) every squared distance fits float32 when |X| <= {fit:.3g} "
            f"(sqrt(3.4e38 / n_features) / 2); {_scale_hint(gamma_name)}")
    if gamma_name is None:
        _check_underflow(gamma, n_feat, big, gamma_name)
    if gamma > F32_MAX:
        who = f"{gamma_name}={gamma:.3g}" if gamma_name else \
            f"gamma = {gamma:.3g} (from X's variance {1.0 / (gamma * n_feat):.3g})"
        raise ValueError(f"X: {who} is beyond float32's range ({F32_MAX:.4g}); the "
                         f"device's kernel would be NaN. {_scale_hint(gamma_name)}")
    if gamma < _F32_TINY and gamma * d2_max > _UNDERFLOW_TOL:
        who = f"{gamma_name}={gamma:.3g}" if gamma_name else \
            f"gamma = {gamma:.3g} (from X's variance {1.0 / (gamma * n_feat):.3g})"
        raise ValueError(f"X: {who} is below float32's smallest normal number "
                         f"{_F32_TINY:.3g}, which a GPU flushes to 0 (every kernel value "
                         f"1), while the squared distances of X reach {d2_max:.3g}; "
                         f"{_scale_hint(gamma_name)}")
    _check_underflow(gamma, n_feat, big, gamma_name)


def _check_underflow(gamma, n_feat, big, gamma_name):
    if gamma * n_feat * _F32_TINY > _UNDERFLOW_TOL:
        most = _UNDERFLOW_TOL / (n_feat * _F32_TINY)
        who = f"{gamma_name}={gamma:.3g}" if gamma_name else \
            f"gamma = {gamma:.3g} (from X's variance {1.0 / (gamma * n_feat):.3g})"
        raise ValueError(
            f"X: squared distances below float32's smallest normal number "
            f"{_F32_TINY:.3g} (|X| is at most {big:.3g} here) are flushed to 0 on the device, "
            f"while {who} weighs them: the kernel's exponent gamma x d^2 could be off by up "
            f"to {gamma * n_feat * _F32_TINY:.3g}. gamma must be at most {most:.3g} "
            f"(2^-20 / (n_features x 1.2e-38)) for X in float32; {_scale_hint(gamma_name)}")


def check_fits(dev, n_points: int, n_features: int) -> None:
    """Refuse, before any allocation, a binary problem of ``n_points`` training points whose
    device arrays (the data in two layouts, the per-point vectors) would not fit ``dev``'s
    texture limit; ValueError naming X."""
    mx = dev.max_texture_size
    npad = padded_count(n_points)
    try:
        for order in ("col", "row"):
            Layout(npad, int(n_features), True, order, mx)
        if _rbf.VECTOR_WRAP is not None:
            Layout.wrapped_vector(npad, _rbf.VECTOR_WRAP, mx)
        else:
            Layout(1, npad, True, "row", mx)
    except TooLargeError:
        texels = npad * ceil_div(int(n_features), 4)
        raise ValueError(
            f"X: {n_points} samples x {n_features} features do not fit this device: one "
            f"binary problem's training data (its points padded to {npad}) take {texels} "
            f"texels per copy, more than the {mx} x {mx} = {mx * mx} texels of one texture "
            f"(the device's max_texture_size {mx}); use fewer samples or features") from None
