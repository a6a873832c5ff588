"""The error bounds of ``a + b`` reductions (see the package's numerical contract).

``K``, the most float32 roundings one term goes through (:func:`rounding_depth`), and the bound
``gamma(K) * sum(|x|) + ftz`` on a sum (:func:`gamma`, :func:`error_bound`).
"""
from __future__ import annotations

from .levels import DEFAULT_FANIN, check_fanin, axis_passes, level_sizes

#: float32's unit roundoff (round to nearest): ``fl(a + b) = (a + b)(1 + d)``, ``|d| <= U``
U = 2.0 ** -24
#: the smallest normal float32; smaller (subnormal) operands and results of float arithmetic
#: are flushed to zero on GPUs and llvmpipe
TINY = 2.0 ** -126


def rounding_depth(texels: int | None = None, fanin: int = DEFAULT_FANIN,
                   length: int | None = None, mapped: bool = False) -> int:
    """``K``: the most float32 roundings one term of an ``a + b`` reduction goes through.

    Whole array over ``texels`` texels of the input's layout: ``L (F - 1) + 2`` with
    ``L = len(level_sizes(texels, F))`` (each level adds up to ``F`` values per lane one after
    the other onto the identity, the last level folds the four lanes in two steps). Along an
    axis of ``length`` elements: ``axis_passes(length, F) * (F - 1)``. ``mapped``: the map
    rounds once more (``x * y`` of :data:`DOT` and :data:`NORM`): ``+ 1``.
    """
    fanin = check_fanin(fanin)
    if (texels is None) == (length is None):
        raise ValueError("give texels (a whole-array reduction) or length (along an axis)")
    if length is not None:
        k = axis_passes(length, fanin) * (fanin - 1)
    else:
        k = len(level_sizes(int(texels), fanin)) * (fanin - 1) + 2
    return k + int(bool(mapped))


def gamma(k: int) -> float:
    """``k u / (1 - k u)``, ``u = 2**-24``: the relative error bound of ``k`` roundings."""
    return k * U / (1.0 - k * U)


def error_bound(abs_sum: float, n: int, k: int) -> float:
    """The bound ``gamma(k) * abs_sum + (1 + gamma(k)) * 2 n * 2**-126`` on ``|s - exact|`` for
    a float32 ``a + b`` reduction of ``n`` terms whose magnitudes add to ``abs_sum``, each
    through at most ``k`` roundings (:func:`rounding_depth`); the second term allows for
    subnormal inputs and partial sums flushed to zero."""
    g = gamma(k)
    return g * float(abs_sum) + (1.0 + g) * 2.0 * int(n) * TINY
