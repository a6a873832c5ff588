"""Sorting by a bitonic network: one fragment pass per compare-exchange stage.

    >>> import numpy as np
    >>> from shadergpgpu.ops.sort import sort, argsort
    >>> sort(np.array([3.0, np.nan, -1.0, 3.0]))
    array([-1.,  3.,  3., nan], dtype=float32)
    >>> argsort(np.array([3.0, np.nan, -1.0, 3.0]))
    array([2, 0, 3, 1])

Each sequence (a row, or the flattened array) is padded to ``n = 2**m`` columns and sorted as
(value, index) pairs: values compare by their sortable bit pattern (``-0.0 == +0.0``, every NaN
after ``+inf``), equal values by index. So ``sort`` equals ``numpy.sort`` and ``argsort`` equals
``numpy.argsort(kind="stable")`` exactly, NaNs last. Padding columns compare larger than every
element (NaNs included) and are never written to the result. No float comparison or
arithmetic touches a value (GPUs and llvmpipe flush subnormals to zero in those): the keys are
integers made from the bits, and the values written are the input elements' stored bits, so
subnormals are ordered and kept exactly, ``-0.0`` stays ``-0.0`` (equal to ``+0.0``: the two
keep their input order) and ``sort(x)`` is bit for bit ``x[argsort(x)]``. There is no
rounding, hence no error bound: the results are exact (float64 inputs are first rounded to
float32). A sort takes
``max(1, m (m + 1) / 2)`` passes, each writing the values and the indices (two render targets)
between ping-pong arrays; the shader has no loop (no loop budget concern).
"""
from __future__ import annotations

import numpy as np

from ..engine.arrays import DeviceArray
from ..engine.kernels import In, declare
from .scan import _work_layout
from ..engine.plans import PassPlan, register_plan
from ..engine.validation import pick_device
from .elementwise import host_array

__all__ = ["sort", "argsort", "sort_pairs", "sort_passes", "MAX_LENGTH"]

#: Indices are exact in float32 below 2**24: longer sequences are refused.
MAX_LENGTH = 2 ** 24

_U = {"block": "int", "stride": "int", "n_real": "int"}
INIT = declare("ops/sort/bitonic.frag", inputs=("X",), outputs=2, uniforms=_U,
               defines={"INIT": 1}, name="ops/sort/bitonic_init")
PACKED_STAGE = declare("ops/sort/bitonic_packed.frag",
                       inputs={"V": In(like="OUT0"), "I": In(like="OUT0")}, outputs=2,
                       uniforms=dict(_U, tstride="int"), name="ops/sort/bitonic_packed")
STAGE = declare("ops/sort/bitonic.frag", inputs=("V", "I"), outputs=2, uniforms=_U,
                defines={"INIT": 0}, name="ops/sort/bitonic")


def sort_passes(length: int) -> int:
    """Passes of a bitonic sort of ``length`` elements: ``max(1, m (m+1) / 2)``,
    ``m = ceil(log2 length)``."""
    m = max(0, int(length - 1).bit_length())
    return max(1, m * (m + 1) // 2)


register_plan(PassPlan(
    name="ops/sort",
    formula="max(1, m (m + 1) / 2), m = ceil(log2 L)  (L = length of each sorted sequence)",
    phases=lambda length: {"sort": sort_passes(length)},
    notes="bitonic network over (value, index) pairs padded to 2**m; one pass per stage, "
          "values and indices written together (2 render targets)",
    params=("length",)))


def _stages(length: int):
    n = 1 << max(1, int(length - 1).bit_length())
    block = 2
    while block <= n:
        stride = block // 2
        while stride >= 1:
            yield block, stride
            stride //= 2
        block *= 2


def sort_pairs(x, axis=-1, device=None):
    """Sorted values and the stable argsort, as a pair: both numpy (float32 values, int64
    indices) for a numpy ``x``; both DeviceArray (indices stored as exact float32) for a
    DeviceArray ``x``.

    x : 1-D or 2-D, real; float64 is rounded to float32, integers must lie within +-2**24;
        NaN and inf are allowed (NaNs sort last).
    axis : -1 (the last axis: each row of a 2-D array; 1 or, for 1-D, 0 mean the same) or
        None (the array flattened row-major; 1-D result).
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
    stages = list(_stages(length))
    if length == 1:
        stages = stages[:1]
    width = 1 << max(1, int(length - 1).bit_length())
    with dev.scope() as s:
        src = x if on_device else s.array(a, name="x")
        lay = src.layout if on_device and out_shape == shape else dev.layout(out_shape)
        vals, idxs = dev.alloc(lay, out_shape), dev.alloc(lay, out_shape)
        try:
            mid = (rows, width)
            front = back = None
            if len(stages) > 1:
                wl = _work_layout(dev, (width,)) if rows == 1 else dev.layout(mid)
                front = (s.alloc(wl, mid), s.alloc(wl, mid))
                back = (s.alloc(wl, mid), s.alloc(wl, mid))
            for k, (block, stride) in enumerate(stages):
                last = k == len(stages) - 1
                outs = [vals, idxs] if last else list(back)
                u = {"block": block, "stride": stride, "n_real": length}
                if k == 0:
                    dev.run(INIT, outs, inputs={"X": src}, uniforms=u)
                elif outs[0].layout == front[0].layout and front[0].layout.packed and \
                        front[0].layout.order == "row":
                    u["tstride"] = stride // front[0].layout.pack
                    dev.run(PACKED_STAGE, outs, inputs={"V": front[0], "I": front[1]},
                            uniforms=u)
                else:
                    dev.run(STAGE, outs, inputs={"V": front[0], "I": front[1]}, uniforms=u)
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
    ``numpy.sort`` (NaNs last). numpy in -> numpy float32 out; DeviceArray in -> DeviceArray
    out. See :func:`sort_pairs` for the accepted inputs."""
    v, i = sort_pairs(x, axis, device)
    if isinstance(i, DeviceArray):
        i.release()
    return v


def argsort(x, axis=-1, device=None):
    """Indices that sort ``x`` along the last axis (or flattened), equal to
    ``numpy.argsort(x, kind="stable")``: numpy int64 for a numpy ``x``; a DeviceArray of exact
    float32 indices for a DeviceArray ``x``."""
    v, i = sort_pairs(x, axis, device)
    if isinstance(v, DeviceArray):
        v.release()
    return i
