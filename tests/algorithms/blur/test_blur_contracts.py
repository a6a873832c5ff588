"""The numerical contract of gaussian_blur, checked at its edges against
scipy.ndimage.gaussian_filter (float64 reference, truncate=4.0, the matching border mode).

The bound (gaussian_blur's docstring), with R the value range of the image (0 included for
border "constant") and M = max |image|:
    exact      1e-5 R + 2.5e-7 M (sigma <= 1e4),
    recursive  1.5e-3 R + 2.5e-7 M (every accepted sigma),
    sigma <= IDENTITY_SIGMA on both axes: a copy.
Edges: sigma far below the identity threshold (returns at once), at it, in the normal range, at
the largest accepted (1e4 for the recursive method; above: ValueError naming sigma), values near
1e-38 and 1e38, a constant image (kept within 1e-6 relative), an offset image (1000 + rand:
within 2e-3 of its range for sigma <= 10, like rand itself).
"""

import numpy as np
import pytest
from tests.algorithms.blur.test_blur import reference

from shadergpgpu.algorithms import blur
from shadergpgpu.algorithms.blur import (IDENTITY_SIGMA, MAX_RECURSIVE_SIGMA, gaussian_blur,
                                         gaussian_weights, recursive_coefficients,
                                         recursive_kernel)

from tests.reference import assert_close

METHODS = ("recursive", "exact")
BOUND_R = {"recursive": 1.5e-3, "exact": 1e-5}
BOUND_M = 2.5e-7


def bound(img, method, border):
    """The documented error bound for this image (absolute)."""
    x = img.astype(np.float64)
    lo, hi = float(x.min()), float(x.max())
    if border == "constant":
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    return BOUND_R[method] * (hi - lo) + BOUND_M * float(np.abs(x).max())


def check(dev, img, sigma, method, border="reflect", **kw):
    """Blur, assert finite and within the bound; returns the error relative to the range."""
    out = gaussian_blur(img, sigma, method=method, border=border, device=dev, **kw)
    assert out.shape == img.shape and out.dtype == img.dtype
    assert np.isfinite(out).all(), (sigma, method, border)
    ref = reference(img, sigma, border)
    err = float(np.abs(out.astype(np.float64) - ref).max())
    assert_close(out, ref, rtol=0, atol=bound(img, method, border), what=(sigma, method, border))
    rng = float(img.max()) - float(img.min())
    return err / rng if rng else err


def rand(shape, seed=0):
    return np.random.default_rng(seed).random(shape).astype(np.float32)


# ---- host side: the recursive filter's coefficients -------------------------------------------
@pytest.mark.parametrize("sigma", [IDENTITY_SIGMA * 1.01, 0.2, 0.35, 0.7, 2.0, 8.0, 33.0, 1e3,
                                   MAX_RECURSIVE_SIGMA])
def test_recursive_coefficients_have_gain_one_in_float32(sigma):
    """The float32 coefficients the GPU uses have DC gain 1 (to h0's float32 rounding), and the
    kernel stays within the L1 distance the bound is built on (5.8e-4 per axis)."""
    c = recursive_coefficients(sigma)
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    for z in c["poles"] + c["alphas"]:
        assert f32(z.real) == z.real and f32(z.imag) == z.imag
    h0 = f32(c["h0"])
    gain = sum(2 * (a * 2 / (1 - p)).real for a, p in zip(c["alphas"], c["poles"])) - h0
    assert_close(gain, 1.0, rtol=0, atol=6e-8, what=f"DC gain, sigma {sigma}")
    half = gaussian_weights(sigma)
    n = len(half) + int(30 * sigma) + 50
    h = recursive_kernel(sigma, n)
    t = np.zeros(n)
    t[: len(half)] = half
    assert abs(h[0] - t[0]) + 2 * np.abs(h[1:] - t[1:]).sum() <= 5.8e-4


def test_recursive_coefficients_return_for_any_positive_sigma():
    """The fit once got NaN at sigma 0.001 (the poles underflowed) and LAPACK spun: every
    sigma > 0 gives finite coefficients (no NaN reaches the solver)."""
    out = {s: recursive_coefficients(s)
           for s in (1e-300, 1e-3, 0.1, IDENTITY_SIGMA, IDENTITY_SIGMA * 1.0001, 0.5,
                     MAX_RECURSIVE_SIGMA)}
    for s, c in out.items():
        vals = [c["h0"]] + [v for z in c["poles"] + c["alphas"] for v in (z.real, z.imag)]
        assert np.isfinite(vals).all(), s
    assert out[1e-3] == {"poles": [0j, 0j], "alphas": [0j, 0j], "h0": -1.0}


# ---- sigma at the bottom: the identity ---------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_tiny_sigma_is_a_copy_and_returns_at_once(dev, method):
    ones = np.ones((4, 4), np.float32)
    out = gaussian_blur(ones, 0.001, method=method, device=dev)
    assert np.array_equal(out, ones) and out is not ones
    img = rand((13, 17, 3), seed=1)
    for sigma in (1e-300, 0.001, 0.1, IDENTITY_SIGMA):
        out = gaussian_blur(img, sigma, method=method, device=dev)
        assert np.array_equal(out, img)
        check(dev, img, sigma, method)  # scipy agrees within the bound (1.2e-7 R here)
    f64 = rand((5, 6), seed=2).astype(np.float64) / 3  # a copy keeps the dtype and the values
    assert np.array_equal(gaussian_blur(f64, 0.01, method=method, device=dev), f64)
    u8 = (img * 255).astype(np.uint8)
    assert np.array_equal(gaussian_blur(u8, 0.01, method=method, device=dev), u8)
    # a device image: a new array holding the same values
    x = dev.image(img)
    try:
        y = gaussian_blur(x, 0.01, method=method)
        try:
            assert y is not x and y.shape == x.shape
            assert np.array_equal(y.get(), img)
        finally:
            y.release()
    finally:
        x.release()


@pytest.mark.parametrize("method", METHODS)
def test_one_axis_below_the_identity_threshold(dev, method):
    img = rand((21, 26), seed=3)
    for sigma in ((0.001, 2.0), (3.0, 0.05), (IDENTITY_SIGMA * 1.01, 0.001)):
        for border in ("reflect", "constant"):
            check(dev, img, sigma, method, border)


# ---- sigma in the normal range -----------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_normal_sigmas_within_the_bound(dev, method):
    img = rand((23, 31), seed=4)
    col = rand((17, 22, 3), seed=5)
    for sigma in (0.18, 0.3, 0.5, 1.0, 2.5, (1.5, 6.0), 10.0):
        for border in ("reflect", "nearest", "constant"):
            check(dev, img, sigma, method, border)
        check(dev, col, sigma, method, "reflect")
    if method == "recursive":
        check(dev, img, 3.0, method, "nearest", schedule="vtvt")
        check(dev, col, (0.5, 7.0), method, "constant", schedule="vtvt")


# ---- sigma at the top ----------------------------------------------------------------------------
def test_largest_recursive_sigma(dev):
    """1e4 (MAX_RECURSIVE_SIGMA): a constant image stays constant, a random one comes out near
    its reflected mean, as scipy's, within the bound; above it: ValueError naming sigma."""
    img = rand((16, 19), seed=6)
    const = np.full((16, 19), 0.37, np.float32)
    for border in ("reflect", "nearest", "constant"):
        check(dev, img, MAX_RECURSIVE_SIGMA, "recursive", border)
    for border in ("reflect", "nearest"):
        out = gaussian_blur(const, MAX_RECURSIVE_SIGMA, border=border, device=dev)
        assert_close(out, np.full(out.shape, 0.37), rtol=1e-6, atol=0, what=border)
    out = gaussian_blur(img, MAX_RECURSIVE_SIGMA, device=dev)
    # the reflected mean, nearly flat
    assert_close(out, np.full(out.shape, img.mean()), rtol=0, atol=1e-3)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_blur(img, MAX_RECURSIVE_SIGMA * 1.001, device=dev)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_blur(img, (1.0, 2e4), device=dev)


def test_exact_at_sigma_ten_thousand(dev):
    img = rand((12, 14), seed=7)
    check(dev, img, 1e4, "exact")
    check(dev, 1000 + img, 1e4, "exact")
    const = np.full((12, 14), 1000.0, np.float32)
    assert np.array_equal(gaussian_blur(const, 1e4, method="exact", device=dev), const)


# ---- magnitudes near the ends of float32 -----------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("scale", [1e-38, 1e-30, 1e30, 1e38, 3e38])
def test_values_near_the_float32_limits(dev, method, scale):
    """Right within the bound (relative to the range) or an error: never inf / NaN, never the
    flush of values below float32's normal range to zero."""
    img = (rand((14, 18), seed=8).astype(np.float64) * scale).astype(np.float32)
    sigmas = (0.7, 4.0) + ((MAX_RECURSIVE_SIGMA,) if method == "recursive" else ())
    for sigma in sigmas:
        check(dev, img, sigma, method)
    check(dev, -img, 2.0, method, "constant")


# ---- constant and offset images ----------------------------------------------------------------
@pytest.mark.parametrize("method", METHODS)
def test_constant_image_is_kept(dev, method):
    """Gain 1: a constant image comes back within 1e-6 relative (it was 999.80 for 1000)."""
    sigmas = (0.7, 2.0, 8.0, 33.0) + ((MAX_RECURSIVE_SIGMA,) if method == "recursive" else ())
    for value in (1000.0, -3.5e-3, 7.0e20):
        for shape in ((8, 8), (9, 13, 3)):
            img = np.full(shape, value, np.float32)
            for sigma in sigmas:
                for border in ("reflect", "nearest"):
                    out = gaussian_blur(img, sigma, method=method, border=border, device=dev)
                    assert_close(out, np.full(shape, value), rtol=1e-6, atol=0,
                                 what=(value, shape, sigma, border))


@pytest.mark.parametrize("method", METHODS)
def test_offset_does_not_change_the_error_relative_to_the_range(dev, method):
    """1000 + rand: within 2e-3 of the range for sigma <= 10 (it was 0.17..0.20 off), and
    within the bound; within the output's float32 rounding of the error on rand itself."""
    base = rand((32, 32), seed=9)
    for sigma in (0.5, 2.0, 5.0, 10.0):
        for border in ("reflect", "nearest", "constant"):
            e0 = check(dev, base, sigma, method, border)
            e1 = check(dev, 1000 + base, sigma, method, border)
            rng = float(base.max() - base.min())
            if border != "constant":  # there the range includes the zero outside
                assert e1 <= 2e-3
                assert e1 <= e0 + 4 * 2.0 ** -24 * 1001 / rng, (sigma, border, e0, e1)


def test_offset_device_array(dev):
    """The device path subtracts the offset inside its passes too (no host help)."""
    img = (1000 + rand((20, 24, 2), seed=10)).astype(np.float32)
    x = dev.image(img)
    try:
        for method in METHODS:
            y = gaussian_blur(x, 4.0, method=method)
            try:
                assert_close(y.get(), reference(img, 4.0, "reflect"), rtol=0,
                             atol=min(bound(img, method, "reflect"), 2e-3 * np.ptp(img)),
                             what=method)
            finally:
                y.release()
    finally:
        x.release()


def test_host_scaling_is_a_power_of_two_only_outside_the_safe_band():
    assert blur.api.host_exponent(np.array([[0.0, 1.0e3]], np.float32)) == 0
    assert blur.api.host_exponent(np.zeros((2, 2), np.float32)) == 0
    e = blur.api.host_exponent(np.array([[1e38, -2.0]], np.float32))
    assert 0.5 <= 1e38 / 2.0 ** e < 1
    e = blur.api.host_exponent(np.array([[1e-40, -3e-39]], np.float32))
    assert 0.5 <= 3e-39 / 2.0 ** e < 1
