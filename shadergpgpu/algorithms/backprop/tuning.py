"""The backprop's tuning (:class:`BackpropTuning`): the fused schedule's choices that trade speed
only (every choice gives the same weights within the stated bound)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...engine.tuning import Tuning, check_field, count, flag

__all__ = ["BackpropTuning"]


@dataclass(frozen=True)
class BackpropTuning(Tuning):
    """Choices of the fused schedule (:class:`~shadergpgpu.algorithms.backprop.BackpropNet`).

    Parameters
    ----------
    fuse_delta : bool, default True
        Make the first hidden layer's errors inside the first layer's gradient (no backprop
        pass into it) where the layer above is at most one K-quad.
    recompute : bool, default True
        Never store the first hidden layer of a net over at most three inputs: each consumer
        makes it again from the inputs (needs ``fuse_delta``).
    buffers : bool or None, default None (True on a software renderer, False on a GPU)
        The products read the weights and inputs through buffer-texture mirrors (a software
        renderer fetches from buffers faster; on a GPU refreshing them costs more than the
        fetches save).
    ubo : bool or None, default None (False on a software renderer, True on a GPU)
        Take the uniform-block path where the device's windows allow it.
    ubo_forward : bool, default True
        On that path, the forward products of nets off the recompute path read their weights
        from uniform-block windows.
    ubo_min_pairs : int, default 2**18
        The recompute path needs at least this many (hidden unit + 1) x training vector pairs:
        on smaller steps its two block copies per step cost more than the stored activations.
    ubo_chunk : (int, int), default (32, 128)
        The recompute path's gradient pass: the training-vector texels one fragment walks lie
        in this range, chosen so that about ``ubo_fragments`` fragments share the work.
    ubo_fragments : int, default 32768
    ubo_strided : bool, default True
        Those texels are every (chunks)-th one (neighbouring fragments read neighbouring
        texels) rather than one run.
    ubo_newton_forward, ubo_newton_gradient : int, default 1 and 0
        Lanes (0 to 4) of each vec4 sigmoid whose reciprocal is taken by Newton's iteration
        instead of the special-function unit, in the forward and the gradient pass
        (``shaders/algorithms/backprop/sigmoid2.glsl``).
    """

    fuse_delta: bool = flag(True)
    recompute: bool = flag(True)
    buffers: bool | None = flag(None)
    ubo: bool | None = flag(None)
    ubo_forward: bool = flag(True)
    ubo_min_pairs: int = count(1 << 18)
    ubo_chunk: tuple = (32, 128)
    ubo_fragments: int = count(32768, 1)
    ubo_strided: bool = flag(True)
    ubo_newton_forward: int = count(1)
    ubo_newton_gradient: int = count(0)

    SOFTWARE: ClassVar[dict] = {"buffers": True, "ubo": False}
    HARDWARE: ClassVar[dict] = {"buffers": False, "ubo": True}

    def check(self) -> None:
        c = self.ubo_chunk
        check_field(self, "ubo_chunk", isinstance(c, tuple) and len(c) == 2
                    and all(isinstance(v, int) and not isinstance(v, bool) for v in c)
                    and 1 <= c[0] <= c[1], "a tuple (low, high) of integers, 1 <= low <= high")
        for name in ("ubo_newton_forward", "ubo_newton_gradient"):
            check_field(self, name, getattr(self, name) <= 4, "an integer from 0 to 4")
