"""The public function :func:`gaussian_blur`: argument checks, the scaling of host images by a
power of 2, the identity copy, and the dispatch to a prepared recipe or to the passes of the
method."""
from __future__ import annotations

import math

import numpy as np

from ...engine import validation
from ...engine.arrays import DeviceArray
from ...engine.device import Device
from .coefficients import is_identity_sigma
from .exact import exact_blur
from .kernels import FIR
from .options import BORDERS, MAX_EXACT_RADIUS, MAX_RECURSIVE_SIGMA, METHODS, SCHEDULES, TRUNCATE
from .recipes import RECIPE_MAX_TEXELS, Recipe, recipe_cache
from .work_arrays import like
from .recursive import recursive_hv, recursive_vtvt
from .tiling import Tiling


# ---- validation ------------------------------------------------------------------------------
def sigma_pair(sigma) -> tuple[float, float]:
    if isinstance(sigma, (str, bytes)):
        raise TypeError(f"sigma must be a real number or a pair (sigma_y, sigma_x), got "
                        f"{sigma!r}")
    s = np.asarray(sigma, dtype=object)
    if s.ndim == 0:
        vals = [sigma, sigma]
    elif s.shape == (2,):
        vals = list(sigma)
    else:
        raise ValueError(f"sigma must be a number or a pair (sigma_y, sigma_x), got {sigma!r}")
    out = tuple(validation.real(v, "sigma", lo=0.0, closed="neither") for v in vals)
    return out[0], out[1]


def _check_sigma_range(sy: float, sx: float, method: str) -> None:
    for s in (sy, sx):
        if method == "exact":
            r = int(TRUNCATE * s + 0.5)
            if r > MAX_EXACT_RADIUS:
                raise ValueError(
                    f"sigma={s:g} is too large for method='exact': its kernel radius of {r:,} "
                    f"taps exceeds {MAX_EXACT_RADIUS:,}; use method='recursive'")
        elif s > MAX_RECURSIVE_SIGMA:
            raise ValueError(f"sigma={s:g} is too large for method='recursive' (at most "
                             f"{MAX_RECURSIVE_SIGMA:g}: its float32 poles exp(-1.7/sigma) "
                             "get too close to 1); use method='exact'")


def _check_host_image(image) -> tuple[np.ndarray, np.dtype]:
    a = np.asarray(image)
    if a.dtype.kind == "b":
        raise TypeError(f"image: expected a real numeric array, got dtype {a.dtype}")
    if a.ndim == 3 and a.size and not 1 <= a.shape[2] <= 4:
        raise ValueError(f"image: at most 4 channels are supported, got {a.shape[2]} "
                         f"(shape {a.shape})")
    x = validation.array(a, "image", ndim=(2, 3))
    return x, a.dtype


def _check_device_image(a: DeviceArray, device) -> bool:
    """True for a packed grayscale (H, W) array, False for an (H, W, C) image."""
    validation.device_array(a, "image", device, ndim=(2, 3))
    lay = a.layout
    if not lay.packed or lay.order != "row":
        raise ValueError("image: a DeviceArray image must use the packed row layout of "
                         "dev.array / dev.image")
    if a.ndim == 2:
        return True
    if lay.cols == 4 * a.shape[1] and 1 <= a.shape[2] <= 4:
        return False
    raise ValueError(f"image: DeviceArray of shape {a.shape} is neither an (H, W) array nor "
                     "an (H, W, C) image from dev.image")


# ---- the public function ---------------------------------------------------------------------
def gaussian_blur(image, sigma, method: str = "recursive", border: str = "reflect",
                  schedule: str = "hv", device=None, tiling: Tiling | None = None):
    """Gaussian blur of a 2-D image, grayscale or with up to 4 channels.

    Parameters
    ----------
    image : numpy.ndarray or DeviceArray
        A numpy (H, W) or (H, W, C) image, C <= 4, float or integer; or a DeviceArray from
        ``dev.array`` (H, W) or ``dev.image`` (H, W, C).
    sigma : float or (float, float)
        The Gaussian's standard deviation in pixels, > 0: one value or (sigma_y, sigma_x); at
        most MAX_RECURSIVE_SIGMA for the recursive method, and for the exact one kernel radii
        int(4 sigma + 0.5) up to MAX_EXACT_RADIUS. An axis with sigma <= IDENTITY_SIGMA
        (0.1734) is not filtered (its Gaussian is the identity to float32 precision); with
        both there, the result is a copy of the image.
    method : {"recursive", "exact"}, default="recursive"
        "recursive": cost independent of sigma; "exact": FIR truncated at 4 sigma (on a
        device with a loop cap, a very long kernel runs over several added passes).
    border : {"reflect", "nearest", "constant"}, default="reflect"
        As in scipy: half-sample symmetric, the edge value, or zero.
    schedule : {"hv", "vtvt"}, default="hv"
        The order of the recursive method's passes (see the notes of ``recursive.py``).
    device : Device or None, default=None
        The device to run on; None: the image's, else the thread's default device.
    tiling : Tiling or None, default=None
        The recursive method's blocks; None: :data:`DEFAULT_TILING`, with smaller blocks
        where the device's loop cap needs them (:func:`fit_tiling`).

    Returns
    -------
    numpy.ndarray or DeviceArray
        For a numpy image, an array of its shape: uint8 for uint8 (rounded), the image's
        dtype for a float image, float32 for other integers. For a DeviceArray, a new
        DeviceArray of the same kind (the caller releases it).

    Raises
    ------
    ValueError
        sigma <= 0 or past the method's limit, an unknown method, border or schedule, an
        image that is not 2-D or has more than 4 channels.
    TypeError
        A device that is not a Device, a tiling that is not a Tiling.
    FloatingPointError
        A host image whose blur is not finite.

    Accuracy
    --------
    Against ``scipy.ndimage.gaussian_filter(image.astype(float64), sigma,
    mode=border, truncate=4.0)`` (per channel), with R the value range of the image (its
    max - min over every pixel and channel; for border "constant" the range of the values and
    0) and M = max |image|, every output value is within

    * ``method="exact"``:     1e-5 R + 2.5e-7 M for sigma <= 1e4 (beyond, the float32 sums of
      its 8 sigma taps add an error growing with sigma: about 1.5e-4 R at sigma 1e5);
    * ``method="recursive"``: 1.5e-3 R + 2.5e-7 M, for every sigma it accepts (the fit of the
      recursive kernel is within 5.8e-4 in L1 of scipy's sampled kernel on each axis, at every
      sigma; the DC gain is 1: a constant image comes back unchanged); typically 1e-4 R;
    * sigma <= IDENTITY_SIGMA on both axes: a copy (scipy differs by at most 1.2e-7 R);

    for uint8 images, before rounding to integers. The 2.5e-7 M term is the float32 rounding of
    values of magnitude M (the device's only number type; half an ulp is 6e-8 M): an offset
    does not enter otherwise, since both methods filter each line (or, exact, each tap) less a
    value of that line (the offset is added back), so 1000 + rand comes out as accurately,
    relative to R, as rand. A host image is scaled by a power of 2 (exact) where max |image|
    lies outside [2^-64, 2^64], so values near 1e-38 (below float32's normal range) or 1e38
    (where the recursive states, up to R sigma / 1.7, would overflow) are right within the
    bound too; a non-finite result raises FloatingPointError instead of coming back. A
    DeviceArray is filtered as it is: its values (and R) need magnitudes within about
    [1e-30, 1e30] for the bound to hold (a GPU may flush values below float32's normal range,
    1.2e-38, to zero; the states overflow past R sigma / 1.7 ~ 3e38), and nothing checks that
    there (scale it first, or pass the host array).

    Any sigma > 0 returns in bounded time.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> from scipy.ndimage import gaussian_filter
    >>> image = np.zeros((32, 32))
    >>> image[16, 16] = 1.0
    >>> out = sg.gaussian_blur(image, 2.0)
    >>> out.shape, out.dtype
    ((32, 32), dtype('float64'))
    >>> np.allclose(out, gaussian_filter(image, 2.0), atol=1.5e-3)      # the bound, R = 1
    True
    >>> exact = sg.gaussian_blur(image, 2.0, method="exact", border="constant")
    >>> np.allclose(exact, gaussian_filter(image, 2.0, mode="constant"), atol=1e-5)
    True
    """
    validation.choice(method, "method", METHODS)
    validation.choice(border, "border", BORDERS)
    validation.choice(schedule, "schedule", SCHEDULES)
    sy, sx = sigma_pair(sigma)
    _check_sigma_range(sy, sx, method)
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"device must be a Device, got {type(device).__name__}")
    if tiling is not None and not isinstance(tiling, Tiling):
        raise TypeError(f"tiling must be a Tiling, got {type(tiling).__name__}")
    identity = is_identity_sigma(sy) and is_identity_sigma(sx)
    if isinstance(image, DeviceArray):
        dev = validation.pick_device(device, [image])
        dev.report("api:blur")   # an entry point: its own host work, reported
        gray = _check_device_image(image, dev)
        if identity:
            return _copy(dev, image, gray)
        return _blur_device(dev, image, gray, sy, sx, method, border, schedule, tiling)

    x, dtype = _check_host_image(image)
    if identity:
        if dtype.kind == "f" or dtype == np.uint8:
            return np.array(image, dtype=dtype, copy=True)
        return x.copy()  # float32, as the blur of other integer types
    dev = validation.pick_device(device, [])
    dev.report("api:blur")
    gray = x.ndim == 2 or x.shape[2] == 1
    h, w = x.shape[0], x.shape[1]
    e = host_exponent(x)
    if e:
        x = np.ldexp(x, np.int32(-e)).astype(np.float32, copy=False)
    with dev.scope() as s:
        xd = s.array(x.reshape(h, w), name="image") if gray else s.track(dev.image(x))
        out = s.track(_blur_device(dev, xd, gray, sy, sx, method, border, schedule, tiling))
        y = out.get().reshape(x.shape)
    if not np.isfinite(y).all():
        raise FloatingPointError(
            f"gaussian_blur produced non-finite values (image range [{float(x.min()):g}, "
            f"{float(x.max()):g}] x 2^{e}, sigma={sigma!r}, method={method!r})")
    if e:
        y = np.ldexp(y, np.int32(e)).astype(np.float32, copy=False)
    if dtype == np.uint8:
        return np.clip(np.rint(y), 0, 255).astype(np.uint8)
    if dtype.kind == "f":
        return y.astype(dtype, copy=False)
    return y


# A host image whose largest magnitude lies outside [2^-HOST_SCALE_EXP, 2^HOST_SCALE_EXP] is
# scaled by a power of 2 (exact) to magnitudes about 1 before the upload and back after the
# readback: the recursive filter's states reach R sigma / 1.7 (overflow past ~1e34 at sigma
# 1e4), the exact filter's products W x reach 4e-5 x there (underflow below ~1e-33), and a GPU
# may flush values below 1.2e-38 (float32's normal range) to zero.
HOST_SCALE_EXP = 64


def host_exponent(x: np.ndarray) -> int:
    """The power of 2 a host image is divided by before the upload (0: none)."""
    amax = max(float(x.max()), -float(x.min()))
    if amax == 0.0 or 2.0 ** -HOST_SCALE_EXP <= amax <= 2.0 ** HOST_SCALE_EXP:
        return 0
    return math.frexp(amax)[1]


def _copy(dev, x: DeviceArray, gray: bool) -> DeviceArray:
    """A copy of a device image (the blur at sigma <= IDENTITY_SIGMA): one pass of the exact
    filter's column kernel with radius 0 (weight 1: the centre value, exactly)."""
    out = like(dev, x, gray)
    try:
        with dev.scope() as s:
            wt = s.track(dev.array(np.array([[1.0, 0.0, 0.0, 0.0]], np.float32),
                                   name="weights"))
            with dev.phase("identity"):
                dev.run(FIR["V"], out, inputs={"X": x, "W": wt}, uniforms={"R": 0},
                        defines={"BORDER": 0})
    except BaseException:
        out.release()
        raise
    return out

def _blur_device(dev, x, gray, sy, sx, method, border, schedule, tiling):
    if x.layout.n_texels > RECIPE_MAX_TEXELS:
        return _blur_passes(dev, x, gray, sy, sx, method, border, schedule, tiling)
    # the recursive filter's coefficients are uniforms (set again when sigma changes); the
    # exact one's weights are arrays of the recipe
    sigmas = (sy, sx) if method == "exact" else None
    key = (x.layout, tuple(x.shape), gray, sigmas, method, border,
           schedule if method == "recursive" else "", tiling)
    cache = recipe_cache(dev)
    recipe = cache.get(key)
    if recipe is None:
        recipe = Recipe.record(dev, x, (sy, sx), lambda r: _blur_passes(
            r, x, gray, sy, sx, method, border, schedule, tiling))
        if recipe.nbytes > cache.max_bytes:  # too large to keep: use it once
            try:
                return recipe.run(dev, x, (sy, sx))
            finally:
                recipe.release()
        cache.put(key, recipe)
    return recipe.run(dev, x, (sy, sx))


def _blur_passes(dev, x, gray, sy, sx, method, border, schedule, tiling):
    if method == "exact":
        return exact_blur(dev, x, gray, sy, sx, border)
    if schedule == "hv":
        return recursive_hv(dev, x, gray, sy, sx, border, tiling)
    return recursive_vtvt(dev, x, gray, sy, sx, border, tiling)
