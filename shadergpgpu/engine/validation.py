"""Input validation shared by every operation and algorithm (one place, clear messages).

Numbers and arrays go through scikit-learn's own validation utilities (``check_scalar``,
``check_array``), so the library refuses what scikit-learn refuses, with the argument's name in
the message; device arrays are checked for state (released, other device, shape).
"""
from __future__ import annotations

import numbers

import numpy as np
from sklearn.utils import check_array, check_scalar

from .arrays import DeviceArray, as_float32
from .device import get_device

__all__ = ["as_float32", "array", "choice", "device_values", "integer", "pick_device", "real",
           "device_array", "MAX_EXACT_INT"]

#: Integers beyond this magnitude are not exact in float32, the device's only number type.
MAX_EXACT_INT = 2 ** 24


def real(x, name: str, lo=None, hi=None, closed: str = "both", finite: bool = True) -> float:
    """A real number (not bool, not complex) within [lo, hi] (``closed``: "both", "left",
    "right", "neither"); returns a float."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got bool {x!r}")
    if isinstance(x, numbers.Complex) and not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got complex {x!r}")
    v = check_scalar(x, name, numbers.Real, min_val=lo, max_val=hi, include_boundaries=closed)
    v = float(v)
    if finite and not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def integer(x, name: str, lo=None, hi=None) -> int:
    """An integer (not bool; a float with an integral value is refused) within [lo, hi]."""
    if isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got bool {x!r}")
    return int(check_scalar(x, name, numbers.Integral, min_val=lo, max_val=hi))


def choice(x, name: str, choices) -> object:
    """One of ``choices``."""
    if x not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}; "
                         f"got {x!r}")
    return x


def _real(x, name: str, ndim, dims_msg: str, empty_msg: str) -> np.ndarray:
    """``x`` as a numpy array of a real numeric dtype with ``ndim`` dims (an int or a tuple of
    allowed ones), not empty; the two messages are formatted with name, dims and shape."""
    a = np.asarray(x) if not isinstance(x, np.ndarray) else x
    if a.dtype.kind == "c":
        raise TypeError(f"{name}: complex arrays are not supported (got {a.dtype})")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real numeric array, got dtype {a.dtype}")
    dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if a.ndim not in dims:
        raise ValueError(dims_msg.format(name=name, shape=a.shape,
                                         dims=" or ".join(f"{d}-D" for d in dims)))
    if a.size == 0:
        raise ValueError(empty_msg.format(name=name, shape=a.shape))
    return a


def array(x, name: str, ndim=2, finite: bool = True, min_rows: int = 1,
          min_cols: int = 1) -> np.ndarray:
    """A real numeric host array as float32, ``ndim`` dims (an int or a tuple of allowed ones),
    not empty, finite unless ``finite=False`` (complex, object and string arrays refused)."""
    a = _real(x, name, ndim, "{name} must be {dims}, got shape {shape}",
              "{name} must not be empty, got shape {shape}")
    if a.ndim == 2:
        a = check_array(a, dtype=np.float32, ensure_all_finite=finite,
                        ensure_min_samples=min_rows, ensure_min_features=min_cols,
                        input_name=name, order="C")
    else:
        a = as_float32(a, name)
        if finite and not np.isfinite(a).all():
            raise ValueError(f"{name} contains NaN or infinity")
    if a.dtype != np.float32:
        a = a.astype(np.float32)
    return a


def device_values(x, name: str, ndim=(1, 2)) -> np.ndarray:
    """A host array of the ops' operands as float32 under the documented conversion rule:
    float64 (and wider) is rounded to float32 (finite values beyond float32's range refused),
    integers must lie within +-2**24 (exact in float32); complex, object and string arrays,
    empty arrays and other dimensions are refused, each error naming ``name``. NaN and inf
    pass through."""
    a = _real(x, name, ndim, "{name}: arrays are {dims}, got shape {shape}",
              "{name}: empty array (shape {shape})")
    if a.dtype.kind in "iu":
        if int(a.max()) > MAX_EXACT_INT or int(a.min()) < -MAX_EXACT_INT:
            raise ValueError(f"{name}: integer values beyond +-2**24 are not exact in float32 "
                             "(the device's only number type); scale or split them")
    elif a.dtype.itemsize > 4:
        fin = np.isfinite(a)
        if (np.abs(np.where(fin, a, 0.0)) > np.finfo(np.float32).max).any():
            raise ValueError(f"{name}: finite values beyond float32's range "
                             f"(+-{np.finfo(np.float32).max:.3g}) cannot be converted")
    return np.ascontiguousarray(a, dtype=np.float32)


def device_array(x, name: str, device=None, ndim=2) -> DeviceArray:
    """A live DeviceArray (on ``device`` when given) with ``ndim`` dimensions."""
    if not isinstance(x, DeviceArray):
        raise TypeError(f"{name} must be a DeviceArray, got {type(x).__name__}")
    if x.released:
        raise ValueError(f"{name} has been released")
    if device is not None and x.device is not device:
        raise ValueError(f"{name} lives on another device")
    dims = (ndim,) if isinstance(ndim, int) else tuple(ndim)
    if x.ndim not in dims:
        raise ValueError(f"{name} must be {' or '.join(f'{d}-D' for d in dims)}, got shape "
                         f"{x.shape}")
    return x


def pick_device(device, arrays):
    """The device of the DeviceArray arguments (all on one), else ``device``, else the default."""
    devs = {id(a.device): a.device for a in arrays if isinstance(a, DeviceArray)}
    if device is not None:
        for a in arrays:
            if isinstance(a, DeviceArray) and a.device is not device:
                raise ValueError("a DeviceArray argument lives on another device than `device`")
        return device
    if len(devs) > 1:
        raise ValueError("the DeviceArray arguments live on different devices")
    if devs:
        return next(iter(devs.values()))
    return get_device()
