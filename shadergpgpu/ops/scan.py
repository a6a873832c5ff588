"""Prefix sums (scans) by Hillis-Steele steps: one fragment pass per doubling offset.

    >>> import numpy as np
    >>> from shadergpgpu.ops.scan import cumsum
    >>> cumsum(np.arange(1.0, 6.0))
    array([ 1.,  3.,  6., 10., 15.], dtype=float32)
    >>> cumsum(np.arange(1.0, 6.0), exclusive=True)
    array([ 0.,  1.,  3.,  6., 10.], dtype=float32)

Pass ``k`` (offset ``d = 2**k``) writes ``y[j] = x[j] + x[j - d]`` along the scanned axis, so a
scan of length ``L`` takes ``max(1, ceil(log2 L))`` passes between two ping-pong arrays, with no
loop in the shader (no loop budget concern). An exclusive scan reads the input shifted by one in
its first pass (no extra pass). Error bound (rounding, subnormals flushed to zero, overflow):
:func:`cumsum`.
"""
from __future__ import annotations

import math

import numpy as np

from ..engine.arrays import DeviceArray
from ..engine.kernels import In, declare
from ..engine.layout import Layout
from ..engine.validation import pick_device
from .elementwise import host_array

__all__ = ["cumsum", "scan_passes", "STEP", "PACKED_STEP"]

PACKED_STEP = declare("ops/scan/step_packed.frag", inputs={"X": In(like="OUT")},
                      uniforms={"t0": "int", "l0": "int", "t1": "int", "l1": "int"},
                      name="ops/scan/step_packed")
STEP = declare("ops/scan/step.frag", inputs=("X",), uniforms={"offset": "int", "shift": "int"},
               defines={"AXIS": 1, "FLAT": 0}, name="ops/scan/step")


def scan_passes(length: int) -> int:
    """Passes of a scan of ``length`` elements along the axis: ``max(1, ceil(log2 length))``."""
    return max(1, math.ceil(math.log2(length))) if length > 1 else 1


def cumsum(x, axis=None, exclusive: bool = False, device=None):
    """Cumulative sum of a 1-D or 2-D array, like ``numpy.cumsum``.

    Parameters
    ----------
    x : array_like or DeviceArray
        A 1-D or 2-D array. float64 is rounded to float32; integer arrays must lie within
        +-2**24; complex and empty arrays are refused.
    axis : {None, 0, 1, -1}, default=None
        None: the array flattened in row-major order (result 1-D); 1 or -1: along each row
        of a 2-D array (-1 or 0 for a 1-D array); 0: down each column of a 2-D array.
    exclusive : bool, default=False
        False: ``y[j] = x[0] + ... + x[j]``; True: ``y[j] = x[0] + ... + x[j-1]``
        (``y[0] = 0``).
    device : Device or None, default=None
        The device to run on; None: ``x``'s device, else the thread's default device.

    Returns
    -------
    numpy.ndarray or DeviceArray
        A float32 numpy array for a host ``x``; a new DeviceArray for a DeviceArray (the
        caller releases it).

    Raises
    ------
    ValueError
        A released or empty array, one of more than 2 dimensions, an axis out of range,
        values float32 cannot hold.
    TypeError
        ``exclusive`` not a bool, ``axis`` not None or an int, a complex array.

    Accuracy
    --------
    Pass ``k`` adds two partial sums of disjoint runs, so each output is a sum of float32
    terms along a binary tree of depth ``P = scan_passes(L) = max(1, ceil(log2 L))`` (``L`` the
    scanned length), and with
    ``u = 2**-24``, ``gamma(P) = P u / (1 - P u)``, ``S_j`` the exact sum of the float32 terms
    of ``y[j]`` (``x[0..j]``; exclusive: ``x[0..j-1]``) and ``A_j`` the sum of their magnitudes:

        ``|y[j] - S_j| <= gamma(P) * A_j + (1 + gamma(P)) * (2j + 1) * 2**-126``

    The second term is subnormals: GPUs and llvmpipe flush subnormal operands and results of
    float additions to zero, so a subnormal input counts as 0 (the texel-by-texel passes add
    ``+ 0`` where the offset reaches before the start, so even ``cumsum([1e-45])`` is
    ``[0.0]``) and a subnormal partial sum is flushed; each loses less than ``2**-126``.
    numpy's sequential float32 ``cumsum`` has the bound ``gamma(j) * A_j``. Integer-valued
    inputs whose partial sums stay below 2**24 are summed exactly. Overflow: a partial sum
    beyond float32's range becomes +-inf and stays
    non-finite (NaN where infinities of both signs meet), so a finite output always meets the
    bound. For an all-positive input, with ``T = 2**128 (1 - 2**-25)`` (float32's overflow
    threshold), ``y[j]`` is +inf wherever ``S_j (1 - gamma(P)) >= T`` and finite wherever
    ``S_j (1 + gamma(P)) < T``; numpy overflows at the same place up to its own rounding. inf
    and NaN inputs propagate as in numpy.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> sg.cumsum(np.arange(1.0, 6.0))
    array([ 1.,  3.,  6., 10., 15.], dtype=float32)
    >>> sg.cumsum(np.ones((2, 3)), axis=1, exclusive=True)
    array([[0., 1., 2.],
           [0., 1., 2.]], dtype=float32)
    """
    if not isinstance(exclusive, (bool, np.bool_)):
        raise TypeError(f"exclusive must be a bool, got {exclusive!r}")
    dev = pick_device(device, [x])
    on_device = isinstance(x, DeviceArray)
    if on_device:
        if x.released:
            raise ValueError("cumsum: x has been released")
        if x.ndim not in (1, 2):
            raise ValueError(f"cumsum: x must be 1-D or 2-D, got shape {x.shape}")
        shape = x.shape
    else:
        a = host_array(x, "cumsum: x")
        shape = a.shape
    if axis is not None and not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
        raise TypeError(f"cumsum: axis must be None or an int, got {axis!r}")
    nd = len(shape)
    if axis is not None:
        if not -nd <= axis < nd:
            raise ValueError(f"cumsum: axis {axis} is out of range for a {nd}-D array")
        axis = int(axis) % nd
    if axis is None:
        out_shape, oaxis = (int(np.prod(shape)),), 1
    else:
        out_shape, oaxis = tuple(shape), (1 if nd == 1 else axis)
    r, c = (1, out_shape[0]) if len(out_shape) == 1 else out_shape
    length = c if oaxis == 1 else r
    want = None
    with dev.scope() as s:
        if on_device:
            src = x
        else:  # flattened on the host (free) and uploaded in the layout of the passes
            src = s.alloc(_work_layout(dev, out_shape), out_shape).set(a.reshape(out_shape))
            nd = len(out_shape)
        if on_device:                # the result keeps the input's layout (or the default)
            want = src.layout if tuple(out_shape) == tuple(shape) else dev.layout(out_shape)
        lay = _work_layout(dev, out_shape)  # packed row order, read texel by texel
        n = scan_passes(length)
        pp = dev.pingpong(out_shape, layout=lay)
        cur = src
        try:
            for k in range(n):
                dst = pp.back
                if k == n - 1 and want is not None and want != lay:
                    dst = s.track(dev.alloc(want, out_shape))
                _step(dev, cur, dst, 1 << k, int(bool(exclusive)) if k == 0 else 0, oaxis,
                      k == 0 and axis is None and nd == 2)
                cur = pp.swap().front if dst is pp.back else s.keep(dst)
            result = cur if on_device else cur.get()
        finally:
            for arr in (pp.front, pp.back):
                if arr is not cur or not on_device:
                    arr.release()
        return result


def _step(dev, src, dst, offset: int, shift: int, axis: int, flat: bool) -> None:
    """One pass: texel by texel when both arrays are the same packed row-order layout."""
    lay = dst.layout
    if axis == 1 and not flat and src.layout == lay and lay.packed and lay.order == "row":
        t0, l0 = divmod(shift, lay.pack)
        t1, l1 = divmod(shift + offset, lay.pack)
        dev.run(PACKED_STEP, dst, inputs={"X": src},
                uniforms={"t0": t0, "l0": l0, "t1": t1, "l1": l1})
    else:
        dev.run(STEP, dst, inputs={"X": src}, uniforms={"offset": offset, "shift": shift},
                defines={"AXIS": axis, "FLAT": int(flat)})


def _work_layout(dev, shape) -> Layout:
    """Packed row-order layout of the passes; a long vector is wrapped into a square-ish
    texture (a texture one texel high rasterises slowly on tiled software renderers)."""
    lay = dev.layout(shape)
    if len(shape) == 1 and lay.n_texels > 4096:
        side = 1 << math.ceil(math.log2(math.isqrt(lay.n_texels - 1) + 1))
        side = min(max(side, 64), dev.max_texture_size)
        lay = Layout(lay.rows, lay.cols, True, "row", max_size=side)
    return lay
