"""The SGEMM K slices: the engine's cuts under the loop cap (:func:`min_split`) and the split
asked for performance (:func:`auto_split`)."""
from __future__ import annotations

from types import SimpleNamespace

from ...engine.limits import ceil_div
from .kernels import SIMPLE, SIMPLE_WITH_C
from .ubo import ubo_plan
from .variants import Limits, Variant, padded_shape, as_variant, effective_variant

# Fragments wanted in flight per product pass before K is split, and the shortest K slice worth
# a pass (GPUs only; llvmpipe keeps its few cores busy with any output). A thin product with a
# long K fills the GPU only when split; square sizes gain little.
SPLIT_TARGET_FRAGMENTS = 1 << 18
MIN_SLICE_K = 2048


def _cap(loop_cap):
    """A loop cap from a Device (its ``loop_cap``), Limits, an int, or None (no cap)."""
    return getattr(loop_cap, "loop_cap", loop_cap)


def loop_cuts(variant: Variant, K: int, loop_cap, slices: int = 1, has_c: bool = False) -> list:
    """The K slices the engine cuts the product into (the kernel's own split, the same call
    :meth:`Device.run` makes): at least ``slices``, more when the loop cap needs them."""
    kern = (SIMPLE_WITH_C if has_c else SIMPLE) if variant.tile_rows == 1 else variant.kernel
    _, Kp = padded_shape(variant, 1, K)
    layouts = {"B": SimpleNamespace(rows=Kp, cols=1)}
    return kern.slices(layouts, {}, kern.resolve_defines(variant.defines), _cap(loop_cap),
                       slices)


def min_split(variant, K: int, loop_cap, has_c: bool = False) -> int:
    """Fewest K slices that keep one fragment's loop iterations within ``loop_cap`` (a Device,
    its ``loop_cap`` or None): one loop iteration per K step of ``unroll`` quads (the simple
    kernel: one per K-quad, plus 4 for the lanes of C when ``has_c``). The uniform-block
    variant: K chunks (each within one uniform-block window and the cap)."""
    v = effective_variant(variant, Limits.of(None, loop_cap))
    if v.a_path == "block":
        return len(ubo_plan(v, 1, 4, K, Limits.of(None, loop_cap)).chunks)
    return len(loop_cuts(v, K, loop_cap, 1, has_c and v.tile_rows == 1))


def auto_split(dev, variant, M: int, N: int, K: int) -> int:
    """K slices asked of the engine for performance: 1 on llvmpipe (its few cores are busy with
    any output), for the simple kernel and the uniform-block variant (its chunks are set by the
    block size); on GPUs more slices for small outputs (more fragments in flight), at least
    MIN_SLICE_K of K each. The engine raises it to what ``dev``'s loop cap needs
    (:func:`min_split`)."""
    v = as_variant(variant)
    if v.tile_rows == 1 or v.a_path == "block" or dev.plans_for_software:
        return 1
    frags = ceil_div(M, v.tile_rows) * ceil_div(N, 4)
    split = max(1, ceil_div(SPLIT_TARGET_FRAGMENTS, frags))
    return max(1, min(split, K // MIN_SLICE_K))
