"""The exact method's passes: the separable FIR filter and its pass count.

Exact method
------------
Two passes (rows, then columns) of the FIR filter truncated at 4 sigma, weights in a small
texture; the border is applied to the tap index. Cost grows linearly with sigma. The tap loop
runs over the distances 0..r, each iteration adding the symmetric pair of taps (one weight fetch
for two taps; where the radius is within a line's length, the usual case, the border index needs
no division). It is a declared split range: on a device with a loop cap (Mesa's llvmpipe stops
a fragment's loops after 65,535 iterations without an error) a long kernel is cut across several
passes added by blending (grayscale rows from sigma ~4,100, other axes from ~16,400 at the
default cap), so the result stays exact; the pass plan ``blur/exact`` counts them.
"""
from __future__ import annotations

import numpy as np

from .coefficients import gaussian_weights
from .kernels import FIR
from .options import BORDER_CODE, TRUNCATE
from .work_arrays import like, release


def exact_radius(sigma: float) -> int:
    """Taps on each side of the exact filter (scipy's ``int(truncate * sigma + 0.5)``)."""
    return int(TRUNCATE * float(sigma) + 0.5)


def _weights_array(dev, sigma):
    half = gaussian_weights(sigma).astype(np.float32)
    cap = 4
    while cap < len(half):
        cap *= 2
    buf = np.zeros((1, cap), dtype=np.float32)
    buf[0, : len(half)] = half
    return dev.array(buf, name="weights"), len(half) - 1


def _fir_kernel(axis: int, gray: bool):
    return FIR["V"] if axis == 1 else FIR["H_GRAY"] if gray else FIR["H"]


def exact_blur(dev, x, gray, sy, sx, border):
    b = {"BORDER": BORDER_CODE[border]}
    with dev.scope() as s:
        wx, rx = _weights_array(dev, sx)
        s.track(wx)
        tmp = s.track(like(dev, x, gray))
        with dev.phase("exact.H"):
            dev.run(_fir_kernel(0, gray), tmp, inputs={"X": x, "W": wx}, uniforms={"R": rx},
                    defines=b)
        wy, ry = _weights_array(dev, sy)
        s.track(wy)
        out = like(dev, x, gray)
        try:
            with dev.phase("exact.V"):
                dev.run(FIR["V"], out, inputs={"X": tmp, "W": wy}, uniforms={"R": ry},
                        defines=b)
        except BaseException:
            release(dev, [out])
            raise
    return out


def exact_passes(sigma: float, axis: int, gray: bool, loop_cap: int | None,
                 float_blending: bool = True) -> int:
    """Passes the exact filter draws along one axis: 1 unless the tap loop exceeds the cap;
    then one per slice, and where float blending is missing each slice after the first adds
    into the output by ping-pong (3 passes: draw, combine, copy back)."""
    k = _fir_kernel(axis, gray)
    n = max(1, len(k.slices({}, {"R": exact_radius(sigma)}, k.defines, loop_cap)))
    return n if float_blending else 1 + 3 * (n - 1)
