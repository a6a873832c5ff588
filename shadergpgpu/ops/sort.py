"""Sorting by a bitonic network, several compare-exchange stages in each fragment pass.

    >>> import numpy as np
    >>> from shadergpgpu.ops.sort import sort, argsort
    >>> sort(np.array([3.0, np.nan, -1.0, 3.0]))
    array([-1.,  3.,  3., nan], dtype=float32)
    >>> argsort(np.array([3.0, np.nan, -1.0, 3.0]))
    array([2, 0, 3, 1])

Each sequence (a row, or the flattened array) is padded to ``n = 2**m`` columns and sorted as
(key, index) pairs: an element's key is an integer made from its bits, in the values' numeric
order (``-0.0 == +0.0``, every NaN after ``+inf``), equal keys ordered by index. So ``sort``
equals ``numpy.sort`` and ``argsort`` equals ``numpy.argsort(kind="stable")`` exactly, NaNs
last. Padding columns get the NaNs' key and larger indices: they come last and are never
written to the result. No float comparison or arithmetic touches a key (GPUs and llvmpipe
flush subnormals to zero in those): keys are compared as integers and moved by selection, and
the last pass turns them back into the input elements' stored bits (reading the input for a
zero's sign and a NaN's payload), so subnormals are ordered and kept exactly, ``-0.0`` stays
``-0.0`` (equal to ``+0.0``: the two keep their input order) and ``sort(x)`` is bit for bit
``x[argsort(x)]``. There is no rounding, hence no error bound: the results are exact (float64
inputs are first rounded to float32).

The passes write keys and indices (two render targets) between ping-pong work arrays, a
fragment one texel (four columns), in ``shaders/ops/sort/``:

* the first (``bitonic_init.frag``) reads the input, in any layout, and sorts each group of 8
  columns (the merge levels of blocks 2, 4 and 8 on registers);
* the merge level of blocks of ``2**b`` columns (``b = 4 .. m``) has ``b`` stages: texel
  strides ``2**(b-3) .. 1``, then the lane strides 2 and 1. ``bitonic_fold.frag`` runs
  ``g`` (:attr:`SortTuning.fold_log2 <shadergpgpu.ops.tuning.SortTuning>`, default 3)
  consecutive texel strides in one pass: a fragment reads the ``2**g``
  texels those stages touch and runs them on registers only as far as its own texel needs
  (each stage halves what it keeps: ``2**g - 1`` half compare-exchanges of four lanes); the
  pass of the smallest strides also runs the two lane stages.

So level ``b`` takes ``ceil((b - 2) / g)`` passes and a sort ``1 + sum over b = 4 .. m of
ceil((b - 2) / g)`` (:func:`sort_passes`): with ``g = 3`` 15 for 1024 columns and 22 for 4096,
where a pass per stage takes ``m (m + 1) / 2`` (55 and 78). ``g = 3`` (groups of 8 texels)
is the fastest on a GPU, where a pass of up to 8 texels a group costs what a copy of its
data does and one of 16 about twice that, and about as fast as ``g = 2`` on llvmpipe. Each
sequence lies in ``2**rsh``
grid rows of ``2**tsh`` texels of the work arrays (a long 1-D one square-ish), so the shaders
place texels by shifts. They loop only over the four lanes of a texel (no loop budget
concern).
"""
from __future__ import annotations

import numpy as np

from ..engine.arrays import DeviceArray
from ..engine.kernels import In, declare
from ..engine.validation import pick_device
from .elementwise import host_array
from .tuning import SortTuning

__all__ = ["sort", "argsort", "sort_pairs", "sort_passes", "MAX_LENGTH", "FOLD_LOG2"]

#: Indices are exact in float32 below 2**24: longer sequences are refused.
MAX_LENGTH = 2 ** 24

#: The default group of a fold pass: ``2**FOLD_LOG2`` texels (the device's
#: :class:`~shadergpgpu.ops.tuning.SortTuning` sets the one a call uses).
FOLD_LOG2 = SortTuning().fold_log2

_WORK = In(packed=True, order="row")


def _kernels(file, inputs, uniforms, defines, name):
    """The variants of a pass: (FINAL, OUT_PACKED) = (0, 1) into the work arrays (packed, row
    order), (1, 1) the last pass into outputs packed in row order (a fragment computes its texel
    once), (1, 0) the last pass into outputs of any layout (each lane computes its own)."""
    return {(final, packed): declare(
        file, inputs=inputs, outputs=2, uniforms=uniforms,
        defines=dict(defines, FINAL=final, OUT_PACKED=packed),
        name=name + ("_last" if final else "") + ("" if packed else "_any"))
        for final, packed in ((0, 1), (1, 1), (1, 0))}


_U = {"n_real": "int", "flatten": "int", "rsh": "int", "tsh": "int"}
INIT = _kernels("ops/sort/bitonic_init.frag", ("X",), _U, {}, "ops/sort/bitonic_init")
FOLD = _kernels("ops/sort/bitonic_fold.frag", {"K": _WORK, "I": _WORK, "X": In()},
                dict(_U, block="int", lsh="int", lanes="int"), {"GT": 2 ** FOLD_LOG2},
                "ops/sort/bitonic_fold")


def _fold_log2(fold) -> int:
    g = FOLD_LOG2 if fold is None else fold
    if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or not 1 <= g <= 5:
        raise ValueError(f"sort: fold (SortTuning.fold_log2) must be an integer from 1 to 5, "
                         f"got {g!r}")
    return int(g)


def _schedule(length: int, fold=None) -> list:
    """The passes after the first, in order: (block, lsh, group texels, lanes) each.

    Level ``b`` (merging blocks of ``2**b`` columns, ``b >= 4``) has texel strides
    ``2**(b-3) .. 1`` and the two lane strides; its texel strides are cut into groups of
    ``fold`` (default :data:`FOLD_LOG2`) from the smallest up (the last, partial group holds
    the largest strides), one pass each, largest first; the pass of the smallest ones also runs the lane stages."""
    g = _fold_log2(fold)
    m = max(0, int(length - 1).bit_length())
    out = []
    for b in range(4, m + 1):
        groups, lsh = [], 0
        while lsh < b - 2:
            k = min(g, b - 2 - lsh)
            groups.append((1 << b, lsh, 1 << k, int(lsh == 0)))
            lsh += k
        out += groups[::-1]
    return out


def sort_passes(length: int, fold=None) -> int:
    """Passes of a sort of sequences of ``length`` elements: ``1 + sum over b = 4 .. m of
    ceil((b - 2) / g)``, ``m = ceil(log2 length)``, ``g = fold`` (default :data:`FOLD_LOG2`;
    a device's :class:`~shadergpgpu.ops.tuning.SortTuning` sets the one its calls use)."""
    g = _fold_log2(fold)
    m = max(0, int(length - 1).bit_length())
    return 1 + sum(-(-(b - 2) // g) for b in range(4, m + 1))


def _work_shape(dev, rows: int, width: int) -> tuple[int, int]:
    """(rsh, tsh): the work arrays hold each sequence in ``2**rsh`` grid rows of ``2**tsh``
    texels (both powers of two, so the shaders place a texel by shifts; an accessor of a
    wrapped layout divides). A sequence fits one row where it can; a single long one is laid
    out square-ish (a texture one texel high rasterises slowly on tiled software renderers)."""
    texels = max(1, width // 4)
    side = 1 << (int(dev.max_texture_size).bit_length() - 1)   # a power of two, <= the limit
    if rows == 1 and texels > 4096:
        w = 1 << -(-(texels.bit_length() - 1) // 2)           # sqrt, rounded up to 2**k
    else:
        w = texels
    w = min(w, side)
    return (texels // w).bit_length() - 1, w.bit_length() - 1


def _texel_out(layout) -> int:
    """1 for outputs packed in row order (a grid texel is a work texel), else 0."""
    return int(layout.packed and layout.order == "row")


def sort_pairs(x, axis=-1, device=None):
    """Sorted values and the stable argsort, as a pair: both numpy (float32 values, int64
    indices) for a numpy ``x``; both DeviceArray (indices stored as exact float32) for a
    DeviceArray ``x``.

    Parameters
    ----------
    x : array_like or DeviceArray
        1-D or 2-D, real; float64 is rounded to float32, integers must lie within +-2**24;
        NaN and inf are allowed (NaNs sort last).
    axis : {-1, None}, default=-1
        -1: the last axis, each row of a 2-D array (1, or 0 for a 1-D array, mean the same);
        None: the array flattened row-major (1-D result).
    device : Device or None, default=None
        The device to run on; None: ``x``'s device, else the thread's default device.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray) or (DeviceArray, DeviceArray)
        The sorted values and the indices that sort ``x`` (``numpy.argsort(x,
        kind="stable")``).

    Raises
    ------
    ValueError, TypeError
        As :func:`sort`.

    Examples
    --------
    >>> import numpy as np
    >>> from shadergpgpu.ops.sort import sort_pairs
    >>> sort_pairs(np.array([3.0, 1.0, 2.0]))
    (array([1., 2., 3.], dtype=float32), array([1, 2, 0]))
    """
    dev = pick_device(device, [x])
    on_device = isinstance(x, DeviceArray)
    if on_device:
        if x.released:
            raise ValueError("sort: x has been released")
        if x.ndim not in (1, 2):
            raise ValueError(f"sort: x must be 1-D or 2-D, got shape {x.shape}")
        shape = tuple(x.shape)
    else:
        a = host_array(x, "sort: x")
        shape = a.shape
    nd = len(shape)
    if axis is not None:
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"sort: axis must be -1 or None, got {axis!r}")
        if not -nd <= axis < nd:
            raise ValueError(f"sort: axis {axis} is out of range for a {nd}-D array")
        if int(axis) % nd != nd - 1:
            raise ValueError("sort: only the last axis (axis=-1) or axis=None is supported; "
                             "transpose the array to sort along another axis")
    out_shape = (int(np.prod(shape)),) if axis is None else shape
    rows, length = (1, out_shape[0]) if len(out_shape) == 1 else out_shape
    if length > MAX_LENGTH:
        raise ValueError(f"sort: sequences of {length} elements exceed 2**24 (indices are "
                         "exact in float32 only below it)")
    sched = _schedule(length, dev.tuning(SortTuning).fold_log2)
    width = 1 << max(0, int(length - 1).bit_length())
    flat = int(tuple(out_shape) != tuple(shape))
    with dev.scope() as s:
        src = x if on_device else s.array(a, name="x")
        lay = src.layout if on_device and out_shape == shape else dev.layout(out_shape)
        vals, idxs = dev.alloc(lay, out_shape), dev.alloc(lay, out_shape)
        try:
            rsh, tsh = _work_shape(dev, rows, width)
            u = {"n_real": length, "flatten": flat, "rsh": rsh, "tsh": tsh}
            if not sched:
                dev.run(INIT[1, _texel_out(lay)], [vals, idxs], inputs={"X": src}, uniforms=u)
            else:
                mid = (rows << rsh, 4 << tsh)     # wraps only past the texture size in rows
                wl = dev.layout(mid)
                front = (s.alloc(wl), s.alloc(wl))
                back = (s.alloc(wl), s.alloc(wl))
                dev.run(INIT[0, 1], list(back), inputs={"X": src}, uniforms=u)
                front, back = back, front
                for k, (block, lsh, gt, lanes) in enumerate(sched):
                    last = int(k == len(sched) - 1)
                    outs = [vals, idxs] if last else list(back)
                    dev.run(FOLD[last, _texel_out(outs[0].layout) if last else 1], outs,
                            inputs={"K": front[0], "I": front[1], "X": src},
                            uniforms=dict(u, block=block, lsh=lsh, lanes=lanes),
                            defines={"GT": gt})
                    front, back = back, front
        except BaseException:
            vals.release()
            idxs.release()
            raise
    if on_device:
        return vals, idxs
    with vals, idxs:
        return vals.get(), idxs.get().astype(np.int64)


def sort(x, axis=-1, device=None):
    """Sorted copy of ``x`` along the last axis (or flattened, ``axis=None``), equal to
    ``numpy.sort`` (NaNs last), by a bitonic network of render passes.

    Parameters
    ----------
    x : array_like or DeviceArray
        A 1-D or 2-D real array; float64 is rounded to float32, integers must lie within
        +-2**24; NaN and inf are allowed.
    axis : {-1, None}, default=-1
        -1: each row of a 2-D array (1, or 0 for a 1-D array, mean the same); None: the
        array flattened in row-major order (1-D result).
    device : Device or None, default=None
        The device to run on; None: ``x``'s device, else the thread's default device.

    Returns
    -------
    numpy.ndarray or DeviceArray
        float32 numpy for a host ``x``; a new DeviceArray for a DeviceArray.

    Raises
    ------
    ValueError
        A released array, one of more than 2 dimensions, axis 0 of a 2-D array, sequences
        longer than 2**24 elements.
    TypeError
        An axis that is not -1 or None.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> sg.sort(np.array([3.0, np.nan, 1.0, 2.0]))               # NaNs last, as numpy
    array([ 1.,  2.,  3., nan], dtype=float32)
    >>> sg.sort(np.array([[3.0, 1.0], [0.0, 2.0]]), axis=None)
    array([0., 1., 2., 3.], dtype=float32)
    """
    v, i = sort_pairs(x, axis, device)
    if isinstance(i, DeviceArray):
        i.release()
    return v


def argsort(x, axis=-1, device=None):
    """Indices that sort ``x`` along the last axis (or flattened), equal to
    ``numpy.argsort(x, kind="stable")``.

    Parameters
    ----------
    x, axis, device
        As :func:`sort`.

    Returns
    -------
    numpy.ndarray or DeviceArray
        numpy int64 for a numpy ``x``; a new DeviceArray of exact float32 indices for a
        DeviceArray ``x``.

    Raises
    ------
    ValueError, TypeError
        As :func:`sort`.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> sg.argsort(np.array([[2.0, 1.0, 2.0], [0.0, 5.0, -1.0]]))   # stable: ties in order
    array([[1, 0, 2],
           [2, 0, 1]])
    """
    v, i = sort_pairs(x, axis, device)
    if isinstance(v, DeviceArray):
        v.release()
    return i
