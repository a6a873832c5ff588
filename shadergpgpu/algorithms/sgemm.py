"""SGEMM with B read through the texture path: ``C = alpha op(A) op(B) + beta C``.

The structure follows the Adreno kernel of source 001 in fragment-shader form:

* **A** goes through the *plain buffer path*: a GL buffer read by the shader as a
  ``samplerBuffer`` with ``texelFetch`` (a texture buffer object, :mod:`shadergpgpu.engine.glraw`),
  packed row-major, one texel = 4 consecutive K of one row (:class:`~shadergpgpu.engine.layout.BufferLayout`).
* **B** goes through the *2-D texture path*: an RGBA32F texture, one texel = 4 columns.
* Each fragment computes an **8-row x 4-column micro-tile** (``vec4 c0..c7``) and writes it through
  **8 render targets**; a last pass (the epilogue) gathers the 8 targets into C and applies
  ``alpha`` and ``beta``. K can be split over several passes summed by additive blending (more
  fragments in flight for small outputs).

Variants (``variant=``):

``"auto"`` (default)
    The faster of the two 8x4 variants on the device (:func:`default_variant`).
``"tile8x4"``
    A through the buffer path, B through the texture path, 8x4 micro-tile, 8 render targets.
``"tile8x4-tex"``
    The same with A also through a 2-D texture.
``"tile4x4"``
    A 4x4 tile through 4 render targets (fewer outputs, more fragments), for comparison.
``"simple"``
    One output texel (1 x 4) per fragment, A through the buffer path; K slices (where needed)
    are summed into C by additive blending.

Every kernel is declared once below (:func:`~shadergpgpu.engine.kernels.declare`): sizes reach
the shaders as uniforms, so one program serves every shape of a layout kind. The K loop of the
product kernels is a :class:`~shadergpgpu.engine.kernels.Split` range: the engine cuts it over
blended passes so that one fragment never runs more loop iterations than the device's loop cap
(``dev.loop_cap``: Mesa llvmpipe silently stops longer loops); on GPUs :func:`auto_split` asks
for more K slices when the output is small (more fragments in flight).

Any shapes work: inputs are staged into zero-padded copies (M to a multiple of the tile rows, K
to a multiple of 4 * unroll) on the host for numpy inputs or by a staging pass for device arrays,
so the kernels never branch on edges; the padding never reaches the result. Arrays wider than
the texture limit wrap (the layout accessors handle it).
"""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..engine import validation as V
from ..engine.arrays import DeviceArray
from ..engine.glraw import BufferArray, max_texture_buffer_size
from ..engine.kernels import In, Split, declare
from ..engine.layout import BufferLayout
from ..engine.limits import ceil_div
from ..engine.plans import PassPlan, register_plan

__all__ = ["sgemm", "VARIANTS", "DEFAULT_VARIANT", "default_variant", "work", "auto_split",
           "min_split", "STAGE", "SIMPLE", "SIMPLE_C", "TILE", "COMBINE"]

_HINT = "K is cut across passes automatically; this device's loop cap is too small for one step"

# ---- kernels ----------------------------------------------------------------------------------
_A = In(buffer="either", packed=True, order="row")   # staged A: texture buffer or 2-D texture
_B = In(packed=True, order="row")                    # staged B: 2-D texture

#: op(X) zero-padded into a packed row-major array (TRANS: X transposed); X of any layout,
#: a BufferArray included.
STAGE = declare("algorithms/sgemm/stage.frag", inputs={"X": In(buffer="either")},
                defines={"TRANS": 0}, loop=lambda a: 4, name="sgemm/stage")


def _simple(has_c: bool):
    inputs = {"A": _A, "B": _B, **({"C": In()} if has_c else {})}
    return declare(
        "algorithms/sgemm/simple.frag", inputs=inputs,
        uniforms={"alpha": "float", **({"beta": "float"} if has_c else {})},
        defines={"HAS_C": int(has_c)},
        # K-quads of the staged B; 4 more iterations for the lane loop reading C
        split=Split("kq", length=lambda a: a.B.rows // 4, cost=1, extra=4 if has_c else 0),
        name="sgemm/simple+C" if has_c else "sgemm/simple", hint=_HINT)


#: simple variant: C = alpha A B (+ beta C with SIMPLE_C), one output texel per fragment.
SIMPLE = _simple(False)
SIMPLE_C = _simple(True)


def _tile(rows: int):
    # one loop iteration per step of UNROLL K-quads (the steps are unrolled by hand)
    return declare(
        "algorithms/sgemm/tile8x4.frag", inputs={"A": _A, "B": _B}, outputs=rows,
        defines={"TILE_ROWS": rows, "UNROLL": 2},
        split=Split("ks", length=lambda a: a.B.rows // (4 * a.defines["UNROLL"]), cost=1),
        name=f"sgemm/tile{rows}x4", hint=_HINT)


#: micro-tile product kernels by tile rows: P (rows x 4 per fragment) into ``rows`` targets.
TILE = {8: _tile(8), 4: _tile(4)}


def _combine(rows: int, has_c: bool):
    inputs = {f"P{t}": _B for t in range(rows)}
    uniforms = {}
    if rows:
        uniforms["alpha"] = "float"
    if has_c:
        inputs["C"] = In()
        uniforms["beta"] = "float"
    return declare("algorithms/sgemm/combine.frag", inputs=inputs, uniforms=uniforms,
                   defines={"TILE_ROWS": rows, "HAS_C": int(has_c)},
                   loop=(lambda a: 4) if has_c else None,  # the lanes of C
                   name=f"sgemm/combine{rows}" + ("+C" if has_c else ""))


#: epilogue kernels by (tile rows, has C): C = alpha P + beta C; (0, True) is beta * C alone.
COMBINE = {(r, c): _combine(r, c) for r, c in ((8, False), (8, True), (4, False), (4, True),
                                              (0, True))}


# ---- variants ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Variant:
    name: str
    a_path: str          # "buffer" or "texture"
    tile_rows: int       # output rows per fragment (8 or 4 for the micro-tile, 1 for simple)
    unroll: int          # K-quads per loop iteration (1, 2 or 4; 1 for simple)
    description: str

    def __post_init__(self):
        if self.tile_rows not in (1, 4, 8):
            raise ValueError(f"tile_rows must be 1, 4 or 8, got {self.tile_rows}")
        if self.unroll not in (1, 2, 4) or (self.tile_rows == 1 and self.unroll != 1):
            raise ValueError(f"unroll must be 1, 2 or 4 (1 for the simple kernel), got "
                             f"{self.unroll}")

    @property
    def kernel(self):
        return SIMPLE if self.tile_rows == 1 else TILE[self.tile_rows]

    @property
    def defines(self) -> dict:
        return {} if self.tile_rows == 1 else {"UNROLL": self.unroll}

    @property
    def fetches_per_quad(self) -> int:
        """Texel fetches per fragment per K-quad (4 of B, tile_rows of A)."""
        return 4 + self.tile_rows

    @property
    def flops_per_quad(self) -> int:
        """Flops per fragment per K-quad: tile_rows x 4 columns x 4 k x 2."""
        return 32 * self.tile_rows


VARIANTS = {
    "tile8x4": Variant("tile8x4", "buffer", 8, 2,
                       "A via buffer texture, B via 2-D texture, 8x4 micro-tile, 8 targets"),
    "tile8x4-tex": Variant("tile8x4-tex", "texture", 8, 2,
                           "A and B via 2-D textures, 8x4 micro-tile, 8 targets"),
    "tile4x4": Variant("tile4x4", "buffer", 4, 2,
                       "A via buffer texture, B via 2-D texture, 4x4 tile, 4 targets"),
    "simple": Variant("simple", "buffer", 1, 1,
                      "A via buffer texture, B via 2-D texture, one texel per fragment"),
}
DEFAULT_VARIANT = "auto"

# Fragments wanted in flight per product pass before K is split, and the shortest K slice worth
# a pass (GPUs only; llvmpipe keeps its few cores busy with any output). Measured on an H200:
# 256 x 256 x 16384 runs 1.5x faster with 8 slices than with 1 or 128; square sizes gain <= 2%.
SPLIT_TARGET_FRAGMENTS = 1 << 18
MIN_SLICE_K = 2048


def default_variant(dev) -> str:
    """The faster variant on ``dev`` (measured, benchmarks/RESULTS.md): on llvmpipe the buffer
    path for A ("tile8x4", 1.5x faster at n=1024); on the NVIDIA driver 2-D textures fetch
    faster than texture buffers, so "tile8x4-tex" (2-30% faster)."""
    return "tile8x4" if dev.is_software else "tile8x4-tex"


def _variant(v) -> Variant:
    return v if isinstance(v, Variant) else VARIANTS[v]


def _round_up(x: int, m: int) -> int:
    return ceil_div(x, m) * m


def _padded(variant: Variant, M: int, K: int) -> tuple[int, int]:
    return _round_up(M, variant.tile_rows), _round_up(K, 4 * variant.unroll)


def _cap(loop_cap):
    """A loop cap from a Device (its ``loop_cap``), an int, or None (no cap)."""
    return getattr(loop_cap, "loop_cap", loop_cap)


def _cuts(variant: Variant, K: int, loop_cap, slices: int = 1, has_c: bool = False) -> list:
    """The K slices the engine cuts the product into (the kernel's own split, the same call
    :meth:`Device.run` makes): at least ``slices``, more when the loop cap needs them."""
    kern = (SIMPLE_C if has_c else SIMPLE) if variant.tile_rows == 1 else variant.kernel
    _, Kp = _padded(variant, 1, K)
    layouts = {"B": SimpleNamespace(rows=Kp, cols=1)}
    return kern.slices(layouts, {}, kern.resolve_defines(variant.defines), _cap(loop_cap),
                       slices)


def min_split(variant, K: int, loop_cap, has_c: bool = False) -> int:
    """Fewest K slices that keep one fragment's loop iterations within ``loop_cap`` (a Device,
    its ``loop_cap`` or None): one loop iteration per K step of ``unroll`` quads (the simple
    kernel: one per K-quad, plus 4 for the lanes of C when ``has_c``)."""
    v = _variant(variant)
    return len(_cuts(v, K, loop_cap, 1, has_c and v.tile_rows == 1))


def auto_split(dev, variant, M: int, N: int, K: int) -> int:
    """K slices asked of the engine for performance: 1 on llvmpipe (its few cores are busy with
    any output) and for the simple kernel; on GPUs more slices for small outputs (more
    fragments in flight), at least MIN_SLICE_K of K each. The engine raises it to what
    ``dev``'s loop cap needs (:func:`min_split`)."""
    v = _variant(variant)
    if v.tile_rows == 1 or dev.is_software:
        return 1
    frags = ceil_div(M, v.tile_rows) * ceil_div(N, 4)
    split = max(1, ceil_div(SPLIT_TARGET_FRAGMENTS, frags))
    return max(1, min(split, K // MIN_SLICE_K))


def work(variant: str, M: int, N: int, K: int, split: int = 1, stage_a: bool = False,
         stage_b: bool = False, has_c: bool = False, loop_cap=None) -> dict:
    """The pass plan of one call: passes per phase, fragments, fetches and flops per fragment.

    ``stage_a``/``stage_b``: the input is a device array (a staging pass copies it into the
    padded operand); numpy inputs are staged on the host. ``split``: K slices asked for;
    ``loop_cap``: the device's loop cap (a Device, ``dev.loop_cap`` or None). The returned
    ``split`` is the number of product passes the engine draws (raised for the cap, capped at
    one slice per K step), exactly as :func:`sgemm` runs it.
    """
    v = _variant(variant)
    Mp, Kp = _padded(v, M, K)
    kq = Kp // 4
    nq = ceil_div(N, 4)
    split = len(_cuts(v, K, loop_cap, split, has_c and v.tile_rows == 1))
    phases = {}
    if stage_a or stage_b:
        phases["sgemm/stage"] = int(stage_a) + int(stage_b)
    phases["sgemm/product"] = split
    if v.tile_rows == 1:
        frags = M * nq
        fetch = v.fetches_per_quad * kq / split + (1 if has_c else 0)
    else:
        phases["sgemm/combine"] = 1
        frags = (Mp // v.tile_rows) * nq
        fetch = v.fetches_per_quad * kq / split
    flops = v.flops_per_quad * kq / split
    return {"variant": v.name, "M": M, "N": N, "K": K, "split": split, "phases": phases,
            "passes": sum(phases.values()), "product_fragments": frags,
            "fetches_per_fragment": fetch, "flops_per_fragment": flops,
            "flops_per_fetch": v.flops_per_quad / v.fetches_per_quad,
            "useful_flops": 2 * M * N * K}


def _plan_phases(variant):
    def phases(M, N, K, split=1, stage_a=False, stage_b=False, has_c=False, loop_cap=None):
        return work(variant, M, N, K, split, stage_a, stage_b, has_c, loop_cap)["phases"]
    return phases


for _name, _v in VARIANTS.items():
    register_plan(PassPlan(
        name=f"sgemm/{_name}",
        formula=("[stage_A] + [stage_B] + slices" if _v.tile_rows == 1
                 else "[stage_A] + [stage_B] + slices + 1"),
        phases=_plan_phases(_name),
        notes=(f"{_v.description}. Per fragment and K-quad: {_v.fetches_per_quad} texel "
               f"fetches, {_v.flops_per_quad} flops. slices = K slices: the split asked for, "
               "raised to what the device's loop cap needs (pass loop_cap). Staging passes "
               "only for device-array inputs; the micro-tile variants end with one epilogue "
               "pass (targets -> C, alpha, beta)."),
        params=("M", "N", "K", "split", "stage_a", "stage_b", "has_c", "loop_cap")))


# ---- staging ----------------------------------------------------------------------------------
def _stage_texture(dev, x, trans: bool, rows: int, cols: int, prows: int, pcols: int):
    """op(x) zero-padded to (prows, pcols), packed row-major, as a DeviceArray."""
    if isinstance(x, DeviceArray):
        out = dev.empty((prows, pcols))
        with dev.phase("sgemm/stage"):
            dev.run(STAGE, out, inputs={"X": x}, defines={"TRANS": int(trans)})
        return out
    m = np.zeros((prows, pcols), dtype=np.float32)
    m[:rows, :cols] = x.T if trans else x
    return dev.array(m)


def _stage_buffer(dev, x, trans: bool, rows: int, cols: int, prows: int, pcols: int):
    lay = BufferLayout(prows, pcols)
    if isinstance(x, DeviceArray):
        tex = _stage_texture(dev, x, trans, rows, cols, prows, pcols)
        try:
            return BufferArray.from_texture(dev, lay, tex)
        finally:
            tex.release()
    m = np.zeros((prows, pcols), dtype=np.float32)
    m[:rows, :cols] = x.T if trans else x
    return BufferArray.from_host(dev, lay, m)


def _operand(x, name: str):
    if isinstance(x, DeviceArray):
        return V.device_array(x, name, ndim=2)
    # NaN / Inf propagate as in BLAS (and are ignored where the operand is not read)
    return V.array(x, name, ndim=2, finite=False)


def _flag(x, name: str) -> bool:
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(x).__name__}")
    return bool(x)


# ---- the public function ----------------------------------------------------------------------
def sgemm(A, B, C=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
          variant: str = DEFAULT_VARIANT, device=None, split: int | None = None):
    """``alpha * op(A) @ op(B) + beta * C`` in float32 on the device (BLAS SGEMM semantics).

    Parameters
    ----------
    A, B : 2-D numpy arrays (any real dtype, computed in float32) or DeviceArrays.
        ``op(A)`` is ``A`` or ``A.T`` (``trans_a``), ``M x K``; ``op(B)`` is ``K x N``.
    C : optional ``M x N`` array (numpy or DeviceArray). As in BLAS it is not read when
        ``beta == 0``, and ``A``, ``B`` are not read when ``alpha == 0``.
    alpha, beta : finite real scalars.
    variant : ``"auto"`` (default: the faster one on this device, see :func:`default_variant`),
        ``"tile8x4"``, ``"tile8x4-tex"``, ``"tile4x4"`` or ``"simple"`` (see module doc).
    device : the Device to use; default: the arguments' device, else the process default.
    split : K slices asked for (passes summed by blending); default :func:`auto_split`. The
        engine raises it to what the device's loop cap needs (:func:`min_split`) and caps it at
        one slice per K step; :func:`work` gives the passes drawn.

    NaN and Inf in ``A`` or ``B`` are not checked: they propagate into the result as in BLAS
    (a NaN or Inf in an operand row/column makes the dependent elements of C non-finite).

    Returns
    -------
    A new float32 ``M x N`` numpy array, or a new DeviceArray when any of A, B, C is one
    (products then chain on the device without readback).
    """
    V.choice(variant, "variant", ("auto", *VARIANTS))
    alpha = V.real(alpha, "alpha")
    beta = V.real(beta, "beta")
    trans_a = _flag(trans_a, "trans_a")
    trans_b = _flag(trans_b, "trans_b")
    A = _operand(A, "A")
    B = _operand(B, "B")
    if C is not None:
        C = _operand(C, "C")
    M, K = (A.shape[1], A.shape[0]) if trans_a else A.shape
    K2, N = (B.shape[1], B.shape[0]) if trans_b else B.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: op(A) is {M}x{K}, op(B) is {K2}x{N}")
    if C is not None and tuple(C.shape) != (M, N):
        raise ValueError(f"C must have shape {(M, N)} (op(A) @ op(B)), got {tuple(C.shape)}")
    if split is not None:
        split = V.integer(split, "split", lo=1)
    dev = V.pick_device(device, [A, B, C])
    v = VARIANTS[default_variant(dev) if variant == "auto" else variant]
    as_device = any(isinstance(x, DeviceArray) for x in (A, B, C))

    has_p = alpha != 0.0
    has_c = C is not None and beta != 0.0
    with dev.scope() as s:
        Cd = None
        if has_c:
            Cd = C if isinstance(C, DeviceArray) else s.array(C, name="C")
        out = dev.empty((M, N))
        try:
            _product(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K,
                     has_p, has_c, split)
        except BaseException:
            out.release()
            raise
    if as_device:
        return out
    try:
        return out.get()
    finally:
        out.release()


def _product(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K, has_p, has_c,
             split):
    c_inputs = {"C": Cd} if has_c else {}
    c_uniforms = {"beta": beta} if has_c else {}
    if not has_p:
        if has_c:
            dev.run(COMBINE[0, True], out, inputs=c_inputs, uniforms=c_uniforms)
        else:
            dev.fill(out, 0.0)
        return
    Mp, Kp = _padded(v, M, K)
    a_path = v.a_path
    if a_path == "buffer" and BufferLayout(Mp, Kp).n_texels > max_texture_buffer_size(dev):
        a_path = "texture"  # too large for one texture buffer: use the 2-D path
    stage = _stage_buffer if a_path == "buffer" else _stage_texture
    As = s.track(stage(dev, A, trans_a, M, K, Mp, Kp))
    Bs = s.track(_stage_texture(dev, B, trans_b, K, N, Kp, N))
    slices = split or auto_split(dev, v, M, N, K)
    if v.tile_rows == 1:
        # slice t adds alpha * A[:, slice] B[slice, :] into C; beta * C in the first slice only
        kern = SIMPLE_C if has_c else SIMPLE
        with dev.phase("sgemm/product"):
            dev.run(kern, out, inputs={"A": As, "B": Bs, **c_inputs},
                    uniforms={"alpha": alpha, **c_uniforms}, slices=slices)
        return
    tr = v.tile_rows
    parts = [s.empty((Mp // tr, N)) for _ in range(tr)]
    with dev.phase("sgemm/product"):
        dev.run(v.kernel, parts, inputs={"A": As, "B": Bs}, defines=v.defines, slices=slices)
    with dev.phase("sgemm/combine"):
        dev.run(COMBINE[tr, has_c], out,
                inputs={**{f"P{t}": p for t, p in enumerate(parts)}, **c_inputs},
                uniforms={"alpha": alpha, **c_uniforms})
