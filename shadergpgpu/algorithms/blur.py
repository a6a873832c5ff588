"""Gaussian blur on the engine: a recursive filter whose cost does not grow with sigma, and the
exact separable filter.

    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.algorithms.blur import gaussian_blur
    >>> img = np.random.default_rng(0).random((480, 640, 3)).astype(np.float32)
    >>> out = gaussian_blur(img, 8.0)                       # recursive, border "reflect"
    >>> ref = gaussian_blur(img, 8.0, method="exact")       # = scipy.ndimage.gaussian_filter

Both methods match ``scipy.ndimage.gaussian_filter(image, sigma, mode=border, truncate=4.0)``
(per channel): the exact one to float32 rounding, the recursive one to within a few 1e-4 of
the value range (see the tests).

Recursive method
----------------
The kernel is approximated by two complex-conjugate pole pairs (4th order, the Deriche form),

    h(m) = 2 Re(alpha_0 p_0^|m| + alpha_1 p_1^|m|),   p_k = exp(-(b_k + i w_k) / sigma),

with Deriche's (b_k, w_k) and the residues alpha_k fitted by least squares to the sampled,
truncated and normalised kernel that scipy uses. Along a line the causal sums
``w_k(n) = p_k w_k(n-1) + x(n)`` and anticausal sums ``v_k(n) = p_k v_k(n+1) + x(n)`` both read
only the input, and ``y = 2 Re sum_k alpha_k (w_k + v_k) - h(0) x``. The border enters as the
exact initial states w(-1), v(N) (closed forms for reflect, nearest and zero; see
``shaders/blur/carry.frag``), so no warm-up region is needed and nothing depends on sigma.

A fragment cannot walk a whole row, so each line is cut into blocks (a scan over blocks):

1. ``reduce``: one fragment per level-1 block (C1 texels) writes the block's zero-start states
   (8 values per lane through the 8 render targets; a single packed lane keeps them in 2);
2. ``combine`` (0 or more): coarser levels, G blocks at a time, until at most ``top`` blocks
   remain per line;
3. ``carry``: the incoming states of each top-level block, border included;
4. ``down`` (as many as ``combine``): incoming states of the finer blocks;
5. ``apply``: one fragment per 8 texels writes them through the 8 render targets, so the
   result lies in 8 planes (texel t of a line in plane t mod 8).

The state after a block is an affine function of the state before it; the levels combine these
maps, so the number of passes depends on the image size (logarithmically), never on sigma.
The default tiling (C1 = 16 texels, G = 8, at most 16 top blocks) was the fastest measured on
the H200 (benchmarks/RESULTS.md): the apply pass is bound by texture fetches, so a short walk
beats fewer summary bytes.

Schedules (the two of the source): ``"hv"`` filters the rows then the columns (the vertical
passes read the horizontal planes directly) and ends with one interleave pass; ``"vtvt"``
filters the columns, transposes, filters the columns again and transposes back (each
transpose also gathers the planes). Grayscale images use the packed layout (4 pixels per
texel): the vertical passes run four columns per fragment as the four lanes of a texel, the
horizontal pass of "hv" steps through the four pixels of each texel.

Exact method
------------
Two passes (rows, then columns) of the FIR filter truncated at 4 sigma, weights in a small
texture; the border is applied to the tap index. Cost grows linearly with sigma.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..engine.arrays import DeviceArray
from ..engine.errors import TooLargeError
from ..engine.plans import PassPlan, register_plan

METHODS = ("recursive", "exact")
BORDERS = ("reflect", "nearest", "constant")
SCHEDULES = ("hv", "vtvt")
_BORDER_CODE = {"reflect": 0, "nearest": 1, "constant": 2}

# Deriche's 4th-order fit of exp(-x^2/2): decay b_k and frequency w_k of the two pole pairs.
_DERICHE_B = (1.783, 1.723)
_DERICHE_W = (0.6318, 1.997)
TRUNCATE = 4.0


@dataclass(frozen=True)
class Tiling:
    """Blocking of a line: level-1 blocks of ``c1`` texels (a multiple of 8), coarser levels of
    ``g`` blocks each until at most ``top`` blocks remain."""

    c1: int = 16
    g: int = 8
    top: int = 16

    def __post_init__(self):
        if self.c1 < 8 or self.c1 % 8:
            raise ValueError(f"c1 must be a positive multiple of 8, got {self.c1}")
        if self.g < 2 or self.top < 1:
            raise ValueError("g must be >= 2 and top >= 1")

    def levels(self, npos: int) -> list[int]:
        """Block counts per level for a line of ``npos`` texels (level 1 first)."""
        nb = [-(-npos // self.c1)]
        while nb[-1] > self.top:
            nb.append(-(-nb[-1] // self.g))
        return nb


DEFAULT_TILING = Tiling()


# ---- filter coefficients ---------------------------------------------------------------------
def gaussian_weights(sigma: float, truncate: float = TRUNCATE) -> np.ndarray:
    """One half (index 0 = centre) of the normalised sampled kernel that scipy uses."""
    r = int(truncate * float(sigma) + 0.5)
    x = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-0.5 * (x / float(sigma)) ** 2)
    g /= g.sum()
    return g[r:]


@functools.lru_cache(maxsize=64)
def recursive_coefficients(sigma: float) -> dict:
    """Poles p_k and residues alpha_k (complex, k = 0, 1) of the recursive filter for sigma
    (cached: treat the result as read-only)."""
    s = float(sigma)
    half = gaussian_weights(s)
    m_max = max(len(half) - 1, int(10 * s) + 10)
    m = np.arange(m_max + 1)
    target = np.zeros(m_max + 1)
    target[: len(half)] = half
    poles = [np.exp(-(b + 1j * w) / s) for b, w in zip(_DERICHE_B, _DERICHE_W)]
    cols = []
    for p in poles:
        pm = p ** m
        cols += [2 * pm.real, -2 * pm.imag]
    a = np.array(cols).T
    wt = np.full(m_max + 1, math.sqrt(2.0))  # taps m and -m both count
    wt[0] = 1.0
    sol = np.linalg.lstsq(a * wt[:, None], target * wt, rcond=None)[0]
    alphas = [complex(sol[0], sol[1]), complex(sol[2], sol[3])]
    return {"poles": poles, "alphas": alphas, "h0": 2 * (alphas[0] + alphas[1]).real}


def recursive_kernel(sigma: float, n: int) -> np.ndarray:
    """h(0..n-1) of the recursive filter (for checking the fit)."""
    c = recursive_coefficients(sigma)
    m = np.arange(n)
    return sum(2 * (a * p ** m).real for a, p in zip(c["alphas"], c["poles"]))


@functools.lru_cache(maxsize=256)
def _iir_uniforms(sigma: float, nsteps: int) -> dict:
    c = recursive_coefficients(sigma)
    p0, p1 = c["poles"]
    a0, a1 = c["alphas"]

    def pair(z0, z1):
        return (float(z0.real), float(z0.imag), float(z1.real), float(z1.imag))

    return {
        "POLE": pair(p0, p1),
        "LPOLE": (math.log(abs(p0)), float(np.angle(p0)), math.log(abs(p1)), float(np.angle(p1))),
        "ALPHA": pair(a0, a1),
        "H0": float(c["h0"]),
        "CNEAR": pair(1 / (1 - p0), 1 / (1 - p1)),
        "DREFL": pair(1 / (1 - p0 ** (2 * nsteps)), 1 / (1 - p1 ** (2 * nsteps))),
    }


# ---- validation ------------------------------------------------------------------------------
def _sigma_pair(sigma) -> tuple[float, float]:
    s = np.asarray(sigma, dtype=object)
    if s.ndim == 0:
        vals = [sigma, sigma]
    elif s.shape == (2,):
        vals = list(sigma)
    else:
        raise ValueError(f"sigma must be a number or a pair (sigma_y, sigma_x), got {sigma!r}")
    out = []
    for v in vals:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                                 np.floating)):
            raise TypeError(f"sigma must be a real number, got {v!r}")
        v = float(v)
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"sigma must be finite and > 0, got {v!r}")
        out.append(v)
    return out[0], out[1]


def _choice(name, value, options):
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}, got {value!r}")
    return value


# ---- the public function ---------------------------------------------------------------------
def gaussian_blur(image, sigma, method: str = "recursive", border: str = "reflect",
                  schedule: str = "hv", device=None, tiling: Tiling | None = None):
    """Gaussian blur of a 2-D image, grayscale or with up to 4 channels.

    image : numpy (H, W) or (H, W, C<=4), float or integer (uint8 comes back as uint8,
        rounded); or a DeviceArray from ``dev.array`` (H, W) / ``dev.image`` (H, W, C), in which
        case a new DeviceArray of the same kind is returned (the caller releases it).
    sigma : > 0, one value or (sigma_y, sigma_x).
    method : "recursive" (cost independent of sigma) or "exact" (FIR truncated at 4 sigma).
    border : "reflect" (half-sample symmetric), "nearest" or "constant" (zero), as in scipy.
    schedule : "hv" or "vtvt" (recursive method only; see the module notes).
    device : a Device (default: the process-wide one).
    """
    _choice("method", method, METHODS)
    _choice("border", border, BORDERS)
    _choice("schedule", schedule, SCHEDULES)
    sy, sx = _sigma_pair(sigma)
    tiling = tiling or DEFAULT_TILING
    if isinstance(image, DeviceArray):
        dev = image.device if device is None else device
        if dev is not image.device:
            raise ValueError("image: the DeviceArray belongs to another device")
        gray = _check_device_image(image)
        return _blur_device(dev, image, gray, sy, sx, method, border, schedule, tiling)

    a = np.asarray(image)
    if a.dtype.kind not in "biuf" or a.dtype.kind == "b":
        raise TypeError(f"image: expected a real numeric array, got dtype {a.dtype}")
    if a.ndim not in (2, 3):
        raise ValueError(f"image: expected shape (H, W) or (H, W, C), got {a.shape}")
    if a.ndim == 3 and not 1 <= a.shape[2] <= 4:
        raise ValueError(f"image: at most 4 channels are supported, got {a.shape[2]}")
    if a.size == 0:
        raise ValueError(f"image: empty image of shape {a.shape}")
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        raise ValueError("image: contains NaN or infinite values")
    if device is None:
        from ..engine.device import get_device
        device = get_device()
    dev = device
    gray = a.ndim == 2 or a.shape[2] == 1
    x = dev.array(a.reshape(a.shape[0], a.shape[1]), name="image") if gray else \
        dev.image(a, name="image")
    try:
        out = _blur_device(dev, x, gray, sy, sx, method, border, schedule, tiling)
    finally:
        x.release()
    try:
        y = out.get()
    finally:
        out.release()
    y = y.reshape(a.shape)
    if a.dtype == np.uint8:
        return np.clip(np.rint(y), 0, 255).astype(np.uint8)
    if a.dtype.kind == "f":
        return y.astype(a.dtype, copy=False)
    return y


def _check_device_image(a: DeviceArray) -> bool:
    lay = a.layout
    if not lay.packed or lay.order != "row" or lay.wrapped:
        raise ValueError("image: a DeviceArray image must use the packed row layout of "
                         "dev.array / dev.image (and fit in one texture without wrapping)")
    if a.ndim == 2:
        return True
    if a.ndim == 3 and lay.cols == 4 * a.shape[1]:
        return False
    raise ValueError(f"image: DeviceArray of shape {a.shape} is neither an (H, W) array nor "
                     "an (H, W, C) image from dev.image")


def _blur_device(dev, x, gray, sy, sx, method, border, schedule, tiling):
    if method == "exact":
        return _exact(dev, x, gray, sy, sx, border)
    if schedule == "hv":
        return _recursive_hv(dev, x, gray, sy, sx, border, tiling)
    return _recursive_vtvt(dev, x, gray, sy, sx, border, tiling)


# ---- recursive method ------------------------------------------------------------------------
def _tex(dev, w: int, h: int) -> DeviceArray:
    """A scratch array whose texture is exactly w x h texels (no wrapping)."""
    if w > dev.max_texture_size or h > dev.max_texture_size:
        raise TooLargeError(f"a {w}x{h} texel work array exceeds the texture limit "
                            f"{dev.max_texture_size}; the image is too large for this blur")
    return dev.empty((h, 4 * w), packed=True, order="row")


def _release(arrs):
    for a in arrs:
        a.release()


def _line_pass(dev, src, *, axis, seq, nlines, npos, nsteps, sigma, border, tiling, label,
               planes_wp=0):
    """Filter every line of ``src`` along one axis; returns the 8 output planes.

    src : a DeviceArray (lines are its grid columns for axis 1, grid rows for axis 0) or, with
        ``planes_wp`` > 0, the 8 column planes of a previous axis-0 apply pass (lines in
        plane-major order, planes_wp texel columns each).
    """
    uni = _iir_uniforms(sigma, nsteps)
    levels = tiling.levels(npos)
    if planes_wp:
        inputs = {f"P{k}": src[k] for k in range(8)}
    else:
        inputs = {"X": src}
    base = {"AXIS": axis, "SEQ": int(seq), "SRC_PLANES": int(bool(planes_wp)),
            "HAVE_SRC": 0, "USE_PLANES": 0, "WP": max(int(planes_wp), 1),
            "NSTEPS": nsteps, "NPOS": npos, "BORDER": _BORDER_CODE[border],
            "C1": tiling.c1, "G": tiling.g}
    spt = 4 if seq else 1
    with_src = dict(base, HAVE_SRC=1, USE_PLANES=int(bool(planes_wp)))

    # summary sets: 8 arrays (one lane per component), or 2 packed ones for a single lane
    slots = (0, 4) if seq else tuple(range(8))

    def summary(nb):
        return [_tex(dev, nlines, nb) if axis == 1 else _tex(dev, nb, nlines) for _ in slots]

    def sset(prefix, arrs):
        return {f"{prefix}{k}": a for k, a in zip(slots, arrs)}

    sums = [summary(levels[0])]
    with dev.phase(f"{label}.reduce"):
        dev.run("blur/reduce.frag", sset("OUT", sums[0]), inputs=dict(inputs), uniforms=uni,
                defines=with_src)
    for lvl in range(1, len(levels)):
        sums.append(summary(levels[lvl]))
        d = dict(base, NB_CHILD=levels[lvl - 1], CSTEPS=tiling.c1 * spt * tiling.g ** (lvl - 1))
        with dev.phase(f"{label}.combine"):
            dev.run("blur/combine.frag", sset("OUT", sums[lvl]),
                    inputs=sset("S", sums[lvl - 1]), uniforms=uni, defines=d)
    top = len(levels) - 1
    inc = summary(levels[top])
    d = dict(with_src, NB=levels[top], CSTEPS=tiling.c1 * spt * tiling.g ** top)
    with dev.phase(f"{label}.carry"):
        dev.run("blur/carry.frag", sset("OUT", inc),
                inputs=dict(inputs, **sset("S", sums[top])), uniforms=uni, defines=d)
    for lvl in range(top - 1, -1, -1):
        finer = summary(levels[lvl])
        d = dict(base, NB_CHILD=levels[lvl], CSTEPS=tiling.c1 * spt * tiling.g ** lvl)
        with dev.phase(f"{label}.down"):
            dev.run("blur/down.frag", sset("OUT", finer),
                    inputs=dict(sset("I", inc), **sset("S", sums[lvl])), uniforms=uni,
                    defines=d)
        _release(inc)
        inc = finer
    for s in sums:
        _release(s)
    nfb = -(-npos // 8)
    out = [_tex(dev, nlines, nfb) if axis == 1 else _tex(dev, nfb, nlines) for _ in range(8)]
    with dev.phase(f"{label}.apply"):
        dev.run("blur/apply.frag", out, inputs=dict(inputs, **sset("I", inc)), uniforms=uni,
                defines=with_src)
    _release(inc)
    return out


def _like(dev, x: DeviceArray, gray: bool, shape=None) -> DeviceArray:
    shape = tuple(x.shape) if shape is None else shape
    return dev.empty(shape) if gray else dev.empty_image(shape)


def _recursive_hv(dev, x, gray, sy, sx, border, tiling):
    h, w = x.shape[0], x.shape[1]
    wt = x.layout.grid_w  # texels per row
    planes_h = _line_pass(dev, x, axis=0, seq=gray, nlines=h, npos=wt,
                          nsteps=w if gray else wt, sigma=sx, border=border, tiling=tiling,
                          label="H")
    wp = planes_h[0].layout.grid_w
    try:
        planes_v = _line_pass(dev, planes_h, axis=1, seq=False, nlines=8 * wp, npos=h,
                              nsteps=h, sigma=sy, border=border, tiling=tiling, label="V",
                              planes_wp=wp)
    finally:
        _release(planes_h)
    out = _like(dev, x, gray)
    try:
        with dev.phase("interleave"):
            dev.run("blur/interleave.frag", out, inputs={f"P{k}": planes_v[k] for k in range(8)},
                    defines={"USE_PLANES": 1, "WP": wp})
    finally:
        _release(planes_v)
    return out


def _transpose(dev, planes, src_shape, gray, label):
    h, w = src_shape[0], src_shape[1]
    shape_t = (w, h) if gray else (w, h, src_shape[2])
    out = dev.empty(shape_t) if gray else dev.empty_image(shape_t)
    with dev.phase(label):
        dev.run("blur/transpose.frag", out, inputs={f"P{k}": planes[k] for k in range(8)},
                defines={"USE_PLANES": 1, "GRAY": int(gray), "SRC_ROWS": h})
    return out


def _recursive_vtvt(dev, x, gray, sy, sx, border, tiling):
    h = x.shape[0]
    p1 = _line_pass(dev, x, axis=1, seq=False, nlines=x.layout.grid_w, npos=h, nsteps=h,
                    sigma=sy, border=border, tiling=tiling, label="V1")
    try:
        t = _transpose(dev, p1, x.shape, gray, "T1")
    finally:
        _release(p1)
    try:
        p2 = _line_pass(dev, t, axis=1, seq=False, nlines=t.layout.grid_w, npos=t.shape[0],
                        nsteps=t.shape[0], sigma=sx, border=border, tiling=tiling, label="V2")
        shape_t = t.shape
    finally:
        t.release()
    try:
        return _transpose(dev, p2, shape_t, gray, "T2")
    finally:
        _release(p2)


# ---- exact method ----------------------------------------------------------------------------
def _weights_array(dev, sigma):
    half = gaussian_weights(sigma).astype(np.float32)
    cap = 4
    while cap < len(half):
        cap *= 2
    buf = np.zeros((1, cap), dtype=np.float32)
    buf[0, : len(half)] = half
    return dev.array(buf), len(half) - 1


def _exact(dev, x, gray, sy, sx, border):
    h, w = x.shape[0], x.shape[1]
    b = _BORDER_CODE[border]
    wx, rx = _weights_array(dev, sx)
    tmp = _like(dev, x, gray)
    try:
        with dev.phase("exact.H"):
            dev.run("blur/fir.frag", tmp, inputs={"X": x, "W": wx}, uniforms={"R": rx},
                    defines={"AXIS": 0, "GRAY": int(gray), "BORDER": b, "LINE_N": w})
    finally:
        wx.release()
    wy, ry = _weights_array(dev, sy)
    out = _like(dev, x, gray)
    try:
        with dev.phase("exact.V"):
            dev.run("blur/fir.frag", out, inputs={"X": tmp, "W": wy}, uniforms={"R": ry},
                    defines={"AXIS": 1, "GRAY": int(gray), "BORDER": b, "LINE_N": h})
    finally:
        wy.release()
        tmp.release()
    return out


# ---- pass plans ------------------------------------------------------------------------------
def line_passes(npos: int, tiling: Tiling = DEFAULT_TILING) -> dict:
    """Passes of one line filter over lines of ``npos`` texels, per step."""
    n = len(tiling.levels(npos))
    return {"reduce": 1, "combine": n - 1, "carry": 1, "down": n - 1, "apply": 1}


def _texels(w: int, gray: bool) -> int:
    return -(-w // 4) if gray else w


def _hv_phases(h, w, gray=True, tiling=DEFAULT_TILING):
    out = {f"H.{k}": v for k, v in line_passes(_texels(w, gray), tiling).items()}
    out.update({f"V.{k}": v for k, v in line_passes(h, tiling).items()})
    out["interleave"] = 1
    return {k: v for k, v in out.items() if v}


def _vtvt_phases(h, w, gray=True, tiling=DEFAULT_TILING):
    out = {f"V1.{k}": v for k, v in line_passes(h, tiling).items()}
    out["T1"] = 1
    out.update({f"V2.{k}": v for k, v in line_passes(w, tiling).items()})
    out["T2"] = 1
    return {k: v for k, v in out.items() if v}


register_plan(PassPlan(
    name="blur/recursive-hv",
    formula="P(ceil(W/4) or W) + P(H) + 1, P(n) = 3 + 2 (L(n) - 1), L(n) = levels of n texels "
            f"(C1={DEFAULT_TILING.c1}, G={DEFAULT_TILING.g}, top<={DEFAULT_TILING.top}); "
            "no sigma term",
    phases=_hv_phases, params=("h", "w", "gray"),
    notes="per axis: reduce, combine x (L-1), carry, down x (L-1), apply (8 render targets); "
          "then one interleave pass. Weights and coefficients are uniforms (no upload)."))
register_plan(PassPlan(
    name="blur/recursive-vtvt",
    formula="P(H) + 1 + P(W) + 1 (vertical filter, transpose, vertical filter, transpose)",
    phases=_vtvt_phases, params=("h", "w", "gray"),
    notes="the transposes also gather the 8 planes of the apply passes"))
register_plan(PassPlan(
    name="blur/exact",
    formula="2 (rows, then columns); each fragment reads 2 r + 1 taps, r = int(4 sigma + 0.5)",
    phases=lambda h=0, w=0, gray=True: {"exact.H": 1, "exact.V": 1}, params=("h", "w", "gray"),
    notes="pass count is constant, work per pixel grows linearly with sigma"))


# ---- traffic model (for the benchmark's bandwidth ratio) ---------------------------------------
def _line_traffic(nlines: int, npos: int, tiling: Tiling, nsum: int = 8) -> int:
    """Texels read + written by one line filter (each texel of each pass once); ``nsum``
    arrays per summary set (8, or 2 for a packed single lane)."""
    nb = tiling.levels(npos)
    t = nlines * npos + nsum * nb[0] * nlines                      # reduce
    for a, b in zip(nb[:-1], nb[1:]):
        t += nsum * nlines * (3 * a + 2 * b)                       # combine (r a, w b) + down
    t += 2 * nsum * nb[-1] * nlines                                # carry
    nfb = -(-npos // 8)
    t += nlines * npos + nsum * nb[0] * nlines + 8 * nfb * nlines  # apply
    return t


def traffic_bytes(h: int, w: int, gray: bool, schedule: str = "hv",
                  tiling: Tiling = DEFAULT_TILING) -> int:
    """Bytes the recursive blur must move (RGBA32F texels, each read or written once per pass)."""
    wt = _texels(w, gray)
    if schedule == "hv":
        wp = -(-wt // 8)
        t = (_line_traffic(h, wt, tiling, 2 if gray else 8) + _line_traffic(8 * wp, h, tiling)
             + 2 * h * wt)
    else:
        ht = _texels(h, gray)
        t = _line_traffic(wt, h, tiling) + 2 * h * wt + _line_traffic(ht, w, tiling) + 2 * h * wt
    return 16 * t
