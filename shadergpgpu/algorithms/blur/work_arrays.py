"""The work-array helpers the blur's pass builders share, and what they tell a recording.

The pass builders run on the device itself, live or inside a capture
(:mod:`shadergpgpu.engine.capture`: a recipe records them with ``capture(dev, draw=False,
own_arrays=True)``), so they need not know which: :func:`release` gives work arrays back (inside
a capture that owns them the release is left to the capture, the recipe's work arrays), and
:func:`tag_coefficients` marks the passes of a recursive line pass with the sigma they filter
by (a recipe sets their coefficients again when sigma changes).
"""
from __future__ import annotations

from ...engine.arrays import DeviceArray
from ...engine.capture import capturing

__all__ = ["like", "release", "tag_coefficients"]


def release(dev, arrs) -> None:
    """Release work arrays as the blur goes (an open capture that owns them keeps them)."""
    for a in arrs:
        a.release()


def like(dev, x: DeviceArray, gray: bool, shape=None) -> DeviceArray:
    """A new array for ``x``'s image (``shape``: another shape of its kind)."""
    shape = tuple(x.shape) if shape is None else shape
    return dev.empty(shape) if gray else dev.empty_image(shape)


def tag_coefficients(dev, coefficients) -> None:
    """Mark the passes recorded from now on with ``coefficients`` = (0: sigma_y / 1: sigma_x,
    steps per line) of a line pass (None: no filter coefficients); a no-op when nothing
    records."""
    cap = capturing(dev)
    if cap is not None:
        cap.tag(coefficients)


# the names the pass builders import
_like, _release = like, release
