"""RBF kernel evaluation on the device: every point against two points, fused in one pass.

``K(x_t, x_h) = exp(-gamma ||x_t - x_h||^2)`` and the same for ``x_l``, for all points ``t``,
computed in one walk over the features (the source's fused high/low loop). The data sit on the
device twice: in column order, packed (a texel holds one feature of four consecutive points, so
the fragments writing neighbouring output texels read neighbouring texels), and in row order,
packed (a texel holds four features of one point, for fetching ``x_h`` and ``x_l``). Any number
of features (the last texel is zero-padded), any number of points (textures wrap past the
device's size limit).

Loop budget: one fragment walks ``ceil(d / 4)`` feature texels. When that is more than the
device's loop cap (llvmpipe: 65,535, i.e. d > 262,140 features), the distances are computed by
a split kernel (partial sums of squared distances, added by blending over several passes) and
the exponential by one more pass; otherwise the fused single pass runs.

    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.ops.rbf import RBFData
    >>> dev = sg.Device()
    >>> data = RBFData(dev, np.random.rand(1000, 13))
    >>> kh, kl = data.pair(3, 7, gamma=0.5)        # numpy float32 vectors of length 1000
"""
from __future__ import annotations

import numpy as np

from ..engine.arrays import DeviceArray
from ..engine.kernels import In, Split, declare
from ..engine import validation as _v
from ..engine.limits import ceil_div
from ..engine.layout import Layout

#: floating-point operations per point and feature of the fused pair evaluation (two
#: differences, two multiply-adds; counted as in the source: 6 per 3 loads)
FLOPS_PER_POINT_FEATURE = 6

#: the two data layouts every RBF kernel reads
DATA_INPUTS = {"XC": In(packed=True, order="col"), "XR": In(packed=True, order="row")}
_FEATURES = lambda a: a.XR.grid_w  # noqa: E731  (feature texels one fragment walks)
HINT = "X has too many features (n_features) for one pass on this device"

#: fused: both kernel rows in one walk over the features (the normal path)
RBF_PAIR = declare("ops/rbf/pair.frag", inputs=DATA_INPUTS, outputs=2,
                   uniforms={"h": "int", "l": "int", "gamma": "float"}, loop=_FEATURES,
                   name="rbf/pair", hint=HINT)
#: split path: partial squared distances over a range of feature texels (blended sums)
RBF_PAIR_D2 = declare("ops/rbf/pair_d2.frag", inputs=DATA_INPUTS, outputs=2,
                      uniforms={"h": "int", "l": "int"},
                      split=Split("d4", length=_FEATURES, cost=1), name="rbf/pair_d2",
                      hint=HINT)
#: split path: the exponential of the summed distances
RBF_EXP_PAIR = declare("ops/rbf/exp_pair.frag",
                       inputs={"D0": In(like="OUT0"), "D1": In(like="OUT0")}, outputs=2,
                       uniforms={"gamma": "float"}, name="rbf/exp_pair")


#: texels per texture row of the per-point vectors (None: one row up to the texture size).
#: A one-texel-high render target shades poorly (half-empty 2x2 quads, thin raster tiles), on
#: GPUs and on llvmpipe alike, so the vectors wrap at 128 texels a row.
VECTOR_WRAP = 128


def over_cap(dev, n_features: int) -> bool:
    """Whether one fragment's walk over ``n_features`` exceeds ``dev``'s loop cap (then the
    split path runs: distances in blended passes, the exponential in one more)."""
    return dev.loop_cap is not None and ceil_div(int(n_features), 4) > dev.loop_cap


def pair_passes(n_features: int, loop_cap: int | None = None,
                float_blend: bool = True) -> int:
    """Passes of one :meth:`RBFData.pair_device` call (``float_blend=False``: the cuts after
    the first accumulate by ping-pong passes, 1 + 2 per output each)."""
    texels = ceil_div(int(n_features), 4)
    if loop_cap is None or texels <= loop_cap:
        return 1
    cuts = ceil_div(texels, int(loop_cap))
    return cuts + (cuts - 1) * (0 if float_blend else 4) + 1


def check_points(X, name: str = "X") -> np.ndarray:
    """Validate a finite, non-empty 2-D data matrix; returns it as float32."""
    return _v.array(X, name, ndim=2)


class RBFData:
    """Points on the device in the two layouts the RBF kernels read.

    Parameters
    ----------
    dev : Device.
    X : (n, d) array-like, finite.
    n_pad : store this many points (>= n), the extra ones zero (lets problems of nearby sizes
        share compiled kernels).
    """

    def __init__(self, dev, X, n_pad: int | None = None):
        a = check_points(X)
        n, d = a.shape
        n_pad = n if n_pad is None else int(n_pad)
        if n_pad < n:
            raise ValueError(f"n_pad ({n_pad}) must be at least the number of points ({n})")
        if n_pad > n:
            a = np.vstack([a, np.zeros((n_pad - n, d), np.float32)])
        self.device = dev
        self.n, self.d, self.n_pad = n, d, n_pad
        self.host = a[:n]
        self.cols = dev.array(a, packed=True, order="col", name="X")
        self.rows = dev.array(a, packed=True, order="row", name="X")
        self._pair = None

    @property
    def inputs(self) -> dict:
        """The two data arrays under the names the shaders use."""
        return {"XC": self.cols, "XR": self.rows}

    def vector(self) -> DeviceArray:
        """An uninitialised packed vector with one value per (padded) point (wrapped at
        :data:`VECTOR_WRAP` texels per texture row when set)."""
        dev = self.device
        if VECTOR_WRAP is None:
            return dev.empty((self.n_pad,))
        lay = Layout.wrapped_vector(self.n_pad, VECTOR_WRAP, dev.max_texture_size)
        return dev.alloc(lay, (self.n_pad,))

    def _check_index(self, i, name):
        if not isinstance(i, (int, np.integer)) or isinstance(i, bool):
            raise TypeError(f"{name} must be an integer point index, got {type(i).__name__}")
        if not 0 <= i < self.n:
            raise ValueError(f"{name}={i} is out of range for {self.n} points")
        return int(i)

    def pair_device(self, h: int, l: int, gamma: float, out_h: DeviceArray | None = None,
                    out_l: DeviceArray | None = None) -> tuple[DeviceArray, DeviceArray]:
        """Both kernel rows on the device in one pass (two render targets)."""
        h = self._check_index(h, "h")
        l = self._check_index(l, "l")
        gamma = _v.real(gamma, "gamma", lo=0.0, closed="neither")
        out_h = self.vector() if out_h is None else out_h
        out_l = self.vector() if out_l is None else out_l
        dev = self.device
        with dev.phase("rbf"):
            if not over_cap(dev, self.d):
                if self._pair is None or self._pair.outputs["OUT0"].layout != out_h.layout:
                    self._pair = dev.prepare(RBF_PAIR, [out_h, out_l], inputs=self.inputs)
                p = self._pair
                p.bind(OUT0=out_h, OUT1=out_l)
                p.run(h=h, l=l, gamma=gamma)
            else:
                with dev.scope() as s:
                    d0, d1 = s.empty_like(out_h), s.empty_like(out_h)
                    dev.run(RBF_PAIR_D2, [d0, d1], inputs=self.inputs,
                            uniforms={"h": h, "l": l})
                    dev.run(RBF_EXP_PAIR, [out_h, out_l], inputs={"D0": d0, "D1": d1},
                            uniforms={"gamma": gamma})
        return out_h, out_l

    def pair(self, h: int, l: int, gamma: float) -> tuple[np.ndarray, np.ndarray]:
        """``(K(X, x_h), K(X, x_l))`` as float32 numpy vectors of length n."""
        kh, kl = self.pair_device(h, l, gamma)
        try:
            return kh.get()[: self.n], kl.get()[: self.n]
        finally:
            kh.release()
            kl.release()

    def release(self) -> None:
        self.cols.release()
        self.rows.release()


def rbf_pair(dev, X, h: int, l: int, gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """One-shot: upload ``X`` and return ``(K(X, x_h), K(X, x_l))`` (float32).

    Parameters
    ----------
    dev : Device
        The device to run on.
    X : array_like of shape (n, d)
        The points (converted to float32; finite values only).
    h, l : int
        Indices of the two points every point is compared with, in ``0..n-1``.
    gamma : float
        The kernel's coefficient, > 0.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        The two kernel rows, float32 vectors of length n.

    Raises
    ------
    ValueError
        An index out of range, ``gamma <= 0``, X not 2-D or not finite.
    TypeError
        An index that is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> from shadergpgpu.ops.rbf import rbf_pair, rbf_matrix_host
    >>> X = np.random.default_rng(0).random((100, 5))
    >>> kh, kl = rbf_pair(sg.Device(), X, 3, 7, gamma=0.5)
    >>> np.allclose(kh, rbf_matrix_host(X, X[[3]], 0.5)[:, 0], atol=1e-6)
    True
    """
    dev.report("api:rbf")            # an entry point: its own host work, reported
    data = RBFData(dev, X)
    try:
        return data.pair(h, l, gamma)
    finally:
        data.release()


def rbf_matrix_host(A, B, gamma: float) -> np.ndarray:
    """float64 reference ``exp(-gamma ||a - b||^2)`` for all pairs (host, for predictions).

    Parameters
    ----------
    A : array_like of shape (m, d)
    B : array_like of shape (k, d)
    gamma : float

    Returns
    -------
    numpy.ndarray of shape (m, k)
        float64 kernel values.

    Examples
    --------
    >>> import numpy as np
    >>> from shadergpgpu.ops.rbf import rbf_matrix_host
    >>> rbf_matrix_host(np.zeros((1, 2)), np.array([[0.0, 0.0], [1.0, 1.0]]), gamma=0.5).round(4)
    array([[1.    , 0.3679]])
    """
    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    np.maximum(d2, 0.0, out=d2)
    return np.exp(-gamma * d2)
