"""Comparing a device result with its reference, with a message that says where it is wrong.

``assert_close`` is elementwise: ``|actual - expected| <= atol + rtol * |expected|`` at every
index. ``assert_within`` is elementwise against a bound per element (an operation's stated
error bound, e.g. ``gamma(K) * (|A| @ |B|)``): ``|actual - expected| <= bound``. ``assert_rel_close`` is the bound that the float32 products state: the relative
Frobenius error ``||actual - expected|| / ||expected|| <= tol``. Both refuse a shape that
differs from the reference's, and both say, on failure, what was compared (``what``), the
largest absolute error with its index, the actual and expected values there, and how many
elements are outside the elementwise bound. The reference is taken in float64.

    from tests.reference import assert_close, assert_rel_close
    assert_close(out.get(), x * y, rtol=1e-6, atol=1e-7, what="saxpy")
    assert_rel_close(sgemm(A, B, device=dev), A @ B, tol=1e-5, what=(M, N, K))
"""
from __future__ import annotations

import numpy as np

__all__ = ["assert_close", "assert_rel_close", "assert_within"]


def _pair(actual, expected, what):
    a = np.asarray(actual, dtype=np.float64)
    e = np.asarray(expected, dtype=np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"{_label(what)}shape {a.shape} differs from the reference's "
                             f"{e.shape}")
    return a, e


def _label(what) -> str:
    if what is None or what == "":
        return ""
    return f"{what if isinstance(what, str) else repr(what)}: "


def _where(a, e, rtol, atol) -> str:
    """The largest absolute error, its index and values, and the count outside the bound."""
    if a.size == 0:
        return "no elements"
    err = np.abs(a - e)
    nan = np.isnan(a) != np.isnan(e)
    if nan.any():
        i = np.unravel_index(int(np.argmax(nan)), a.shape)
        return (f"{int(nan.sum())} NaN where the reference has none (or the reverse), first "
                f"at {tuple(int(k) for k in i)}: actual {float(a[i])!r}, expected {float(e[i])!r}")
    err = np.where(np.isnan(err), 0.0, err)               # NaN in both: equal
    i = np.unravel_index(int(np.argmax(err)), a.shape)
    bad = int(np.sum(err > atol + rtol * np.abs(e)))
    rel = err[i] / abs(e[i]) if e[i] != 0 else np.inf
    return (f"max abs error {err[i]:.3g} (relative {rel:.3g}) at index "
            f"{tuple(int(k) for k in i)}: actual {float(a[i])!r}, expected {float(e[i])!r}; "
            f"{bad} of {a.size} elements outside atol={atol:g} + rtol={rtol:g} * |expected|")


def assert_close(actual, expected, *, rtol: float, atol: float, what=None) -> None:
    """Elementwise: ``|actual - expected| <= atol + rtol * |expected|`` everywhere (NaN equal to
    NaN; an infinity equal only to the same infinity)."""
    a, e = _pair(actual, expected, what)
    both_inf = np.isinf(a) & np.isinf(e) & (np.sign(a) == np.sign(e))
    with np.errstate(invalid="ignore"):
        ok = both_inf | (np.isnan(a) & np.isnan(e)) | \
            (np.abs(a - e) <= atol + rtol * np.abs(e))
    if not ok.all():
        raise AssertionError(_label(what) + _where(np.where(both_inf, 0.0, a),
                                                   np.where(both_inf, 0.0, e), rtol, atol))


def assert_rel_close(actual, expected, *, tol: float, what=None) -> float:
    """Relative Frobenius error ``||actual - expected|| / ||expected|| <= tol``; returns the
    error. The message also gives the worst element (with an elementwise bound of ``tol``
    relative to the reference's largest magnitude)."""
    a, e = _pair(actual, expected, what)
    scale = float(np.linalg.norm(e))
    diff = float(np.linalg.norm(a - e))
    err = diff / scale if scale > 0 else (0.0 if diff == 0 else np.inf)
    if not err <= tol:                                      # NaN fails too
        atol = tol * float(np.max(np.abs(e))) if e.size else 0.0
        raise AssertionError(f"{_label(what)}relative error {err:.3g} > {tol:g}; "
                             + _where(a, e, 0.0, atol))
    return err


def assert_within(actual, expected, bound, *, what=None) -> None:
    """Elementwise ``|actual - expected| <= bound``, ``bound`` an array of the reference's
    shape (or one that broadcasts to it): an operation's stated error bound per element. NaN
    fails unless both are NaN. The message gives the element farthest outside its bound."""
    a, e = _pair(actual, expected, what)
    b = np.broadcast_to(np.asarray(bound, dtype=np.float64), e.shape)
    err = np.abs(a - e)
    with np.errstate(invalid="ignore"):
        ok = (err <= b) | (np.isnan(a) & np.isnan(e)) | (np.isinf(a) & (a == e))
    if ok.all():
        return
    excess = np.where(ok, -np.inf, np.where(np.isnan(err), np.inf, err - b))
    i = np.unravel_index(int(np.argmax(excess)), e.shape)
    raise AssertionError(
        f"{_label(what)}{int((~ok).sum())} of {e.size} elements outside their bound; worst at "
        f"{tuple(int(k) for k in i)}: actual {float(a[i])!r}, expected {float(e[i])!r}, error "
        f"{float(err[i]):.3g} against a bound of {float(b[i]):.3g}")
