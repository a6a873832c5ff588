"""The SMO solver's choices from the sizes and limits: the points stored per problem
(:func:`padded_count`), whether the device step walks K_ij's features too (:func:`walk_fits`), and
whether the second-order gain is computed inside the arg-min's first level (:func:`gain_fused`,
as :attr:`SvmTuning.fuse_gain <.tuning.SvmTuning>` asks). The pass plan ``svm/smo`` reads them
(:mod:`shadergpgpu.analysis.plans.svm`).
"""
from __future__ import annotations

from ...engine.limits import ceil_div
from ...ops import reduce as _reduce

#: points per problem are padded up to a multiple of this (padding points have label 0 and take
#: part in nothing), so problems of nearby sizes share textures and pass plans
PAD_POINTS = 256


def padded_count(n: int) -> int:
    """Points stored per problem: n plus at least 4 padding points (the last texel of the
    alpha vector holds the device step's solver state), rounded up to PAD_POINTS."""
    return ceil_div(n + 4, PAD_POINTS) * PAD_POINTS


def walk_fits(n_features: int, loop_cap) -> bool:
    """Whether the first-order device step's update walks K_ij's features too (2 walks)."""
    return loop_cap is None or 2 * ceil_div(int(n_features), 4) <= loop_cap


def gain_fused(n_pad: int, n_features: int, fanin: int, loop_cap: int | None,
               working_set: str = "second-order", fuse: bool = False) -> bool:
    """Whether the second-order selection computes the gain inside the arg-min's first level
    (asked by ``fuse``, :attr:`SvmTuning.fuse_gain <.tuning.SvmTuning>`; that level's FANIN x
    (feature texels + 1) steps fit the cap, and it is not the final level, which writes the
    results the level reads)."""
    steps = int(fanin) * (ceil_div(int(n_features), 4) + 1)
    return (fuse and working_set == "second-order" and
            _reduce.passes(n_pad, fanin) > 1 and (loop_cap is None or steps <= loop_cap))
