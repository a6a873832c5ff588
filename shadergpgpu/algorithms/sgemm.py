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

Every variant keeps the loop iterations of one fragment in one pass within
:data:`shadergpgpu.engine.limits.LOOP_BUDGET` (Mesa llvmpipe silently stops longer loops), so K is
split over at least :func:`min_split` passes on every device.

Any shapes work: inputs are staged into zero-padded copies (M to a multiple of 8, K to a multiple
of 4 * unroll) on the host for numpy inputs or by a staging pass for device arrays, so the
kernels never branch on edges; the padding never reaches the result. Arrays wider than the
texture limit wrap (the layout accessors handle it).
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from ..engine.arrays import DeviceArray, as_float32
from ..engine.glraw import BufferArray, attach_samplers, max_texture_buffer_size
from ..engine.layout import BufferLayout
from ..engine.limits import LOOP_BUDGET, ceil_div
from ..engine.plans import PassPlan, register_plan

__all__ = ["sgemm", "VARIANTS", "DEFAULT_VARIANT", "default_variant", "work", "auto_split",
           "min_split"]


@dataclass(frozen=True)
class Variant:
    name: str
    shader: str
    a_path: str          # "buffer" or "texture"
    tile_rows: int       # output rows per fragment (8 for the micro-tile, 1 for simple)
    unroll: int          # K-quads per loop iteration
    description: str

    @property
    def fetches_per_quad(self) -> int:
        """Texel fetches per fragment per K-quad (4 of B, tile_rows of A)."""
        return 4 + self.tile_rows

    @property
    def flops_per_quad(self) -> int:
        """Flops per fragment per K-quad: tile_rows x 4 columns x 4 k x 2."""
        return 32 * self.tile_rows


VARIANTS = {
    "tile8x4": Variant("tile8x4", "sgemm/tile8x4.frag", "buffer", 8, 2,
                       "A via buffer texture, B via 2-D texture, 8x4 micro-tile, 8 targets"),
    "tile8x4-tex": Variant("tile8x4-tex", "sgemm/tile8x4.frag", "texture", 8, 2,
                           "A and B via 2-D textures, 8x4 micro-tile, 8 targets"),
    "tile4x4": Variant("tile4x4", "sgemm/tile8x4.frag", "buffer", 4, 2,
                       "A via buffer texture, B via 2-D texture, 4x4 tile, 4 targets"),
    "simple": Variant("simple", "sgemm/simple.frag", "buffer", 1, 1,
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
    return "tile8x4" if _is_software(dev) else "tile8x4-tex"


def _round_up(x: int, m: int) -> int:
    return ceil_div(x, m) * m


def _is_software(dev) -> bool:
    r = dev.caps.renderer.lower()
    return "llvmpipe" in r or "softpipe" in r or "swrast" in r


def _loop_steps(variant: Variant, K: int) -> int:
    """Outer loop steps over the whole (padded) K: K-quads / unroll."""
    return _padded(variant, 1, K)[1] // 4 // variant.unroll


def min_split(variant: Variant, K: int) -> int:
    """Fewest K slices that keep one fragment's loop iterations in a pass within LOOP_BUDGET.

    Nested loops count together: the micro-tile kernels run ``1 + unroll`` iterations per outer
    step (the outer one and ``unroll`` inner ones), ``simple`` one per K-quad.
    """
    per_step = 1 if variant.unroll == 1 and variant.tile_rows == 1 else 1 + variant.unroll
    return max(1, ceil_div(_loop_steps(variant, K) * per_step, LOOP_BUDGET))


def _effective_split(variant: Variant, K: int, split: int) -> int:
    """``split`` raised to :func:`min_split` and capped at one slice per outer loop step."""
    return max(min_split(variant, K), min(split, _loop_steps(variant, K)), 1)


def auto_split(dev, variant: Variant, M: int, N: int, K: int) -> int:
    """Number of K slices (passes) on ``dev``: at least :func:`min_split` on every device."""
    lo = min_split(variant, K)
    if variant.tile_rows == 1 or _is_software(dev):
        return lo
    frags = ceil_div(M, variant.tile_rows) * ceil_div(N, 4)
    split = max(1, ceil_div(SPLIT_TARGET_FRAGMENTS, frags))
    return max(lo, min(split, K // MIN_SLICE_K))


def _padded(variant: Variant, M: int, K: int) -> tuple[int, int]:
    return _round_up(M, variant.tile_rows), _round_up(K, 4 * variant.unroll)


def work(variant: str, M: int, N: int, K: int, split: int = 1, stage_a: bool = False,
         stage_b: bool = False, has_c: bool = False) -> dict:
    """The pass plan of one call: passes per phase, fragments, fetches and flops per fragment.

    ``stage_a``/``stage_b``: the input is a device array (a staging pass copies it into the
    padded operand); numpy inputs are staged on the host. ``split``: K slices (passes), raised
    to :func:`min_split` and capped as :func:`sgemm` does (the returned ``split`` is the one used).
    """
    v = VARIANTS[variant]
    Mp, Kp = _padded(v, M, K)
    kq = Kp // 4
    nq = ceil_div(N, 4)
    split = _effective_split(v, K, split)
    phases = {}
    if stage_a or stage_b:
        phases["sgemm/stage"] = int(stage_a) + int(stage_b)
    if v.tile_rows == 1:
        phases["sgemm/product"] = split
        frags = M * nq
        fetch = v.fetches_per_quad * kq / split + (1 if has_c else 0)
        flops = v.flops_per_quad * kq / split
    else:
        phases["sgemm/product"] = split
        phases["sgemm/combine"] = 1
        frags = (Mp // v.tile_rows) * nq
        fetch = v.fetches_per_quad * kq / split
        flops = v.flops_per_quad * kq / split
    return {"variant": variant, "M": M, "N": N, "K": K, "split": split, "phases": phases,
            "passes": sum(phases.values()), "product_fragments": frags,
            "fetches_per_fragment": fetch, "flops_per_fragment": flops,
            "flops_per_fetch": v.flops_per_quad / v.fetches_per_quad,
            "useful_flops": 2 * M * N * K}


def _plan_phases(variant):
    def phases(M, N, K, split=1, stage_a=False, stage_b=False, has_c=False):
        return work(variant, M, N, K, split, stage_a, stage_b, has_c)["phases"]
    return phases


for _name, _v in VARIANTS.items():
    register_plan(PassPlan(
        name=f"sgemm/{_name}",
        formula=("[stage_A] + [stage_B] + split" if _v.tile_rows == 1
                 else "[stage_A] + [stage_B] + split + 1"),
        phases=_plan_phases(_name),
        notes=(f"{_v.description}. Per fragment and K-quad: {_v.fetches_per_quad} texel "
               f"fetches, {_v.flops_per_quad} flops. Staging passes only for device-array "
               "inputs; the micro-tile variants end with one epilogue pass (8 targets -> C, "
               "alpha, beta)."),
        params=("M", "N", "K", "split", "stage_a", "stage_b", "has_c")))


# ---- validation -------------------------------------------------------------------------------
def _scalar(x, name: str) -> float:
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        if isinstance(x, numbers.Complex):
            raise TypeError(f"{name} must be a real number, got complex {x!r}")
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    return v


def _operand(x, name: str):
    if isinstance(x, DeviceArray):
        if x.released:
            raise ValueError(f"{name} has been released")
        if x.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
        return x
    if isinstance(x, BufferArray):
        raise TypeError(f"{name}: pass a numpy array or a DeviceArray")
    a = as_float32(x, name)
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {a.shape}")
    return a


def _pick_device(device, arrays):
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
    from ..engine.device import get_device
    return get_device()


# ---- staging ----------------------------------------------------------------------------------
def _stage_texture(dev, x, trans: bool, rows: int, cols: int, prows: int, pcols: int):
    """op(x) zero-padded to (prows, pcols), packed row-major, as a DeviceArray."""
    if isinstance(x, DeviceArray):
        out = dev.empty((prows, pcols))
        with dev.phase("sgemm/stage"):
            dev.run("sgemm/stage.frag", out, inputs={"X": x},
                    defines={"TRANS": int(trans), "OP_ROWS": rows, "OP_COLS": cols})
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


def _run(dev, shader, outputs, inputs, uniforms, defines, blend=False):
    outs = outputs if isinstance(outputs, (list, dict)) else {"OUT": outputs}
    table = outs if isinstance(outs, dict) else {f"OUT{k}": a for k, a in enumerate(outs)}
    attach_samplers(dev.kernel(shader, inputs, table, defines), inputs)
    dev.run(shader, outputs, inputs=inputs, uniforms=uniforms, defines=defines, blend=blend)


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
    split : K slices (passes summed by blending); default automatic. A value below
        :func:`min_split` (the fewest slices that keep each pass's loops within
        :data:`~shadergpgpu.engine.limits.LOOP_BUDGET`) is raised to it.

    NaN and Inf in ``A`` or ``B`` are not checked: they propagate into the result as in BLAS
    (a NaN or Inf in an operand row/column makes the dependent elements of C non-finite).

    Returns
    -------
    A new float32 ``M x N`` numpy array, or a new DeviceArray when any of A, B, C is one
    (products then chain on the device without readback).
    """
    if variant != "auto" and variant not in VARIANTS:
        raise ValueError(f"variant must be 'auto' or one of {', '.join(VARIANTS)}, "
                         f"got {variant!r}")
    alpha = _scalar(alpha, "alpha")
    beta = _scalar(beta, "beta")
    for flag, name in ((trans_a, "trans_a"), (trans_b, "trans_b")):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be a bool, got {type(flag).__name__}")
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
    if split is not None and (isinstance(split, (bool, np.bool_))
                              or not isinstance(split, (int, np.integer)) or split < 1):
        raise ValueError(f"split must be a positive integer, got {split!r}")
    dev = _pick_device(device, [A, B, C])
    v = VARIANTS[default_variant(dev) if variant == "auto" else variant]
    as_device = any(isinstance(x, DeviceArray) for x in (A, B, C))

    has_p = alpha != 0.0
    has_c = C is not None and beta != 0.0
    temps = []
    try:
        Cd = None
        if has_c:
            Cd = C if isinstance(C, DeviceArray) else dev.array(C)
            if Cd is not C:
                temps.append(Cd)
        out = dev.empty((M, N))
        c_inputs = {"C": Cd} if has_c else {}
        c_defines = {"HAS_C": int(has_c), "HAS_P": int(has_p),
                     "C_PACKED_ROW": int(has_c and Cd.layout.packed and Cd.layout.order == "row")}
        uniforms = {"alpha": alpha, "beta": beta}
        if not has_p:
            dev.run("sgemm/combine.frag", out, inputs=c_inputs, uniforms=uniforms,
                    defines=c_defines)
        else:
            Mp, Kp = _padded(v, M, K)
            a_path = v.a_path
            if a_path == "buffer" and BufferLayout(Mp, Kp).n_texels > max_texture_buffer_size(dev):
                a_path = "texture"  # too large for one texture buffer: use the 2-D path
            stage = _stage_buffer if a_path == "buffer" else _stage_texture
            As = stage(dev, A, bool(trans_a), M, K, Mp, Kp)
            temps.append(As)
            Bs = _stage_texture(dev, B, bool(trans_b), K, N, Kp, N)
            temps.append(Bs)
            s = _effective_split(v, K, split or auto_split(dev, v, M, N, K))
            kq = Kp // 4
            step = v.unroll
            nsteps = kq // step
            if v.tile_rows == 1:
                # slice t adds alpha * A[:, slice] B[slice, :] into C; beta * C only in slice 0
                with dev.phase("sgemm/product"):
                    for t in range(s):
                        q0, q1 = kq * t // s, kq * (t + 1) // s
                        first = t == 0
                        _run(dev, v.shader, out,
                             {"A": As, "B": Bs, **(c_inputs if first else {})},
                             {**uniforms, "kq0": q0, "kq1": q1},
                             {**c_defines, "HAS_C": int(has_c and first),
                              "C_PACKED_ROW": int(c_defines["C_PACKED_ROW"] and first)},
                             blend=not first)
            else:
                tr = v.tile_rows
                parts = [dev.empty((Mp // tr, N)) for _ in range(tr)]
                temps.extend(parts)
                inputs = {"A": As, "B": Bs}
                with dev.phase("sgemm/product"):
                    for t in range(s):
                        q0 = (nsteps * t // s) * step
                        q1 = (nsteps * (t + 1) // s) * step
                        _run(dev, v.shader, parts, inputs, {"kq0": q0, "kq1": q1},
                             {"UNROLL": v.unroll, "TILE_ROWS": tr}, blend=t > 0)
                with dev.phase("sgemm/combine"):
                    dev.run("sgemm/combine.frag", out,
                            inputs={**{f"P{t}": p for t, p in enumerate(parts)}, **c_inputs},
                            uniforms=uniforms, defines={**c_defines, "TILE_ROWS": tr})
        if as_device:
            return out
        try:
            return out.get()
        finally:
            out.release()
    finally:
        for t in temps:
            t.release()
