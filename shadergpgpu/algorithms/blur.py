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
``shaders/algorithms/blur/carry.frag``), so no warm-up region is needed and nothing depends on
sigma.

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
texture; the border is applied to the tap index. Cost grows linearly with sigma. The tap loop is
a declared split range: on a device with a loop cap (Mesa's llvmpipe stops a fragment's loops
after 65,535 iterations without an error) a long kernel is cut across several passes added by
blending (grayscale rows from sigma ~2,000, other axes from ~8,000 at the default cap), so the
result stays exact; the pass plan ``blur/exact`` counts them.

Kernels
-------
Every kernel is declared once at module level (:data:`REDUCE`, :data:`COMBINE`, :data:`CARRY`,
:data:`DOWN`, :data:`APPLY`, :data:`INTERLEAVE`, :data:`TRANSPOSE`, :data:`FIR`). Sizes, block
sizes and filter coefficients are uniforms and defines only pick finite variants (axis, border,
what the kernel reads), so blurs of any shape and sigma compile a constant number of programs
(38 while the image and the weights fit a texture unwrapped; wrapped layouts add their kinds);
every kernel with a loop declares its iterations (``loop=``) or splits it (``split=``).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from ..engine import validation
from ..engine.arrays import DeviceArray
from ..engine.device import Device
from ..engine.errors import TooLargeError
from ..engine.kernels import In, Split, declare
from ..engine.plans import PassPlan, register_plan

METHODS = ("recursive", "exact")
BORDERS = ("reflect", "nearest", "constant")
SCHEDULES = ("hv", "vtvt")
_BORDER_CODE = {"reflect": 0, "nearest": 1, "constant": 2}

# Deriche's 4th-order fit of exp(-x^2/2): decay b_k and frequency w_k of the two pole pairs.
_DERICHE_B = (1.783, 1.723)
_DERICHE_W = (0.6318, 1.997)
TRUNCATE = 4.0
# Largest kernel radius (taps on each side, int(4 sigma + 0.5)) of the exact method: its weights
# live in one texture and every output pixel reads 2 r + 1 taps (sigma up to about 1e6).
MAX_EXACT_RADIUS = 1 << 22
# Largest sigma of the recursive method (float32 poles p = exp(-(b + i w) / sigma) still differ
# from 1 enough for the recursion to stay accurate: tested to 1e4, within 1e-4 of the range).
MAX_RECURSIVE_SIGMA = 1e4


@dataclass(frozen=True)
class Tiling:
    """Blocking of a line: level-1 blocks of ``c1`` texels (a multiple of 8), coarser levels of
    ``g`` blocks each until at most ``top`` blocks remain."""

    c1: int = 16
    g: int = 8
    top: int = 16

    def __post_init__(self):
        c1 = validation.integer(self.c1, "c1", lo=8, hi=1 << 12)
        if c1 % 8:
            raise ValueError(f"c1 must be a positive multiple of 8, got {c1}")
        validation.integer(self.g, "g", lo=2, hi=1 << 12)
        validation.integer(self.top, "top", lo=1, hi=1 << 12)

    def levels(self, npos: int) -> list[int]:
        """Block counts per level for a line of ``npos`` texels (level 1 first)."""
        nb = [-(-npos // self.c1)]
        while nb[-1] > self.top:
            nb.append(-(-nb[-1] // self.g))
        return nb


DEFAULT_TILING = Tiling()


# ---- the kernels -------------------------------------------------------------------------------
# Every kernel is declared once here. Sizes (texels and steps per line, block sizes, plane
# widths, the FIR radius) and the filter coefficients are uniforms; defines only pick finite
# variants: AXIS (which way the lines run), BORDER, and, fixed per declaration, what the kernel
# reads (SEQ: a packed grayscale row, one lane; HAVE_SRC / SRC_PLANES / USE_PLANES: the image X
# or the eight planes P0..P7 of a previous apply pass). So a blur of any size and sigma compiles
# at most one program per (kernel, AXIS, BORDER, layout kind).
_PACKED = In(packed=True, order="row")
_IIR_UNIFORMS = {"POLE": "vec4", "LPOLE": "vec4", "ALPHA": "vec4", "H0": "float",
                 "CNEAR": "vec4", "DREFL": "vec4", "NSTEPS": "int", "NPOS": "int"}
_SOURCES = ("image", "planes")
_TILING_HINT = "use a Tiling with smaller c1, g or top"


def _set(prefix: str, seq: bool) -> tuple:
    """Names of one summary set: 8 arrays, or 2 (causal, anticausal) for a single packed lane."""
    return tuple(f"{prefix}{k}" for k in ((0, 4) if seq else range(8)))


def _ins(*names) -> dict:
    return {n: _PACKED for group in names for n in group}


def _src(source: str) -> tuple:
    return ("X",) if source == "image" else tuple(f"P{k}" for k in range(8))


def _src_defines(source: str, seq: bool) -> dict:
    planes = int(source == "planes")
    return {"AXIS": 0, "SEQ": int(seq), "HAVE_SRC": 1, "SRC_PLANES": planes,
            "USE_PLANES": planes}


def _src_uniforms(source: str, extra: dict) -> dict:
    u = dict(_IIR_UNIFORMS, **extra)
    if source == "planes":
        u["WP"] = "int"
    return u


def _spt(a) -> int:
    return 4 if a.defines["SEQ"] else 1


# Loop iterations per fragment, counting every loop (constant ones too, in case the compiler
# keeps them): the engine refuses a call over the device's loop cap with the tiling hint.
def _reduce_loop(a):
    return 2 + a.uniforms["C1"] * (1 + (12 if a.defines["SEQ"] else 2))


def _combine_loop(a):
    return 2 + 3 * a.uniforms["G"]


def _carry_loop(a):
    return 4 + 6 * a.uniforms["NB"]


def _down_loop(a):
    return 6 * a.uniforms["G"]


def _apply_loop(a):
    spt = _spt(a)
    return 2 * a.uniforms["C1"] * (1 + 3 * spt) + 16 * (1 + spt) + 16


# (source, seq) variants: the horizontal pass of "hv" reads the image (packed grayscale rows
# with SEQ), the vertical one the planes of the horizontal apply pass; "vtvt" reads images.
_SRC_VARIANTS = (("image", False), ("image", True), ("planes", False))

REDUCE = {
    (src, seq): declare(
        "algorithms/blur/reduce.frag", inputs=_ins(_src(src)), outputs=_set("OUT", seq),
        uniforms=_src_uniforms(src, {"C1": "int"}), defines=_src_defines(src, seq),
        loop=_reduce_loop, hint=_TILING_HINT,
        name=f"blur/reduce[{src},{'seq' if seq else 'lanes'}]")
    for src, seq in _SRC_VARIANTS}
CARRY = {
    (src, seq): declare(
        "algorithms/blur/carry.frag", inputs=_ins(_src(src), _set("S", seq)),
        outputs=_set("OUT", seq),
        uniforms=_src_uniforms(src, {"NB": "int", "CSTEPS": "int"}),
        defines=dict(_src_defines(src, seq), BORDER=0), loop=_carry_loop, hint=_TILING_HINT,
        name=f"blur/carry[{src},{'seq' if seq else 'lanes'}]")
    for src, seq in _SRC_VARIANTS}
APPLY = {
    (src, seq): declare(
        "algorithms/blur/apply.frag", inputs=_ins(_src(src), _set("I", seq)), outputs=8,
        uniforms=_src_uniforms(src, {"C1": "int"}), defines=_src_defines(src, seq),
        loop=_apply_loop, hint=_TILING_HINT,
        name=f"blur/apply[{src},{'seq' if seq else 'lanes'}]")
    for src, seq in _SRC_VARIANTS}
_NO_SRC = {"HAVE_SRC": 0, "SRC_PLANES": 0, "USE_PLANES": 0}
COMBINE = {
    seq: declare(
        "algorithms/blur/combine.frag", inputs=_ins(_set("S", seq)), outputs=_set("OUT", seq),
        uniforms=dict(_IIR_UNIFORMS, G="int", NB_CHILD="int", CSTEPS="int"),
        defines=dict(_NO_SRC, AXIS=0, SEQ=int(seq)), loop=_combine_loop, hint=_TILING_HINT,
        name=f"blur/combine[{'seq' if seq else 'lanes'}]")
    for seq in (False, True)}
DOWN = {
    seq: declare(
        "algorithms/blur/down.frag", inputs=_ins(_set("I", seq), _set("S", seq)),
        outputs=_set("OUT", seq),
        uniforms=dict(_IIR_UNIFORMS, G="int", NB_CHILD="int", CSTEPS="int"),
        defines=dict(_NO_SRC, AXIS=0, SEQ=int(seq)), loop=_down_loop, hint=_TILING_HINT,
        name=f"blur/down[{'seq' if seq else 'lanes'}]")
    for seq in (False, True)}
_PLANES_IN = _ins(_src("planes"))
INTERLEAVE = declare("algorithms/blur/interleave.frag", inputs=_PLANES_IN,
                     uniforms={"WP": "int"}, defines={"USE_PLANES": 1}, name="blur/interleave")
TRANSPOSE = declare("algorithms/blur/transpose.frag", inputs=_PLANES_IN,
                    defines={"USE_PLANES": 1, "GRAY": 0}, loop=lambda a: 4,
                    name="blur/transpose")


def _taps(a) -> int:
    return 2 * a.uniforms["R"] + 1


_FIR_HINT = "use method='recursive' (its cost does not grow with sigma)"
# The exact filter's tap loop is a split range: over the loop cap (huge sigma), the engine cuts
# it across passes that add into the output. The horizontal grayscale variant runs the taps once
# per lane of the texel (4 iterations per tap, plus the lane loop).
FIR = {
    "V": declare("algorithms/blur/fir.frag", inputs={"X": In(like="OUT"), "W": In()},
                 uniforms={"R": "int"}, defines={"AXIS": 1, "GRAY": 0, "BORDER": 0},
                 split=Split("k", length=_taps, cost=1), hint=_FIR_HINT, name="blur/fir-v"),
    "H": declare("algorithms/blur/fir.frag", inputs={"X": In(like="OUT"), "W": In()},
                 uniforms={"R": "int"}, defines={"AXIS": 0, "GRAY": 0, "BORDER": 0},
                 split=Split("k", length=_taps, cost=1), hint=_FIR_HINT, name="blur/fir-h"),
    "H_GRAY": declare("algorithms/blur/fir.frag", inputs={"X": In(like="OUT"), "W": In()},
                      uniforms={"R": "int"}, defines={"AXIS": 0, "GRAY": 1, "BORDER": 0},
                      split=Split("k", length=_taps, cost=4, extra=4), hint=_FIR_HINT,
                      name="blur/fir-h-gray"),
}


# ---- filter coefficients ---------------------------------------------------------------------
def gaussian_weights(sigma: float, truncate: float = TRUNCATE) -> np.ndarray:
    """One half (index 0 = centre) of the normalised sampled kernel that scipy uses."""
    r = int(truncate * float(sigma) + 0.5)
    x = np.arange(-r, r + 1, dtype=np.float64)
    g = np.exp(-0.5 * (x / float(sigma)) ** 2)
    g /= g.sum()
    return g[r:]


_FIT_SAMPLES = 20_000


@functools.lru_cache(maxsize=64)
def recursive_coefficients(sigma: float) -> dict:
    """Poles p_k and residues alpha_k (complex, k = 0, 1) of the recursive filter for sigma
    (cached: treat the result as read-only).

    The residues are fitted by least squares to scipy's sampled kernel over m = 0 .. 10 sigma;
    past 20,000 taps the fit samples every ``stride``-th tap (each sample weighted for the taps
    it stands for), so the host work stays bounded at large sigma.
    """
    s = float(sigma)
    r = int(TRUNCATE * s + 0.5)
    m_max = max(r, int(10 * s) + 10)
    stride = max(1, -(-m_max // _FIT_SAMPLES))
    m = np.arange(0, m_max + 1, stride, dtype=np.float64)
    norm = np.exp(-0.5 * (np.arange(-r, r + 1, dtype=np.float64) / s) ** 2).sum()
    target = np.where(m <= r, np.exp(-0.5 * (m / s) ** 2) / norm, 0.0)
    poles = [np.exp(-(b + 1j * w) / s) for b, w in zip(_DERICHE_B, _DERICHE_W)]
    cols = []
    for p in poles:
        pm = np.exp(m * np.log(p))
        cols += [2 * pm.real, -2 * pm.imag]
    a = np.array(cols).T
    wt = np.full(len(m), math.sqrt(2.0 * stride))  # taps m and -m both count
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
    if not lay.packed or lay.order != "row" or lay.wrapped:
        raise ValueError("image: a DeviceArray image must use the packed row layout of "
                         "dev.array / dev.image (and fit in one texture without wrapping)")
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

    image : numpy (H, W) or (H, W, C<=4), float or integer (uint8 comes back as uint8,
        rounded); or a DeviceArray from ``dev.array`` (H, W) / ``dev.image`` (H, W, C), in which
        case a new DeviceArray of the same kind is returned (the caller releases it).
    sigma : > 0, one value or (sigma_y, sigma_x) (at most MAX_RECURSIVE_SIGMA for the recursive
        method; the exact one takes kernel radii int(4 sigma + 0.5) up to MAX_EXACT_RADIUS).
    method : "recursive" (cost independent of sigma) or "exact" (FIR truncated at 4 sigma; on a
        device with a loop cap, a very long kernel runs over several added passes).
    border : "reflect" (half-sample symmetric), "nearest" or "constant" (zero), as in scipy.
    schedule : "hv" or "vtvt" (recursive method only; see the module notes).
    device : a Device (default: the image's, or the process-wide one).
    tiling : a :class:`Tiling` (recursive method; default :data:`DEFAULT_TILING`).
    """
    validation.choice(method, "method", METHODS)
    validation.choice(border, "border", BORDERS)
    validation.choice(schedule, "schedule", SCHEDULES)
    sy, sx = _sigma_pair(sigma)
    _check_sigma_range(sy, sx, method)
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"device must be a Device, got {type(device).__name__}")
    if tiling is None:
        tiling = DEFAULT_TILING
    elif not isinstance(tiling, Tiling):
        raise TypeError(f"tiling must be a Tiling, got {type(tiling).__name__}")
    if isinstance(image, DeviceArray):
        dev = validation.pick_device(device, [image])
        gray = _check_device_image(image, dev)
        return _blur_device(dev, image, gray, sy, sx, method, border, schedule, tiling)

    x, dtype = _check_host_image(image)
    dev = validation.pick_device(device, [])
    gray = x.ndim == 2 or x.shape[2] == 1
    h, w = x.shape[0], x.shape[1]
    with dev.scope() as s:
        xd = s.array(x.reshape(h, w), name="image") if gray else s.track(dev.image(x))
        out = s.track(_blur_device(dev, xd, gray, sy, sx, method, border, schedule, tiling))
        y = out.get().reshape(x.shape)
    if dtype == np.uint8:
        return np.clip(np.rint(y), 0, 255).astype(np.uint8)
    if dtype.kind == "f":
        return y.astype(dtype, copy=False)
    return y


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
    source = "planes" if planes_wp else "image"
    key = (source, bool(seq))
    uni = dict(_iir_uniforms(sigma, nsteps), NSTEPS=nsteps, NPOS=npos)
    src_uni = dict(uni, WP=int(planes_wp)) if planes_wp else uni
    levels = tiling.levels(npos)
    inputs = {f"P{k}": src[k] for k in range(8)} if planes_wp else {"X": src}
    ax = {"AXIS": axis}
    spt = 4 if seq else 1

    def sset(prefix, arrs):
        return dict(zip(_set(prefix, seq), arrs))

    with dev.scope() as sc:  # summaries and incoming states: released however this ends
        def summary(nb):
            return [sc.track(_tex(dev, nlines, nb) if axis == 1 else _tex(dev, nb, nlines))
                    for _ in _set("", seq)]

        sums = [summary(levels[0])]
        with dev.phase(f"{label}.reduce"):
            dev.run(REDUCE[key], sset("OUT", sums[0]), inputs=dict(inputs),
                    uniforms=dict(src_uni, C1=tiling.c1), defines=ax)
        for lvl in range(1, len(levels)):
            sums.append(summary(levels[lvl]))
            u = dict(uni, G=tiling.g, NB_CHILD=levels[lvl - 1],
                     CSTEPS=tiling.c1 * spt * tiling.g ** (lvl - 1))
            with dev.phase(f"{label}.combine"):
                dev.run(COMBINE[seq], sset("OUT", sums[lvl]), inputs=sset("S", sums[lvl - 1]),
                        uniforms=u, defines=ax)
        top = len(levels) - 1
        inc = summary(levels[top])
        u = dict(src_uni, NB=levels[top], CSTEPS=tiling.c1 * spt * tiling.g ** top)
        with dev.phase(f"{label}.carry"):
            dev.run(CARRY[key], sset("OUT", inc), inputs=dict(inputs, **sset("S", sums[top])),
                    uniforms=u, defines=dict(ax, BORDER=_BORDER_CODE[border]))
        for lvl in range(top - 1, -1, -1):
            finer = summary(levels[lvl])
            u = dict(uni, G=tiling.g, NB_CHILD=levels[lvl],
                     CSTEPS=tiling.c1 * spt * tiling.g ** lvl)
            with dev.phase(f"{label}.down"):
                dev.run(DOWN[seq], sset("OUT", finer),
                        inputs=dict(sset("I", inc), **sset("S", sums[lvl])), uniforms=u,
                        defines=ax)
            _release(inc)
            inc = finer
        for sm in sums:
            _release(sm)
        nfb = -(-npos // 8)
        out = [sc.track(_tex(dev, nlines, nfb) if axis == 1 else _tex(dev, nfb, nlines))
               for _ in range(8)]
        with dev.phase(f"{label}.apply"):
            dev.run(APPLY[key], out, inputs=dict(inputs, **sset("I", inc)),
                    uniforms=dict(src_uni, C1=tiling.c1), defines=ax)
        for a in out:
            sc.keep(a)
    return out


def _like(dev, x: DeviceArray, gray: bool, shape=None) -> DeviceArray:
    shape = tuple(x.shape) if shape is None else shape
    return dev.empty(shape) if gray else dev.empty_image(shape)


def _planes(planes) -> dict:
    return {f"P{k}": planes[k] for k in range(8)}


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
            dev.run(INTERLEAVE, out, inputs=_planes(planes_v), uniforms={"WP": wp})
    finally:
        _release(planes_v)
    return out


def _transpose(dev, planes, src_shape, gray, label):
    h, w = src_shape[0], src_shape[1]
    shape_t = (w, h) if gray else (w, h, src_shape[2])
    out = dev.empty(shape_t) if gray else dev.empty_image(shape_t)
    with dev.phase(label):
        dev.run(TRANSPOSE, out, inputs=_planes(planes), defines={"GRAY": int(gray)})
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
def exact_radius(sigma: float) -> int:
    """Taps on each side of the exact filter (scipy's ``int(truncate * sigma + 0.5)``)."""
    return int(TRUNCATE * float(sigma) + 0.5)


def _weights_array(dev, sigma):
    half = gaussian_weights(sigma).astype(np.float32)
    cap = 4
    while cap < len(half):
        cap *= 2
    buf = np.zeros((1, cap), dtype=np.float32)
    buf[0, : len(half)] = half
    return dev.array(buf, name="weights"), len(half) - 1


def _fir_kernel(axis: int, gray: bool):
    return FIR["V"] if axis == 1 else FIR["H_GRAY"] if gray else FIR["H"]


def _exact(dev, x, gray, sy, sx, border):
    b = {"BORDER": _BORDER_CODE[border]}
    with dev.scope() as s:
        wx, rx = _weights_array(dev, sx)
        s.track(wx)
        tmp = s.track(_like(dev, x, gray))
        with dev.phase("exact.H"):
            dev.run(_fir_kernel(0, gray), tmp, inputs={"X": x, "W": wx}, uniforms={"R": rx},
                    defines=b)
        wy, ry = _weights_array(dev, sy)
        s.track(wy)
        out = _like(dev, x, gray)
        try:
            with dev.phase("exact.V"):
                dev.run(FIR["V"], out, inputs={"X": tmp, "W": wy}, uniforms={"R": ry},
                        defines=b)
        except BaseException:
            out.release()
            raise
    return out


def exact_passes(sigma: float, axis: int, gray: bool, loop_cap: int | None) -> int:
    """Passes the exact filter draws along one axis (1 unless the tap loop exceeds the cap)."""
    k = _fir_kernel(axis, gray)
    cuts = k.slices({}, {"R": exact_radius(sigma)}, k.defines, loop_cap)
    return max(1, len(cuts))


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
def _exact_phases(h=0, w=0, gray=True, sigma=1.0, loop_cap=None):
    sy, sx = _sigma_pair(sigma)
    return {"exact.H": exact_passes(sx, 0, gray, loop_cap),
            "exact.V": exact_passes(sy, 1, gray, loop_cap)}


register_plan(PassPlan(
    name="blur/exact",
    formula="S(sigma_x) + S(sigma_y) (rows, then columns); each fragment reads 2 r + 1 taps, "
            "r = int(4 sigma + 0.5); S = 1 pass, or ceil(c (2 r + 1) / (cap - e)) passes "
            "added by blending when that exceeds the device's loop cap (c = 4, e = 4 for the "
            "grayscale rows, else c = 1, e = 0)",
    phases=_exact_phases, params=("h", "w", "gray", "sigma", "loop_cap"),
    notes="one pass per axis below the loop cap (any GPU but Mesa's llvmpipe at sigma < ~2,000); "
          "work per pixel grows linearly with sigma"))


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
