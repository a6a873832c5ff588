"""The recursive and exact blur's kernels, declared once.

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

from ...engine.kernels import In, Split, declare
from .tiling import apply_loop, carry_loop, combine_loop, down_loop, reduce_loop


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
# only over a compile-time trip count (so their fetches issue together); with C1 a uniform the
# fetches serialize and a GPU runs the "hv" blur about half as fast. Other block sizes use the
# uniform C1 (C1K 0), so the programs stay a small finite set.
C1_CONSTANTS = (8, 16, 32)


def c1_define(c1: int) -> int:
    return c1 if c1 in C1_CONSTANTS else 0


# PART: 0 = the whole summary set (8 targets), 1 = causal half (OUT0..3), 2 = anticausal (OUT4..7)
_PART_NAMES = {0: "", 1: ",causal", 2: ",anticausal"}


def summary_names(prefix: str, seq: bool, part: int = 0) -> tuple:
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
        outputs=summary_names("OUT", seq, part),
        uniforms=_src_uniforms(src, {"C1": "int"}),
        defines=dict(_src_defines(src, seq, npl, part), C1K=0), loop=_reduce_loop,
        hint=_TILING_HINT,
        name=f"blur/reduce[{_label(src, seq, npl, part)}]")
    for src, seq, npl, part in _SUM_VARIANTS}
CARRY = {
    (src, seq, npl, part): declare(
        "algorithms/blur/carry.frag", inputs=_ins(_src(src, npl), summary_names("S", seq)),
        outputs=summary_names("OUT", seq, part),
        uniforms=_src_uniforms(src, {"NB": "int", "CSTEPS": "int"}),
        defines=dict(_src_defines(src, seq, npl, part), BORDER=0), loop=_carry_loop,
        hint=_TILING_HINT, name=f"blur/carry[{_label(src, seq, npl, part)}]")
    for src, seq, npl, part in _SUM_VARIANTS}
APPLY = {
    (src, seq, npl): declare(
        "algorithms/blur/apply.frag", inputs=_ins(_src(src, npl), summary_names("I", seq)),
        outputs=npl,
        uniforms=_src_uniforms(src, {"C1": "int"}),
        defines=dict(_src_defines(src, seq, npl), C1K=0), loop=_apply_loop, hint=_TILING_HINT,
        name=f"blur/apply[{_label(src, seq, 8, 0)}{'' if npl == 8 else f',{npl} planes'}]")
    for src, seq in _SRC_VARIANTS for npl in NPLS}
_NO_SRC = {"HAVE_SRC": 0, "SRC_PLANES": 0, "USE_PLANES": 0, "NPL": 8}
_SEQ_PARTS = ((False, 0), (False, 1), (False, 2), (True, 0))
COMBINE = {
    (seq, part): declare(
        "algorithms/blur/combine.frag", inputs=_ins(summary_names("S", seq)),
        outputs=summary_names("OUT", seq, part),
        uniforms=dict(_IIR_UNIFORMS, G="int", NB_CHILD="int", CSTEPS="int"),
        defines=dict(_NO_SRC, AXIS=0, SEQ=int(seq), PART=part), loop=_combine_loop,
        hint=_TILING_HINT, name=f"blur/combine[{'seq' if seq else 'lanes'}{_PART_NAMES[part]}]")
    for seq, part in _SEQ_PARTS}
DOWN = {
    (seq, part): declare(
        "algorithms/blur/down.frag", inputs=_ins(summary_names("I", seq), summary_names("S", seq)),
        outputs=summary_names("OUT", seq, part),
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
