"""The SVM's tuning (:class:`SvmTuning`): the kernels' indexing and where the second-order gain
is computed."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...engine.tuning import Tuning, flag

__all__ = ["SvmTuning"]


@dataclass(frozen=True)
class SvmTuning(Tuning):
    """Choices of :class:`~shadergpgpu.algorithms.svm.SVC` that trade speed only (the same
    fit either way).

    Parameters
    ----------
    direct : bool or None, default None (True on a software renderer, False on a GPU)
        The selection, objective, update and step kernels read the fragment's own texels at
        its pixel and the 1-D vectors' elements at ``row_texel()`` (the DIRECT define) instead
        of through the accessors, which divide by the shape uniforms: a CPU renderer runs
        vector integer division lane by lane.
    fuse_gain : bool, default False
        The second-order selection computes the gain inside the arg-min's first level (one
        dependent pass less per iteration) rather than by an objective pass of its own, where
        the level's loop fits the device's loop cap. The level's few fragments then walk
        FANIN kernel rows each: slower on a GPU, a little faster on llvmpipe.
    """

    direct: bool | None = flag(None)
    fuse_gain: bool = flag(False)

    SOFTWARE: ClassVar[dict] = {"direct": True}
    HARDWARE: ClassVar[dict] = {"direct": False}
