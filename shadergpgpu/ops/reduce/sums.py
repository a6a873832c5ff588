"""Sums on the device: :data:`SUM`, :data:`DOT`, :data:`NORM` (library ReductionKernels),
:class:`SumReduction` (a prepared sum the algorithms reuse), :func:`total` / :func:`total_device`
and the numpy-style :func:`sum`, :func:`dot`, :func:`norm`."""
from __future__ import annotations

from ...engine.arrays import DeviceArray
from ...engine.layout import Layout
from .chain import Placeholder
from .kernel import ReductionKernel
from .kernel_chains import FlatChain
from .levels import fanin_for
from .params import host_operand


#: sum of all elements (the reduction :func:`total` and :class:`SumReduction` run)
SUM = ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", identity=0.0,
                      name="reduce/sum", _library=True)
#: dot product and Euclidean norm
DOT = ReductionKernel("float32 x, float32 y", "float32 z", "x * y", "a + b", "z = a",
                      identity=0.0, name="reduce/dot", _library=True)
NORM = ReductionKernel("float32 x", "float32 z", "x * x", "a + b", "z = sqrt(a)",
                       identity=0.0, name="reduce/norm", _library=True)

class SumReduction(FlatChain):
    """Sum of every logical element of arrays of one layout, into ``result`` texel ``slot``.

    ``run()`` issues the passes; ``bind(arr)`` points the chain at another array of the same
    layout. The sum is in ``result``'s texel ``slot``, component x. The passes are
    :data:`SUM`'s kernels (the ReductionKernel engine), with :func:`total_device`'s error bound.
    """

    def __init__(self, dev, layout: Layout, result: DeviceArray | None = None, slot: int = 0,
                 fanin: int | None = None, source: DeviceArray | None = None):
        fanin = fanin_for(dev, fanin)
        own = None
        if result is None:
            own = result = dev.alloc(Layout(1, 1, True, "row", dev.max_texture_size), (1,))
        self.layout = layout
        first, nxt = SUM.kernels(("x",), (layout.packed,))
        src = source if source is not None else Placeholder(layout)
        super().__init__(dev, first, nxt, {"x": src}, layout.n_texels, result, slot, fanin,
                         rk=SUM)
        if own is not None:
            self._owned.append(own)

    def bind(self, arr: DeviceArray) -> "SumReduction":
        self.passes[0].bind(x=arr)
        return self


def total_device(dev, arr, fanin: int | None = None) -> DeviceArray:
    """Sum of all logical elements of ``arr`` (padding excluded) as a (1,) DeviceArray.

    Parameters
    ----------
    dev : Device
        The device to run on.
    arr : DeviceArray or array_like
        A DeviceArray of any layout (packed or not, row or column order, wrapped) or a 1-D /
        2-D host array (uploaded packed).
    fanin : int or None, default=None
        Texels one fragment of a level adds, at least 2; None: the device's default.

    Returns
    -------
    DeviceArray
        Shape (1,): the sum. The caller owns (and may release) it.

    Raises
    ------
    ValueError
        An empty array or one of more than 2 dimensions, values float32 cannot hold,
        ``fanin < 2``.

    Accuracy
    --------
    ``|s - sum(x)| <= gamma(K) * sum(|x|) + (1 + gamma(K)) * 2n * 2**-126`` with
    ``K = L (F - 1) + 2``, ``L`` the passes over the layout's texels (:func:`rounding_depth`,
    :func:`error_bound`; ``n = 300,000`` packed at ``F = 16``: ``K = 77``); the second term is
    subnormals flushed to zero. A partial sum beyond float32's range makes the result +-inf
    (NaN where infinities of both signs meet); a finite result always meets the bound. See the
    module's numerical contract.

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.ops.reduce import total_device
    >>> dev = sg.Device()
    >>> s = total_device(dev, dev.array(np.arange(10.0)))
    >>> s.get()
    array([45.], dtype=float32)
    """
    if not isinstance(arr, DeviceArray):
        arr = host_operand(arr, "arr")
    return SUM.run_device(dev, (arr,), fanin=fanin, names=("arr",))


def total(dev, arr, fanin: int | None = None) -> float:
    """Sum of all logical elements of ``arr`` as a Python float (one 1-texel readback).

    Parameters
    ----------
    dev, arr, fanin
        As :func:`total_device`.

    Returns
    -------
    float
        The sum; error bound and overflow as :func:`total_device`'s.

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.ops.reduce import total
    >>> total(sg.Device(), np.ones((3, 5)))
    15.0
    """
    out = total_device(dev, arr, fanin)
    try:
        return float(out.get()[0])
    finally:
        out.release()


def sum(x, axis=None, device=None, fanin=None):  # noqa: A001 (numpy's name)
    """``x.sum(axis)`` on the device (numpy in -> numpy out, device in -> device out).

    Parameters
    ----------
    x : array_like or DeviceArray
        A 1-D or 2-D array; a host array is converted to float32 (integers within +-2**24).
    axis : {None, 0, 1}, default=None
        None sums every element; 0 sums down the columns, 1 along the rows of a 2-D array.
    device : Device or None, default=None
        The device to run on; None: ``x``'s device, else the thread's default device.
    fanin : int or None, default=None
        Elements (texels) one fragment of a level adds, at least 2; None: the device's
        default (:func:`default_fanin`).

    Returns
    -------
    numpy.float32 or numpy.ndarray or DeviceArray
        For a host ``x``: a float32 scalar (``axis=None``) or a float32 vector; for a
        DeviceArray: a new DeviceArray of shape ``(1,)`` or the vector (the caller releases
        it).

    Raises
    ------
    ValueError
        An axis other than None, 0 or 1 (1 needs a 2-D array), an empty array or one of more
        than 2 dimensions, finite values beyond float32's range, ``fanin < 2``.
    TypeError
        A complex, object or string array.

    Accuracy
    --------
    Each result is within ``gamma(K) * sum(|x|) + (1 + gamma(K)) * 2n * 2**-126`` of the exact
    sum of its float32 terms (``n`` its terms),
    ``K = L (F - 1) + 2`` for ``axis=None`` (``L`` passes over the texels) and
    ``K = axis_passes(m, F) * (F - 1)`` along an axis of length ``m``; overflow gives +-inf (or
    NaN), never a finite result outside the bound. See the module's numerical contract.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> float(sg.sum(np.arange(10.0)))
    45.0
    >>> sg.sum(np.arange(6.0).reshape(2, 3), axis=0)
    array([3., 5., 7.], dtype=float32)
    >>> dev = sg.Device()
    >>> s = sg.sum(dev.array(np.ones(1000)))       # device in, device out
    >>> s.get()
    array([1000.], dtype=float32)
    """
    return SUM(x, axis=axis, device=device, fanin=fanin)


def dot(x, y, device=None, fanin=None):
    """Dot product of two arrays of one shape (flattened), float32 on the device.

    Parameters
    ----------
    x, y : array_like or DeviceArray
        1-D or 2-D arrays of one shape; host arrays are converted to float32.
    device : Device or None, default=None
        The device to run on; None: the arguments' device, else the thread's default device.
    fanin : int or None, default=None
        Elements (texels) one fragment of a level adds, at least 2; None: the device's
        default.

    Returns
    -------
    numpy.float32 or DeviceArray
        ``sum(x * y)``: a float32 scalar for host arrays, a new ``(1,)`` DeviceArray when
        either is a DeviceArray.

    Raises
    ------
    ValueError
        Shapes that differ, an empty array or one of more than 2 dimensions, finite values
        beyond float32's range, ``fanin < 2``.
    TypeError
        A complex, object or string array.

    Accuracy
    --------
    ``|d - sum(x y)| <= gamma(K) * sum(|x y|) + (1 + gamma(K)) * 2n * 2**-126
    + 2**-126 * sum(|x| + |y|)`` with ``K = L (F - 1) + 3`` (one rounding more than a sum, for
    the product; a fused multiply-add only removes roundings); the last two terms are
    subnormal products and factors flushed to zero. Overflowing products or partial sums give
    +-inf (or NaN). See the module's numerical contract.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> float(sg.dot(np.arange(4.0), np.ones(4)))
    6.0
    """
    return DOT(x, y, device=device, fanin=fanin)


def norm(x, axis=None, device=None, fanin=None):
    """Euclidean (Frobenius) norm of ``x`` (or of its columns / rows with ``axis=0 / 1``).

    Parameters
    ----------
    x : array_like or DeviceArray
        A 1-D or 2-D array; a host array is converted to float32.
    axis : {None, 0, 1}, default=None
        None: the norm of every element; 0: of each column, 1: of each row of a 2-D array.
    device : Device or None, default=None
        The device to run on; None: ``x``'s device, else the thread's default device.
    fanin : int or None, default=None
        Elements (texels) one fragment of a level adds, at least 2; None: the device's
        default.

    Returns
    -------
    numpy.float32 or numpy.ndarray or DeviceArray
        As :func:`sum`: a float32 scalar or vector for a host ``x``, a new DeviceArray for a
        DeviceArray.

    Raises
    ------
    ValueError, TypeError
        As :func:`sum`.

    Accuracy
    --------
    ``|r - ||x||| <= (gamma(K) / 2 + 10 u) ||x|| + sqrt((1 + gamma(K)) * 2n) * 2**-63``,
    ``K`` as for :func:`dot` (``L (F - 1) + 3``; along an axis ``axis_passes(m, F) (F - 1) + 1``),
    ``10 u`` for GLSL's ``sqrt``. Not rescaled: squares below ``2**-126`` are flushed (elements
    under ``1.1e-19`` count as 0) and ``sum(x * x)`` beyond ``3.4e38`` (``||x|| > 1.8e19``)
    gives inf, as numpy's float32 ``norm`` overflows too.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> float(sg.norm(np.array([3.0, 4.0])))
    5.0
    >>> sg.norm(np.ones((2, 4)), axis=1)
    array([2., 2.], dtype=float32)
    """
    return NORM(x, axis=axis, device=device, fanin=fanin)
