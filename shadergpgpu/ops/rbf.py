"""RBF kernel evaluation on the device: every point against two points, fused in one pass.

``K(x_t, x_h) = exp(-gamma ||x_t - x_h||^2)`` and the same for ``x_l``, for all points ``t``,
computed in one walk over the features (the source's fused high/low loop). The data sit on the
device twice: in column order, packed (a texel holds one feature of four consecutive points, so
the fragments writing neighbouring output texels read neighbouring texels), and in row order,
packed (a texel holds four features of one point, for fetching ``x_h`` and ``x_l``). Any number
of features (the last texel is zero-padded), any number of points (textures wrap past the
device's size limit).

    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.ops.rbf import RBFData
    >>> dev = sg.Device()
    >>> data = RBFData(dev, np.random.rand(1000, 13))
    >>> kh, kl = data.pair(3, 7, gamma=0.5)        # numpy float32 vectors of length 1000
"""
from __future__ import annotations

import numpy as np

from ..engine.arrays import DeviceArray, as_float32
from ..engine.plans import PassPlan, register_plan

#: floating-point operations per point and feature of the fused pair evaluation (two
#: differences, two multiply-adds; counted as in the source: 6 per 3 loads)
FLOPS_PER_POINT_FEATURE = 6

register_plan(PassPlan(
    name="rbf/pair",
    formula="1",
    phases=lambda: {"rbf": 1},
    notes="K(x_t, x_h) and K(x_t, x_l) for all t in one pass with two render targets"))


def check_points(X, name: str = "X") -> np.ndarray:
    """Validate a finite, non-empty 2-D data matrix; returns it as float32."""
    a = as_float32(X, name)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_points, n_features), got shape "
                         f"{a.shape}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name} is empty (shape {a.shape})")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return a


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
        """An uninitialised packed vector with one value per (padded) point."""
        return self.device.empty((self.n_pad,))

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
        gamma = float(gamma)
        if not gamma > 0 or not np.isfinite(gamma):
            raise ValueError(f"gamma must be a positive finite number, got {gamma!r}")
        out_h = self.vector() if out_h is None else out_h
        out_l = self.vector() if out_l is None else out_l
        if self._pair is None or self._pair[1] != (out_h.layout,):
            p = self.device.prepare("rbf/pair.frag", [out_h, out_l], inputs=self.inputs)
            self._pair = (p, (out_h.layout,))
        p = self._pair[0]
        p.bind(OUT0=out_h, OUT1=out_l)
        with self.device.phase("rbf"):
            p.run(h=h, l=l, gamma=gamma)
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
    """One-shot: upload ``X`` and return ``(K(X, x_h), K(X, x_l))`` (float32)."""
    data = RBFData(dev, X)
    try:
        return data.pair(h, l, gamma)
    finally:
        data.release()


def rbf_matrix_host(A, B, gamma: float) -> np.ndarray:
    """float64 reference ``exp(-gamma ||a - b||^2)`` for all pairs (host, for predictions)."""
    A = np.asarray(A, np.float64)
    B = np.asarray(B, np.float64)
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    np.maximum(d2, 0.0, out=d2)
    return np.exp(-gamma * d2)
