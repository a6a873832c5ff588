"""The blur's tuning (:class:`BlurTuning`): how prepared passes are handed to the GPU and how much
texture memory the recipe cache keeps."""
from __future__ import annotations

from dataclasses import dataclass

from ...engine.tuning import Tuning, count, flag

__all__ = ["BlurTuning"]


@dataclass(frozen=True)
class BlurTuning(Tuning):
    """Choices of :func:`~shadergpgpu.algorithms.blur.gaussian_blur` that trade speed only.

    Parameters
    ----------
    flush_passes : bool, default True
        A prepared recipe hands each pass to the GPU as soon as it is drawn (glFlush): a driver
        may otherwise keep the commands until the caller waits for the result, so that the GPU
        starts only after the host has drawn every pass. Not while timing (each pass is waited
        for there).
    recipe_cache_bytes : int, default 1.25 GiB
        Work arrays the device's recipe cache keeps (least recently used first out; a recipe
        larger than this runs once and is released). Keeping them spares allocating a large
        image's planes and summaries again on every call: a 4096 x 4096 blur holds about 1 GiB.
    """

    flush_passes: bool = flag(True)
    recipe_cache_bytes: int = count(1280 << 20)
