"""The operations' tuning: :class:`SortTuning` (the bitonic sort's fold passes) and
:class:`ReduceTuning` (the reductions' level vectors, the arg-reductions' comparisons and
fetches)."""
from __future__ import annotations

from dataclasses import dataclass

from ..engine.tuning import Tuning, check_field, count, flag

__all__ = ["ReduceTuning", "SortTuning"]


@dataclass(frozen=True)
class SortTuning(Tuning):
    """Choices of :func:`~shadergpgpu.ops.sort.sort` that trade speed only.

    Parameters
    ----------
    fold_log2 : int, default 3
        A fold pass reads groups of ``2**fold_log2`` texels and runs up to ``fold_log2``
        stages of texel stride (1 to 5; the shader's define ``GT`` is the group size): fewer,
        heavier passes as it grows.
    """

    fold_log2: int = count(3, 1)

    def check(self) -> None:
        check_field(self, "fold_log2", self.fold_log2 <= 5, "an integer from 1 to 5")


@dataclass(frozen=True)
class ReduceTuning(Tuning):
    """Choices of the reductions (:mod:`shadergpgpu.ops.reduce`) that trade speed only.

    Parameters
    ----------
    scan_strict : bool, default True
        First arg-reduction levels over row-order sources compare keys only (each lane meets
        its candidates in increasing index order); False forces the full (key, index)
        comparison everywhere.
    arg_fetch_batch : int, default 0
        Texels an arg level fetches before comparing them (0: 4 where the fan-in allows, else
        1).
    level_wrap : int, default 128
        Texels per texture row of the partial-result vectors between levels (one-texel-high
        render targets shade poorly on GPUs).
    """

    scan_strict: bool = flag(True)
    arg_fetch_batch: int = count(0)
    level_wrap: int = count(128, 1)
