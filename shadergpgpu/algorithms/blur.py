"""Gaussian blur on the engine: a recursive filter whose cost does not grow with sigma, and the
exact separable filter.

    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.algorithms.blur import gaussian_blur
    >>> img = np.random.default_rng(0).random((480, 640, 3)).astype(np.float32)
    >>> out = gaussian_blur(img, 8.0)                       # recursive, border "reflect"
    >>> ref = gaussian_blur(img, 8.0, method="exact")       # = scipy.ndimage.gaussian_filter

Both methods match ``scipy.ndimage.gaussian_filter(image, sigma, mode=border, truncate=4.0)``
(per channel): the exact one to float32 rounding, the recursive one to within 1.5e-3 of the
value range (typically 1e-4), whatever the image's offset; :func:`gaussian_blur` states the
bound, ``tests/test_blur_contracts.py`` checks it at its edges (sigma at the identity
threshold and at the largest accepted, values near 1e-38 and 1e38, constant and offset
images). Both keep a constant image exactly: their DC gain is 1 and they filter each line
less a value of that line (see "Offsets" below).

Recursive method
----------------
The kernel is approximated by two complex-conjugate pole pairs (4th order, the Deriche form),

    h(m) = 2 Re(alpha_0 p_0^|m| + alpha_1 p_1^|m|),   p_k = exp(-(b_k + i w_k) / sigma),

with Deriche's (b_k, w_k) (rounded to float32, the values the recursion multiplies by) and the
residues alpha_k fitted by least squares to the sampled, truncated and normalised kernel that
scipy uses, under the constraint that the DC gain is 1 (:func:`recursive_coefficients`; the
unconstrained fit lost 0.6e-4 .. 1.6e-4 per axis, so 1000 came back as 999.8). Along a line the
causal sums ``w_k(n) = p_k w_k(n-1) + x(n)`` and anticausal sums
``v_k(n) = p_k v_k(n+1) + x(n)`` both read only the input, and
``y = 2 Re sum_k alpha_k (w_k + v_k) - h0 x``, h0 (about h(0)) set so that the float32
coefficients have a DC gain of 1. The border enters as the
exact initial states w(-1), v(N) (closed forms for reflect, nearest and zero; see
``shaders/algorithms/blur/carry.frag``), so no warm-up region is needed and nothing depends on
sigma.

A fragment cannot walk a whole row, so each line is cut into blocks (a scan over blocks):

1. ``reduce``: one fragment per level-1 block (C1 texels) writes the block's zero-start states
   (8 values per lane through the 8 render targets, or in two passes of 4 on a device with 4;
   a single packed lane keeps them in 2);
2. ``combine`` (0 or more): coarser levels, G blocks at a time, until at most ``top`` blocks
   remain per line;
3. ``carry``: the incoming states of each top-level block, border included;
4. ``down`` (as many as ``combine``): incoming states of the finer blocks;
5. ``apply``: one fragment per 8 texels writes them through the 8 render targets, so the
   result lies in 8 planes (texel t of a line in plane t mod 8; 4 of each on a device with 4
   render targets). It first carries its block's incoming states over the rest of the block:
   the texels before its own through the causal recursion, those after through the
   anticausal one (backward from the block's end), both as ``s = p s + x`` from zero, in one
   loop of the same length in every fragment (neighbouring fragments sit at different places
   of their blocks; a walk that depended on the place made a GPU run both walks for each).

The state after a block is an affine function of the state before it; the levels combine these
maps, so the number of passes depends on the image size (logarithmically), never on sigma.
The default tiling (C1 = 16 texels, G = 8, at most 16 top blocks) was the fastest measured on
the H200 (benchmarks/RESULTS.md, before the walk above): the apply pass is bound by texture
fetches, so a short walk beats fewer summary bytes.

Schedules (the two of the source): ``"hv"`` filters the rows then the columns (the vertical
passes read the horizontal planes directly) and ends with one interleave pass; ``"vtvt"``
filters the columns, transposes, filters the columns again and transposes back (each
transpose also gathers the planes). Grayscale images use the packed layout (4 pixels per
texel): the vertical passes run four columns per fragment as the four lanes of a texel, the
horizontal pass of "hv" steps through the four pixels of each texel.

Device profiles
---------------
Under a profile (``Device(profile=...)``) the blur adapts to the device's limits instead of
failing (:func:`line_config`):

* render targets (``dev.max_outputs``): with 8 the summary passes write their 8 arrays at once
  and the apply pass 8 planes; with 4 (GeForce 7800 GTX, WebGL2, Raspberry Pi 4) each summary
  pass is drawn twice (causal half, then anticausal half: kernels with ``PART`` 1 and 2) and
  the apply pass writes 4 planes (``NPL`` 4: 4 texels per fragment; the interleave and
  transpose passes gather 4 planes). A packed grayscale row keeps its 2 summary arrays. Fewer
  than 4 targets: ``method="exact"`` (one target).
* loop cap (``dev.loop_cap``, 255 on the 7800 GTX): the tiling is lowered until every recursive
  kernel's declared loops fit (:func:`fit_tiling`; the default fits 255: the packed
  grayscale rows' reduce loops 210 times); an explicit ``tiling=`` is used as given (over the
  cap: LoopBudgetError).
* texture size: the image and every work array wrap into the device's texture size (all
  kernels read and write through the layout accessors); past what a wrapped texture holds,
  TooLargeError.
* float blending: only the exact method's split tap loop accumulates; without float blending
  the engine adds each slice by ping-pong passes (draw, combine, copy back).

The pass plans take ``device=`` (or ``max_outputs=``, ``loop_cap=``, ``float_blending=``) and
match the pass counter under every profile.

Offsets
-------
The recursive kernels (reduce, carry, apply) filter each line less its first value c and add c
to the output; the exact one sums each output's taps less its centre value and adds it after.
The filters are linear with gain 1, so the result is the same, but the float32 rounding of the
recursion and of the long tap sums is then relative to the line's range, not to its magnitude:
on 1000 + rand(64, 64) the recursive blur was 0.17..0.20 of the range off scipy (with the
gain error; 2..8x its error on rand without it), the exact one at sigma 10,000 1.6e-2; both are
now within the rounding of the output (6e-8 of 1000). For border "constant", the zero outside
becomes -c. Below :data:`IDENTITY_SIGMA` an axis is the identity (the recursive coefficients
are then alpha = 0, h0 = -1); with both axes there the blur is a copy.

Repeated calls
--------------
The passes of a blur are prepared once per device and image layout (and border, schedule,
tiling; for the exact method also sigma) and kept with their work arrays
(``dev.resource("blur/recipes")``, least recently used first out within
:func:`recipe_cache_bytes` of work arrays per device: ``dev.recipe_cache_bytes`` where the
device sets it, else :data:`RECIPE_CACHE_BYTES`, read when the cache is created, so a bound set
later applies after ``dev.trim()``), for images up to :data:`RECIPE_MAX_TEXELS` texels: a
repeated call allocates only its result and draws prepared passes (a new sigma of the recursive
method sets its coefficients again). On llvmpipe this cut a 64 x 64 blur from about 2.5 ms to
0.9 ms per call (the Python work per pass), and helps up to 256 x 256 grayscale. On a GPU it
also saves allocating the work arrays again (the texture pool keeps only a bounded amount of
idle memory): a 4096 x 4096 image blur holds about 1 GiB of them, within the default bound of
1.25 GiB (a recipe larger than the bound is used once and released); :func:`clear_cache`
hands that memory back. A recipe flushes after each pass
(:data:`FLUSH_PASSES`), so that the GPU starts on the first pass while the host draws the
others.

Exact method
------------
Two passes (rows, then columns) of the FIR filter truncated at 4 sigma, weights in a small
texture; the border is applied to the tap index. Cost grows linearly with sigma. The tap loop
runs over the distances 0..r, each iteration adding the symmetric pair of taps (one weight fetch
for two taps; where the radius is within a line's length, the usual case, the border index needs
no division). It is a declared split range: on a device with a loop cap (Mesa's llvmpipe stops
a fragment's loops after 65,535 iterations without an error) a long kernel is cut across several
passes added by blending (grayscale rows from sigma ~4,100, other axes from ~16,400 at the
default cap), so the result stays exact; the pass plan ``blur/exact`` counts them.

Kernels
-------
Every kernel is declared once at module level (:data:`REDUCE`, :data:`COMBINE`, :data:`CARRY`,
:data:`DOWN`, :data:`APPLY`, :data:`INTERLEAVE`, :data:`TRANSPOSE`, :data:`FIR`). Sizes, block
sizes and filter coefficients are uniforms and defines only pick finite variants (axis, border,
what the kernel reads, and ``C1K``: the level-1 block size as a constant for the common sizes
8, 16, 32, see :data:`C1_CONSTANTS`), so blurs of any shape and sigma compile a constant number
of programs (38 per block size while the image and the weights fit a texture unwrapped, 8 more
for each further block size used; wrapped layouts add their kinds);
every kernel with a loop declares its iterations (``loop=``) or splits it (``split=``). The
variants for 4 render targets (``NPL`` 4, ``PART`` 1 / 2) are compiled only under such a
profile.
"""
from __future__ import annotations

import functools
import math
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..engine import validation
from ..engine.arrays import DeviceArray
from ..engine.device import Device
from ..engine.errors import CapabilityError, TooLargeError
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
# or the planes P0..P(NPL-1) of a previous apply pass), NPL (render targets of an apply pass:
# 8, or 4 on devices with four draw buffers) and PART (a summary set's eight arrays in one
# pass, or its causal / anticausal half in two passes of four targets). So a blur of any size
# and sigma compiles at most one program per (kernel, AXIS, BORDER, layout kind).
_PACKED = In(packed=True, order="row")
_IIR_UNIFORMS = {"POLE": "vec4", "LPOLE": "vec4", "ALPHA": "vec4", "H0": "float",
                 "CNEAR": "vec4", "DREFL": "vec4", "NSTEPS": "int", "NPOS": "int"}
_TILING_HINT = "use a Tiling with smaller c1, g or top"
NPLS = (8, 4)  # planes (render targets) of an apply pass
# Level-1 block sizes compiled as constants (define C1K) into the reduce and apply kernels: the
# default tiling's and the ones fit_tiling lowers it to. A GPU compiler unrolls the block walks
# only over a compile-time trip count (so their fetches issue together): with C1 a uniform the
# NVIDIA H100 ran the "hv" blur 2x slower. Other block sizes use the uniform C1 (C1K 0), so the
# programs stay a small finite set.
C1_CONSTANTS = (8, 16, 32)


def _c1_define(c1: int) -> int:
    return c1 if c1 in C1_CONSTANTS else 0


# PART: 0 = the whole summary set (8 targets), 1 = causal half (OUT0..3), 2 = anticausal (OUT4..7)
_PART_NAMES = {0: "", 1: ",causal", 2: ",anticausal"}


def _set(prefix: str, seq: bool, part: int = 0) -> tuple:
    """Names of one summary set: 8 arrays, or 2 (causal, anticausal) for a single packed lane;
    ``part`` 1 / 2 keeps the causal / anticausal half (arrays 0..3 / 4..7)."""
    if seq:
        return (f"{prefix}0", f"{prefix}4")
    ks = {0: range(8), 1: range(4), 2: range(4, 8)}[part]
    return tuple(f"{prefix}{k}" for k in ks)


def _ins(*names) -> dict:
    return {n: _PACKED for group in names for n in group}


def _src(source: str, npl: int = 8) -> tuple:
    return ("X",) if source == "image" else tuple(f"P{k}" for k in range(npl))


def _src_defines(source: str, seq: bool, npl: int = 8, part: int = 0) -> dict:
    planes = int(source == "planes")
    return {"AXIS": 0, "SEQ": int(seq), "HAVE_SRC": 1, "SRC_PLANES": planes,
            "USE_PLANES": planes, "NPL": npl, "PART": part}


def _src_uniforms(source: str, extra: dict) -> dict:
    u = dict(_IIR_UNIFORMS, **extra)
    if source == "planes":
        u["WP"] = "int"
    return u


# Loop iterations per fragment, counting every loop (constant ones too, in case the compiler
# keeps them; nested loops count together): the tiling is chosen so that every kernel stays
# under the device's loop cap (:func:`fit_tiling`), and the engine refuses a call over it (an
# explicit Tiling too large for the cap) with the tiling hint.
def reduce_loop(c1: int, seq: bool) -> int:
    return 2 + c1 * (1 + (12 if seq else 2))


def combine_loop(g: int) -> int:
    return 2 + 3 * g


def carry_loop(nb: int) -> int:
    return 4 + 6 * nb


def down_loop(g: int) -> int:
    return 6 * g


def apply_loop(c1: int, seq: bool, npl: int) -> int:
    spt = 4 if seq else 1
    return 4 + (c1 // npl - 1) * (1 + npl * (1 + spt)) + npl * (3 + 2 * spt)


def _reduce_loop(a):
    return reduce_loop(a.uniforms["C1"], a.defines["SEQ"])


def _combine_loop(a):
    return combine_loop(a.uniforms["G"])


def _carry_loop(a):
    return carry_loop(a.uniforms["NB"])


def _down_loop(a):
    return down_loop(a.uniforms["G"])


def _apply_loop(a):
    return apply_loop(a.uniforms["C1"], a.defines["SEQ"], a.defines["NPL"])


def _label(src, seq, npl, part):
    return (f"{src},{'seq' if seq else 'lanes'}" + ("" if npl == 8 or src == "image" else
                                                   f",{npl} planes") + _PART_NAMES[part])


# (source, seq) variants: the horizontal pass of "hv" reads the image (packed grayscale rows
# with SEQ), the vertical one the planes of the horizontal apply pass; "vtvt" reads images.
# The packed single lane (SEQ) writes 2 summary arrays, so it never needs parts; summary
# passes that read planes come in halves exactly when there are 4 planes (4 render targets).
_SRC_VARIANTS = (("image", False), ("image", True), ("planes", False))
_SUM_VARIANTS = (("image", False, 8, 0), ("image", False, 8, 1), ("image", False, 8, 2),
                 ("image", True, 8, 0), ("planes", False, 8, 0), ("planes", False, 4, 1),
                 ("planes", False, 4, 2))

REDUCE = {
    (src, seq, npl, part): declare(
        "algorithms/blur/reduce.frag", inputs=_ins(_src(src, npl)),
        outputs=_set("OUT", seq, part),
        uniforms=_src_uniforms(src, {"C1": "int"}),
        defines=dict(_src_defines(src, seq, npl, part), C1K=0), loop=_reduce_loop,
        hint=_TILING_HINT,
        name=f"blur/reduce[{_label(src, seq, npl, part)}]")
    for src, seq, npl, part in _SUM_VARIANTS}
CARRY = {
    (src, seq, npl, part): declare(
        "algorithms/blur/carry.frag", inputs=_ins(_src(src, npl), _set("S", seq)),
        outputs=_set("OUT", seq, part),
        uniforms=_src_uniforms(src, {"NB": "int", "CSTEPS": "int"}),
        defines=dict(_src_defines(src, seq, npl, part), BORDER=0), loop=_carry_loop,
        hint=_TILING_HINT, name=f"blur/carry[{_label(src, seq, npl, part)}]")
    for src, seq, npl, part in _SUM_VARIANTS}
APPLY = {
    (src, seq, npl): declare(
        "algorithms/blur/apply.frag", inputs=_ins(_src(src, npl), _set("I", seq)), outputs=npl,
        uniforms=_src_uniforms(src, {"C1": "int"}),
        defines=dict(_src_defines(src, seq, npl), C1K=0), loop=_apply_loop, hint=_TILING_HINT,
        name=f"blur/apply[{_label(src, seq, 8, 0)}{'' if npl == 8 else f',{npl} planes'}]")
    for src, seq in _SRC_VARIANTS for npl in NPLS}
_NO_SRC = {"HAVE_SRC": 0, "SRC_PLANES": 0, "USE_PLANES": 0, "NPL": 8}
_SEQ_PARTS = ((False, 0), (False, 1), (False, 2), (True, 0))
COMBINE = {
    (seq, part): declare(
        "algorithms/blur/combine.frag", inputs=_ins(_set("S", seq)),
        outputs=_set("OUT", seq, part),
        uniforms=dict(_IIR_UNIFORMS, G="int", NB_CHILD="int", CSTEPS="int"),
        defines=dict(_NO_SRC, AXIS=0, SEQ=int(seq), PART=part), loop=_combine_loop,
        hint=_TILING_HINT, name=f"blur/combine[{'seq' if seq else 'lanes'}{_PART_NAMES[part]}]")
    for seq, part in _SEQ_PARTS}
DOWN = {
    (seq, part): declare(
        "algorithms/blur/down.frag", inputs=_ins(_set("I", seq), _set("S", seq)),
        outputs=_set("OUT", seq, part),
        uniforms=dict(_IIR_UNIFORMS, G="int", NB_CHILD="int", CSTEPS="int"),
        defines=dict(_NO_SRC, AXIS=0, SEQ=int(seq), PART=part), loop=_down_loop,
        hint=_TILING_HINT, name=f"blur/down[{'seq' if seq else 'lanes'}{_PART_NAMES[part]}]")
    for seq, part in _SEQ_PARTS}
INTERLEAVE = {
    npl: declare("algorithms/blur/interleave.frag", inputs=_ins(_src("planes", npl)),
                 uniforms={"WP": "int"}, defines={"USE_PLANES": 1, "NPL": npl},
                 name="blur/interleave" + ("" if npl == 8 else f"[{npl} planes]"))
    for npl in NPLS}
TRANSPOSE = {
    npl: declare("algorithms/blur/transpose.frag", inputs=_ins(_src("planes", npl)),
                 defines={"USE_PLANES": 1, "GRAY": 0, "NPL": npl}, loop=lambda a: 4,
                 name="blur/transpose" + ("" if npl == 8 else f"[{npl} planes]"))
    for npl in NPLS}


def _taps(a) -> int:
    """Iterations of the tap loop: one per distance 0..R (each adds the taps at -d and +d)."""
    return a.uniforms["R"] + 1


_FIR_HINT = "use method='recursive' (its cost does not grow with sigma)"
# The exact filter's tap loop is a split range over the distances 0..R (each iteration adds the
# symmetric pair of taps, so one weight fetch serves two taps): over the loop cap (huge sigma),
# the engine cuts it across passes that add into the output. The horizontal grayscale variant
# runs the loop once per lane of the texel (4 iterations per distance, plus the lane loop).
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
def _iir_uniforms(sigma: float, nsteps: int) -> dict:
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

    image : numpy (H, W) or (H, W, C<=4), float or integer (uint8 comes back as uint8,
        rounded); or a DeviceArray from ``dev.array`` (H, W) / ``dev.image`` (H, W, C), in which
        case a new DeviceArray of the same kind is returned (the caller releases it).
    sigma : > 0, one value or (sigma_y, sigma_x) (at most MAX_RECURSIVE_SIGMA for the recursive
        method, a ValueError naming sigma above; the exact one takes kernel radii
        int(4 sigma + 0.5) up to MAX_EXACT_RADIUS). An axis with sigma <= IDENTITY_SIGMA
        (0.1734) is not filtered (its Gaussian is the identity to float32 precision); with both
        there, the result is a copy of the image.
    method : "recursive" (cost independent of sigma) or "exact" (FIR truncated at 4 sigma; on a
        device with a loop cap, a very long kernel runs over several added passes).
    border : "reflect" (half-sample symmetric), "nearest" or "constant" (zero), as in scipy.
    schedule : "hv" or "vtvt" (recursive method only; see the module notes).
    device : a Device (default: the image's, or the process-wide one).
    tiling : a :class:`Tiling` (recursive method; default :data:`DEFAULT_TILING`, with smaller
        blocks where the device's loop cap needs them, see :func:`fit_tiling`).

    Error bound. Against ``scipy.ndimage.gaussian_filter(image.astype(float64), sigma,
    mode=border, truncate=4.0)`` (per channel), with R the value range of the image (its
    max - min over every pixel and channel; for border "constant" the range of the values and
    0) and M = max |image|, every output value is within

    * ``method="exact"``:     1e-5 R + 2.5e-7 M for sigma <= 1e4 (beyond, the float32 sums of
      its 8 sigma taps add an error growing with sigma: 1.5e-4 R measured at sigma 1e5);
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

    Any sigma > 0 returns in bounded time (sigma 0.001 once hung in the recursive fit).
    """
    validation.choice(method, "method", METHODS)
    validation.choice(border, "border", BORDERS)
    validation.choice(schedule, "schedule", SCHEDULES)
    sy, sx = _sigma_pair(sigma)
    _check_sigma_range(sy, sx, method)
    if device is not None and not isinstance(device, Device):
        raise TypeError(f"device must be a Device, got {type(device).__name__}")
    if tiling is not None and not isinstance(tiling, Tiling):
        raise TypeError(f"tiling must be a Tiling, got {type(tiling).__name__}")
    identity = is_identity_sigma(sy) and is_identity_sigma(sx)
    if isinstance(image, DeviceArray):
        dev = validation.pick_device(device, [image])
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
    gray = x.ndim == 2 or x.shape[2] == 1
    h, w = x.shape[0], x.shape[1]
    e = _host_exponent(x)
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


def _host_exponent(x: np.ndarray) -> int:
    """The power of 2 a host image is divided by before the upload (0: none)."""
    amax = max(float(x.max()), -float(x.min()))
    if amax == 0.0 or 2.0 ** -HOST_SCALE_EXP <= amax <= 2.0 ** HOST_SCALE_EXP:
        return 0
    return math.frexp(amax)[1]


def _copy(dev, x: DeviceArray, gray: bool) -> DeviceArray:
    """A copy of a device image (the blur at sigma <= IDENTITY_SIGMA): one pass of the exact
    filter's column kernel with radius 0 (weight 1: the centre value, exactly)."""
    out = _like(dev, x, gray)
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


# Images up to this many texels (4096 x 4096) reuse prepared passes and work arrays between
# calls (see _Recipe), within recipe_cache_bytes(dev) of work arrays per device: the device's
# recipe_cache_bytes, else RECIPE_CACHE_BYTES (a recipe larger than that is used once and
# released). Keeping the work arrays matters on a GPU: the engine's
# texture pool keeps only 64 MiB of idle textures, so a 4096 x 4096 blur would allocate its
# ~1 GiB of planes and summaries again on every call (H200: 50 ms per call instead of 36).
# clear_cache(dev) hands the memory back.
RECIPE_MAX_TEXELS = 1 << 24
RECIPE_CACHE_BYTES = 1280 << 20


def clear_cache(device=None) -> None:
    """Release the prepared passes and work arrays that repeated blurs keep on ``device``
    (default: the process-wide one)."""
    dev = validation.pick_device(device, [])
    _recipe_cache(dev).release()


def recipe_cache_bytes(dev) -> int:
    """The bound on the work arrays ``dev``'s recipe cache keeps: ``dev.recipe_cache_bytes``
    where the device sets one, else :data:`RECIPE_CACHE_BYTES`."""
    b = getattr(dev, "recipe_cache_bytes", RECIPE_CACHE_BYTES)
    return RECIPE_CACHE_BYTES if b is None else int(b)


def _recipe_cache(dev) -> "_RecipeCache":
    """The device's recipe cache, created on first use within :func:`recipe_cache_bytes` (read
    then: a bound set on the device later applies once ``dev.trim()`` has dropped the cache)."""
    return dev.resource("blur/recipes", lambda: _RecipeCache(recipe_cache_bytes(dev)))


def _blur_device(dev, x, gray, sy, sx, method, border, schedule, tiling):
    if x.layout.n_texels > RECIPE_MAX_TEXELS:
        return _blur_passes(dev, x, gray, sy, sx, method, border, schedule, tiling)
    # the recursive filter's coefficients are uniforms (set again when sigma changes); the
    # exact one's weights are arrays of the recipe
    sigmas = (sy, sx) if method == "exact" else None
    key = (x.layout, tuple(x.shape), gray, sigmas, method, border,
           schedule if method == "recursive" else "", tiling)
    cache = _recipe_cache(dev)
    recipe = cache.get(key)
    if recipe is None:
        recipe = _Recipe.record(dev, x, (sy, sx), lambda r: _blur_passes(
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
        return _exact(dev, x, gray, sy, sx, border)
    if schedule == "hv":
        return _recursive_hv(dev, x, gray, sy, sx, border, tiling)
    return _recursive_vtvt(dev, x, gray, sy, sx, border, tiling)


# ---- prepared passes, reused by repeated calls ----------------------------------------------
class _Recorder:
    """Stands for the device while a blur's passes are prepared instead of drawn: the same
    code (:func:`_blur_passes`) allocates its work arrays (kept) and prepares each pass."""

    def __init__(self, dev: Device):
        self.device = dev
        self.max_outputs, self.loop_cap = dev.max_outputs, dev.loop_cap
        self.max_texture_size = dev.max_texture_size
        self.steps: list = []
        self.arrays: list = []
        self._label = ""
        self.coefficients = None  # (0: sigma_y / 1: sigma_x, steps per line) of the line pass

    def _keep(self, a):
        self.arrays.append(a)
        return a

    def empty(self, shape, packed: bool = True, order: str = "row"):
        return self._keep(self.device.empty(shape, packed, order))

    def empty_image(self, shape):
        return self._keep(self.device.empty_image(shape))

    def array(self, x, packed: bool = True, order: str = "row", name: str = "array"):
        return self._keep(self.device.array(x, packed, order, name))

    @contextmanager
    def phase(self, label: str):
        self._label = label
        yield

    @contextmanager
    def scope(self):
        yield _KeepAll()

    def run(self, kernel, outputs, inputs=None, uniforms=None, defines=None) -> int:
        p = self.device.prepare(kernel, outputs, inputs, uniforms, defines)
        self.steps.append((self._label, p, self.coefficients))
        return p.passes_per_run


class _KeepAll:
    """The scope of a recording: the recipe owns every array."""

    @staticmethod
    def track(a):
        return a

    keep = track


class _Recipe:
    """The prepared passes and work arrays of one blur (image layout and shape, sigma, method,
    border, schedule, tiling), run again for each call on an image of that layout: one
    allocation (the result) and one prepared draw per pass instead of dev.run's checks and the
    work arrays' allocations. The image is bound to the passes that read it, the new result
    to the last one; the outputs are bound again each run (their framebuffers may have been
    evicted from the device's cache). A recursive blur's recipe serves every sigma: the
    filter coefficients of its line passes are set again when sigma changes."""

    def __init__(self, steps, arrays, x, out, sigmas):
        self.steps = [(label, p, p.inputs.get("X") is x,
                       [n for n, a in p.outputs.items() if a is out], coef)
                      for label, p, coef in steps]
        self.sigmas = sigmas
        self.arrays = [a for a in arrays if a is not out]
        self.out_layout, self.out_shape = out.layout, tuple(out.shape)
        self.nbytes = sum(a.layout.nbytes for a in self.arrays)
        out.release()

    @classmethod
    def record(cls, dev, x, sigmas, build) -> "_Recipe":
        r = _Recorder(dev)
        try:
            out = build(r)
        except BaseException:
            for a in r.arrays:
                a.release()
            raise
        return cls(r.steps, r.arrays, x, out, sigmas)

    def run(self, dev, x, sigmas) -> DeviceArray:
        new_sigmas = sigmas != self.sigmas
        self.sigmas = None  # until every pass has run with the new coefficients
        flush = _flusher(dev)
        out = dev.alloc(self.out_layout, self.out_shape)
        try:
            for label, p, reads_x, out_names, coef in self.steps:
                binds = dict(p.outputs)
                for n in out_names:
                    binds[n] = out
                if reads_x:
                    binds["X"] = x
                p.bind(**binds)
                if new_sigmas and coef is not None:
                    p.set(**_iir_uniforms(sigmas[coef[0]], coef[1]))
                with dev.phase(label):
                    p.run()
                if flush is not None:
                    flush()
        except BaseException:
            out.release()
            raise
        self.sigmas = sigmas
        return out

    def release(self) -> None:
        for a in self.arrays:
            if not a.released:
                a.release()
        self.arrays = []
        self.steps = []


# A recipe hands each pass to the GPU as soon as it is drawn (glFlush): a driver may otherwise
# keep the commands until the caller waits for the result, so that the GPU starts only after
# the host has drawn every pass and the host time adds to the GPU time. Not while timing (each
# pass is waited for there).
FLUSH_PASSES = True


def _flusher(dev):
    """The device's flush where recipes flush, else None."""
    return dev.flush if FLUSH_PASSES and not dev.timing else None


class _RecipeCache:
    """Recipes of one device, least recently used first out, within ``max_bytes`` of work
    arrays (held as ``dev.resource("blur/recipes")``; released with the device)."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()

    @property
    def nbytes(self) -> int:
        return sum(r.nbytes for r in self._items.values())

    def get(self, key):
        r = self._items.get(key)
        if r is not None:
            self._items.move_to_end(key)
        return r

    def put(self, key, recipe: _Recipe) -> None:
        self._items[key] = recipe
        total = sum(r.nbytes for r in self._items.values())
        while total > self.max_bytes and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            total -= old.nbytes
            old.release()

    def release(self) -> None:
        for r in self._items.values():
            r.release()
        self._items.clear()


# ---- recursive method ------------------------------------------------------------------------
@dataclass(frozen=True)
class LineConfig:
    """How one line filter runs on a device: its tiling, the planes (render targets) of its
    apply pass, and the parts each summary pass is drawn in ((0,): all 8 arrays at once;
    (1, 2): the causal then the anticausal half, 4 targets each)."""

    tiling: Tiling
    npl: int
    parts: tuple


def fit_tiling(seq: bool, npl: int, loop_cap: int | None,
               base: Tiling = DEFAULT_TILING) -> Tiling:
    """The tiling the blur uses under a loop cap: ``base`` with c1, g and top lowered until every
    recursive kernel loops at most ``loop_cap`` times per fragment (as far as they go: c1 8,
    g 2, top 1; a cap below that is refused by the engine when the kernel runs)."""
    if loop_cap is None:
        return base
    c1, g, top = base.c1, base.g, base.top
    while c1 > 8 and max(reduce_loop(c1, seq), apply_loop(c1, seq, npl)) > loop_cap:
        c1 -= 8
    while g > 2 and max(combine_loop(g), down_loop(g)) > loop_cap:
        g -= 1
    while top > 1 and carry_loop(top) > loop_cap:
        top -= 1
    if (c1, g, top) == (base.c1, base.g, base.top):
        return base
    return Tiling(c1=c1, g=g, top=top)


def line_config(seq: bool, tiling: Tiling | None = None, max_outputs: int = 8,
                loop_cap: int | None = None) -> LineConfig:
    """The :class:`LineConfig` of a line filter (``seq``: a packed grayscale row) on a device
    with ``max_outputs`` render targets and ``loop_cap``; ``tiling`` None picks
    :func:`fit_tiling` of the default, an explicit one is used as given."""
    if max_outputs < 4:
        raise CapabilityError(f"method='recursive' needs 4 render targets per pass; this "
                              f"device/profile has {max_outputs}: use method='exact'")
    npl = 8 if max_outputs >= 8 else 4
    parts = (0,) if seq or max_outputs >= 8 else (1, 2)
    til = fit_tiling(seq, npl, loop_cap) if tiling is None else tiling
    return LineConfig(til, npl, parts)


def _tex(dev, w: int, h: int) -> DeviceArray:
    """A scratch array of h x w texels (wrapped into the texture size where it is larger)."""
    try:
        return dev.empty((h, 4 * w), packed=True, order="row")
    except TooLargeError:
        raise TooLargeError(f"a {w}x{h} texel work array does not fit a "
                            f"{dev.max_texture_size}x{dev.max_texture_size} texture even "
                            "wrapped; the image is too large for this blur") from None


def _release(dev, arrs):
    """Release work arrays as the blur goes (not while recording a :class:`_Recipe`: its
    arrays live as long as it does)."""
    if isinstance(dev, _Recorder):
        return
    for a in arrs:
        a.release()


def _line_pass(dev, src, *, axis, seq, nlines, npos, nsteps, sigma, border, tiling, label,
               planes_wp=0, which=0):
    """Filter every line of ``src`` along one axis; returns the output planes (8, or 4 on a
    device with four render targets).

    src : a DeviceArray (lines are its grid columns for axis 1, grid rows for axis 0) or, with
        ``planes_wp`` > 0, the column planes of a previous axis-0 apply pass (lines in
        plane-major order, planes_wp texel columns each).
    which : 0 if ``sigma`` is the blur's sigma_y, 1 if sigma_x (for a recipe's sigma change).
    """
    if isinstance(dev, _Recorder):
        dev.coefficients = (which, nsteps)
    cfg = line_config(seq, tiling, dev.max_outputs, dev.loop_cap)
    til, npl = cfg.tiling, cfg.npl
    source = "planes" if planes_wp else "image"
    uni = dict(_iir_uniforms(sigma, nsteps), NSTEPS=nsteps, NPOS=npos)
    src_uni = dict(uni, WP=int(planes_wp)) if planes_wp else uni
    levels = til.levels(npos)
    inputs = {f"P{k}": src[k] for k in range(len(src))} if planes_wp else {"X": src}
    ax = {"AXIS": axis}
    spt = 4 if seq else 1

    def sset(prefix, arrs, part=0):
        keep = set(_set(prefix, seq, part))
        return {n: a for n, a in zip(_set(prefix, seq), arrs) if n in keep}

    def summaries(table, key, outs, **kw):
        for part in cfg.parts:
            dev.run(table[key(part)], sset("OUT", outs, part), **kw)

    with dev.scope() as sc:  # summaries and incoming states: released however this ends
        def summary(nb):
            return [sc.track(_tex(dev, nlines, nb) if axis == 1 else _tex(dev, nb, nlines))
                    for _ in _set("", seq)]

        sums = [summary(levels[0])]
        c1k = dict(ax, C1K=_c1_define(til.c1))
        with dev.phase(f"{label}.reduce"):
            summaries(REDUCE, lambda p: (source, seq, npl if planes_wp else 8, p), sums[0],
                      inputs=dict(inputs), uniforms=dict(src_uni, C1=til.c1), defines=c1k)
        for lvl in range(1, len(levels)):
            sums.append(summary(levels[lvl]))
            u = dict(uni, G=til.g, NB_CHILD=levels[lvl - 1],
                     CSTEPS=til.c1 * spt * til.g ** (lvl - 1))
            with dev.phase(f"{label}.combine"):
                summaries(COMBINE, lambda p: (seq, p), sums[lvl],
                          inputs=sset("S", sums[lvl - 1]), uniforms=u, defines=ax)
        top = len(levels) - 1
        inc = summary(levels[top])
        u = dict(src_uni, NB=levels[top], CSTEPS=til.c1 * spt * til.g ** top)
        with dev.phase(f"{label}.carry"):
            summaries(CARRY, lambda p: (source, seq, npl if planes_wp else 8, p), inc,
                      inputs=dict(inputs, **sset("S", sums[top])), uniforms=u,
                      defines=dict(ax, BORDER=_BORDER_CODE[border]))
        for lvl in range(top - 1, -1, -1):
            finer = summary(levels[lvl])
            u = dict(uni, G=til.g, NB_CHILD=levels[lvl], CSTEPS=til.c1 * spt * til.g ** lvl)
            with dev.phase(f"{label}.down"):
                summaries(DOWN, lambda p: (seq, p), finer,
                          inputs=dict(sset("I", inc), **sset("S", sums[lvl])), uniforms=u,
                          defines=ax)
            _release(dev, inc)
            inc = finer
        for sm in sums:
            _release(dev, sm)
        nfb = -(-npos // npl)
        out = [sc.track(_tex(dev, nlines, nfb) if axis == 1 else _tex(dev, nfb, nlines))
               for _ in range(npl)]
        with dev.phase(f"{label}.apply"):
            dev.run(APPLY[(source, seq, npl)], out, inputs=dict(inputs, **sset("I", inc)),
                    uniforms=dict(src_uni, C1=til.c1), defines=c1k)
        for a in out:
            sc.keep(a)
    if isinstance(dev, _Recorder):
        dev.coefficients = None
    return out


def _like(dev, x: DeviceArray, gray: bool, shape=None) -> DeviceArray:
    shape = tuple(x.shape) if shape is None else shape
    return dev.empty(shape) if gray else dev.empty_image(shape)


def _planes(planes) -> dict:
    return {f"P{k}": p for k, p in enumerate(planes)}


def _recursive_hv(dev, x, gray, sy, sx, border, tiling):
    h, w = x.shape[0], x.shape[1]
    wt = x.layout.grid_w  # texels per row
    planes_h = _line_pass(dev, x, axis=0, seq=gray, nlines=h, npos=wt,
                          nsteps=w if gray else wt, sigma=sx, border=border, tiling=tiling,
                          label="H", which=1)
    wp = planes_h[0].layout.grid_w
    try:
        planes_v = _line_pass(dev, planes_h, axis=1, seq=False, nlines=len(planes_h) * wp,
                              npos=h, nsteps=h, sigma=sy, border=border, tiling=tiling,
                              label="V", planes_wp=wp)
    finally:
        _release(dev, planes_h)
    out = _like(dev, x, gray)
    try:
        with dev.phase("interleave"):
            dev.run(INTERLEAVE[len(planes_v)], out, inputs=_planes(planes_v),
                    uniforms={"WP": wp})
    except BaseException:
        _release(dev, [out])
        raise
    finally:
        _release(dev, planes_v)
    return out


def _transpose(dev, planes, src_shape, gray, label):
    h, w = src_shape[0], src_shape[1]
    shape_t = (w, h) if gray else (w, h, src_shape[2])
    out = dev.empty(shape_t) if gray else dev.empty_image(shape_t)
    try:
        with dev.phase(label):
            dev.run(TRANSPOSE[len(planes)], out, inputs=_planes(planes),
                    defines={"GRAY": int(gray)})
    except BaseException:
        _release(dev, [out])
        raise
    return out


def _recursive_vtvt(dev, x, gray, sy, sx, border, tiling):
    h = x.shape[0]
    p1 = _line_pass(dev, x, axis=1, seq=False, nlines=x.layout.grid_w, npos=h, nsteps=h,
                    sigma=sy, border=border, tiling=tiling, label="V1")
    try:
        t = _transpose(dev, p1, x.shape, gray, "T1")
    finally:
        _release(dev, p1)
    try:
        p2 = _line_pass(dev, t, axis=1, seq=False, nlines=t.layout.grid_w, npos=t.shape[0],
                        nsteps=t.shape[0], sigma=sx, border=border, tiling=tiling, label="V2",
                        which=1)
        shape_t = t.shape
    finally:
        _release(dev, [t])
    try:
        return _transpose(dev, p2, shape_t, gray, "T2")
    finally:
        _release(dev, p2)


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
            _release(dev, [out])
            raise
    return out


def exact_passes(sigma: float, axis: int, gray: bool, loop_cap: int | None,
                 float_blending: bool = True) -> int:
    """Passes the exact filter draws along one axis: 1 unless the tap loop exceeds the cap;
    then one per slice, and where float blending is missing each slice after the first adds
    into the output by ping-pong (3 passes: draw, combine, copy back)."""
    k = _fir_kernel(axis, gray)
    n = max(1, len(k.slices({}, {"R": exact_radius(sigma)}, k.defines, loop_cap)))
    return n if float_blending else 1 + 3 * (n - 1)


# ---- pass plans ------------------------------------------------------------------------------
def _device_limits(device, max_outputs, loop_cap, float_blending):
    """(max_outputs, loop_cap, float_blending) from a device (its profile included) or as given."""
    if device is not None:
        return device.max_outputs, device.loop_cap, device.float_blending
    return max_outputs, loop_cap, float_blending


def line_passes(npos: int, tiling: Tiling | None = DEFAULT_TILING, seq: bool = False,
                max_outputs: int = 8, loop_cap: int | None = None) -> dict:
    """Passes of one line filter over lines of ``npos`` texels, per step (``seq``: a packed
    grayscale row; ``tiling`` None: the one :func:`fit_tiling` picks for ``loop_cap``)."""
    cfg = line_config(seq, tiling, max_outputs, loop_cap)
    n = len(cfg.tiling.levels(npos))
    p = len(cfg.parts)
    return {"reduce": p, "combine": p * (n - 1), "carry": p, "down": p * (n - 1), "apply": 1}


def _texels(w: int, gray: bool) -> int:
    return -(-w // 4) if gray else w


def _hv_phases(h, w, gray=True, tiling=None, device=None, max_outputs=8, loop_cap=None):
    mo, cap, _ = _device_limits(device, max_outputs, loop_cap, True)
    out = {f"H.{k}": v for k, v in
           line_passes(_texels(w, gray), tiling, gray, mo, cap).items()}
    out.update({f"V.{k}": v for k, v in line_passes(h, tiling, False, mo, cap).items()})
    out["interleave"] = 1
    return {k: v for k, v in out.items() if v}


def _vtvt_phases(h, w, gray=True, tiling=None, device=None, max_outputs=8, loop_cap=None):
    mo, cap, _ = _device_limits(device, max_outputs, loop_cap, True)
    out = {f"V1.{k}": v for k, v in line_passes(h, tiling, False, mo, cap).items()}
    out["T1"] = 1
    out.update({f"V2.{k}": v for k, v in line_passes(w, tiling, False, mo, cap).items()})
    out["T2"] = 1
    return {k: v for k, v in out.items() if v}


_LIMIT_PARAMS = ("device", "max_outputs", "loop_cap")
register_plan(PassPlan(
    name="blur/recursive-hv",
    formula="P(ceil(W/4) or W) + P(H) + 1, P(n) = 1 + q (2 + 2 (L(n) - 1)), L(n) = levels of n "
            f"texels (C1={DEFAULT_TILING.c1}, G={DEFAULT_TILING.g}, top<={DEFAULT_TILING.top}, "
            "lowered under a loop cap), q = 1 with 8 render targets (or a grayscale row), 2 "
            "with 4; no sigma term",
    phases=_hv_phases, params=("h", "w", "gray", "tiling") + _LIMIT_PARAMS,
    notes="per axis: reduce, combine x (L-1), carry, down x (L-1) (each twice, causal and "
          "anticausal half, on 4 render targets), apply (8 or 4 render targets); then one "
          "interleave pass. Weights and coefficients are uniforms (no upload). Give device= "
          "(or max_outputs=, loop_cap=) for a profile."))
register_plan(PassPlan(
    name="blur/recursive-vtvt",
    formula="P(H) + 1 + P(W) + 1 (vertical filter, transpose, vertical filter, transpose)",
    phases=_vtvt_phases, params=("h", "w", "gray", "tiling") + _LIMIT_PARAMS,
    notes="the transposes also gather the planes of the apply passes"))


def _exact_phases(h=0, w=0, gray=True, sigma=1.0, loop_cap=None, float_blending=True,
                  device=None):
    _, cap, fb = _device_limits(device, 8, loop_cap, float_blending)
    sy, sx = _sigma_pair(sigma)
    return {"exact.H": exact_passes(sx, 0, gray, cap, fb),
            "exact.V": exact_passes(sy, 1, gray, cap, fb)}


register_plan(PassPlan(
    name="blur/exact",
    formula="S(sigma_x) + S(sigma_y) (rows, then columns); each fragment reads 2 r + 1 taps "
            "in r + 1 iterations (symmetric pairs), r = int(4 sigma + 0.5); S = 1 pass, or "
            "n = ceil(c (r + 1) / (cap - e)) passes "
            "added by blending when that exceeds the device's loop cap (c = 4, e = 4 for the "
            "grayscale rows, else c = 1, e = 0); without float blending each added pass is a "
            "ping-pong of 3 (S = 3 n - 2)",
    phases=_exact_phases,
    params=("h", "w", "gray", "sigma", "loop_cap", "float_blending", "device"),
    notes="one pass per axis below the loop cap (any GPU but Mesa's llvmpipe at sigma < ~4,100; "
          "sigma < ~60 under the 7800 GTX profile's cap of 255); work per pixel grows "
          "linearly with sigma"))


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
