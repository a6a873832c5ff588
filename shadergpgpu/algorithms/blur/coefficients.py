"""Filter coefficients: one half of scipy's sampled kernel (:func:`gaussian_weights`, the exact
method's weights), the identity threshold (:data:`IDENTITY_SIGMA`), the recursive filter's
poles and residues fitted under a DC gain of 1 (:func:`recursive_coefficients`), its impulse
response (:func:`recursive_kernel`) and the uniforms its kernels take."""
from __future__ import annotations

import functools
import math

import numpy as np

from .options import TRUNCATE

# Deriche's 4th-order fit of exp(-x^2/2): decay b_k and frequency w_k of the two pole pairs.
_DERICHE_B = (1.783, 1.723)
_DERICHE_W = (0.6318, 1.997)


def gaussian_weights(sigma: float, truncate: float = TRUNCATE) -> np.ndarray:
    """One half (index 0 = centre) of the normalised sampled kernel that scipy uses."""
    r = int(truncate * float(sigma) + 0.5)
    x = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-0.5 * (x / float(sigma)) ** 2)
    g /= g.sum()
    return g[r:]


_FIT_SAMPLES = 20_000
# Below this sigma the Gaussian is the identity to float32 precision: the neighbour tap's
# weight relative to the centre, exp(-1 / (2 sigma^2)), is at most 2^-24 (half an ulp of 1), so
# the taps off the centre change no float32 output by more than 1.2e-7 of the image's range.
# gaussian_blur returns a copy there (both methods); the recursive fit would be meaningless
# (its poles exp(-1.7 / sigma) underflow: at sigma 0.001 the fit got NaN and LAPACK spun).
IDENTITY_SIGMA = 1.0 / math.sqrt(48.0 * math.log(2.0))  # 0.1734
# Relative Tikhonov weight of the residue fit: below sigma ~ 0.3 the kernel has 2 or 3 taps and
# the four residues are nearly undetermined (unregularised they reached 100 and cancelled).
_FIT_RIDGE = 1e-9


def _f32(z: complex) -> complex:
    """``z`` with its real and imaginary parts rounded to float32 (the values the GPU uses)."""
    return complex(float(np.float32(z.real)), float(np.float32(z.imag)))


def is_identity_sigma(sigma: float) -> bool:
    """Whether the Gaussian of ``sigma`` is the identity to float32 precision (see
    :data:`IDENTITY_SIGMA`)."""
    return float(sigma) <= IDENTITY_SIGMA


@functools.lru_cache(maxsize=64)
def recursive_coefficients(sigma: float) -> dict:
    """Poles p_k and residues alpha_k (complex, k = 0, 1) and the centre correction h0 of the
    recursive filter for sigma (cached: treat the result as read-only).

    The poles are Deriche's, rounded to float32 (the values the GPU recursion multiplies by);
    the residues are fitted by least squares to scipy's sampled kernel over m = 0 .. 10 sigma
    under the constraint that the filter's DC gain, 2 Re sum_k alpha_k (1 + p_k) / (1 - p_k), is
    exactly 1 (an unconstrained fit had a gain of 1 - 0.6e-4 .. 1.6e-4 per axis: a constant image
    of 1000 came back as 999.8). Past 20,000 taps the fit samples every ``stride``-th tap (each
    sample weighted for the taps it stands for), so the host work stays bounded at large sigma.
    The residues are then rounded to float32 and h0 (the filter computes
    y = 2 Re sum_k alpha_k (w_k + v_k) - h0 x, so the centre tap is 4 Re sum alpha_k - h0) is
    chosen in float64 so that those float32 coefficients have a DC gain of 1: only h0's own
    float32 rounding (< 3e-8) remains. At or below :data:`IDENTITY_SIGMA`: the identity (poles
    0, residues 0, h0 = -1).
    """
    s = float(sigma)
    if not s > 0 or not math.isfinite(s):
        raise ValueError(f"sigma must be positive and finite, got {sigma!r}")
    if is_identity_sigma(s):
        return {"poles": [0j, 0j], "alphas": [0j, 0j], "h0": -1.0}
    r = int(TRUNCATE * s + 0.5)
    m_max = max(r, int(10 * s) + 10)
    stride = max(1, -(-m_max // _FIT_SAMPLES))
    m = np.arange(0, m_max + 1, stride, dtype=np.float64)
    norm = np.exp(-0.5 * (np.arange(-r, r + 1, dtype=np.float64) / s) ** 2).sum()
    target = np.where(m <= r, np.exp(-0.5 * (m / s) ** 2) / norm, 0.0)
    poles = [_f32(np.exp(-(b + 1j * w) / s)) for b, w in zip(_DERICHE_B, _DERICHE_W)]
    cols, gain = [], []
    for p in poles:
        pm = np.exp(m * np.log(p))
        cols += [2 * pm.real, -2 * pm.imag]
        q = (1 + p) / (1 - p)  # sum over all m of p^|m|
        gain += [2 * q.real, -2 * q.imag]
    a = np.array(cols).T
    c = np.array(gain)
    wt = np.full(len(m), math.sqrt(2.0 * stride))  # taps m and -m both count
    wt[0] = 1.0
    aw, tw = a * wt[:, None], target * wt
    # the constraint c . x = 1: x = x0 + N z with c . x0 = 1 and N spanning c's null space
    x0 = c / (c @ c)
    nsp = np.linalg.qr(c[:, None], mode="complete")[0][:, 1:]
    mat = aw @ nsp
    lam = _FIT_RIDGE * np.linalg.norm(mat)
    z = np.linalg.lstsq(np.vstack([mat, lam * nsp]),
                        np.concatenate([tw - aw @ x0, -lam * x0]), rcond=None)[0]
    sol = (x0 + nsp @ z).astype(np.float32).astype(np.float64)
    alphas = [complex(sol[0], sol[1]), complex(sol[2], sol[3])]
    h0 = sum(2 * (al * 2 / (1 - p)).real for al, p in zip(alphas, poles)) - 1.0
    return {"poles": poles, "alphas": alphas, "h0": float(h0)}


def recursive_kernel(sigma: float, n: int) -> np.ndarray:
    """h(0..n-1) of the recursive filter (for checking the fit): 2 Re sum_k alpha_k p_k^m, and
    the centre 4 Re sum_k alpha_k - h0."""
    c = recursive_coefficients(sigma)
    m = np.arange(n)
    h = np.array(sum(2 * (a * p ** m).real for a, p in zip(c["alphas"], c["poles"])),
                 dtype=np.float64)
    h[0] = 2 * h[0] - c["h0"]
    return h


@functools.lru_cache(maxsize=256)
def iir_uniforms(sigma: float, nsteps: int) -> dict:
    c = recursive_coefficients(sigma)
    p0, p1 = c["poles"]
    a0, a1 = c["alphas"]

    def pair(z0, z1):
        return (float(z0.real), float(z0.imag), float(z1.real), float(z1.imag))

    def lpole(p):  # (log |p|, arg p) of the float32 pole, so p^n agrees with n multiplications;
        # a zero pole (the identity) as exp(-80 n): 1 at n = 0, nothing after
        return (math.log(abs(p)), float(np.angle(p))) if p != 0 else (-80.0, 0.0)

    return {
        "POLE": pair(p0, p1),
        "LPOLE": lpole(p0) + lpole(p1),
        "ALPHA": pair(a0, a1),
        "H0": float(c["h0"]),
        "CNEAR": pair(1 / (1 - p0), 1 / (1 - p1)),
        "DREFL": pair(1 / (1 - p0 ** (2 * nsteps)), 1 / (1 - p1 ** (2 * nsteps))),
    }


#: the name recipes.py imports (until it imports iir_uniforms)
