"""The SGEMM pass plan: the plan of one call (:func:`work`: passes per phase, fragments,
fetches and flops per fragment) and the registered pass plans ``sgemm/<variant>``."""
from __future__ import annotations

from ...algorithms.sgemm.splits import loop_cuts
from ...algorithms.sgemm.ubo import stage_block_passes, ubo_plan
from ...algorithms.sgemm.variants import VARIANTS, Limits, padded_shape, effective_variant
from ...engine.limits import ceil_div
from .registry import PassPlan, register_plan


def work(variant, M: int, N: int, K: int, split: int = 1, stage_a: bool = False,
         stage_b: bool = False, has_c: bool = False, loop_cap=None, device=None,
         trans_a: bool = False, trans_b: bool = False) -> dict:
    """The pass plan of one call: passes per phase, fragments, fetches and flops per fragment.

    ``stage_a``/``stage_b``: the input is a device array (a staging pass copies it into the
    padded operand). A numpy input is uploaded as it is and staged by the same pass where it
    needs padding or transposing (``trans_a``/``trans_b``), else used as uploaded; the
    uniform-block windows of A are always staged by passes. ``split``: K slices asked for.
    ``device``: the Device (or its :class:`Limits`) the call runs on: its loop cap, render
    targets, buffer textures, float blending, uniform-block size and texture size shape the
    plan (the variant is adapted as :func:`effective_variant` says). ``loop_cap`` alone (an
    int, or a Device, read as ``device``) gives the default limits with that cap. The returned
    ``split`` is the number of K slices the engine draws (raised for the cap, capped at one
    slice per K step; the uniform-block variant: K chunks), exactly as :func:`sgemm` runs it;
    ``phases`` counts every pass, the ping-pong passes of accumulation without float blending
    included.
    """
    lim = Limits.of(device, loop_cap)
    v = effective_variant(variant, lim)
    Mp, Kp = padded_shape(v, M, K)
    kq = Kp // 4
    nq = ceil_div(N, 4)
    phases = {}
    if v.a_path == "block":
        plan = ubo_plan(v, M, N, K, lim, split)
        a_passes = stage_block_passes(plan, lim)
        if v.b_transposed:   # op(B)^T staged: as given only where B is already N x K, padded
            b_pass = stage_b or not trans_b or (N, K) != (plan.fw * plan.cols, Kp)
        else:
            b_pass = stage_b or trans_b or K != Kp
    else:
        a_passes = int(stage_a or trans_a or (M, K) != (Mp, Kp))
        b_pass = stage_b or trans_b or K != Kp
    if a_passes or b_pass:
        phases["sgemm/stage"] = a_passes + int(b_pass)
    if v.a_path == "block":
        split = len(plan.chunks)
        draws = sum(len(r) for r in plan.rects)
        # later chunks blend draw by draw; without float blending they are drawn into fresh
        # targets and added by one pass per target
        phases["sgemm/product"] = draws * split + (0 if lim.float_blending else
                                                   (split - 1) * v.targets)
        frags = plan.fragments
    else:
        split = len(loop_cuts(v, K, lim.loop_cap, split, has_c and v.tile_rows == 1))
        outs = 1 if v.tile_rows == 1 else v.tile_rows
        phases["sgemm/product"] = 1 + (split - 1) * lim.accumulate_passes(outs)
        frags = M * nq if v.tile_rows == 1 else (Mp // v.tile_rows) * nq
    fetch = v.fetches_per_quad * kq / split
    if v.tile_rows == 1:
        fetch += 1 if has_c else 0
    else:
        phases["sgemm/combine"] = 1
    flops = v.flops_per_quad * kq / split
    return {"variant": v.name, "M": M, "N": N, "K": K, "split": split, "phases": phases,
            "passes": sum(phases.values()), "product_fragments": frags,
            "fetches_per_fragment": fetch, "flops_per_fragment": flops,
            "flops_per_fetch": v.flops_per_quad / v.fetches_per_quad,
            "tile_rows": v.tile_rows, "tile_cols": v.tile_cols, "a_path": v.a_path,
            "useful_flops": 2 * M * N * K}


def _plan_phases(variant):
    def phases(M, N, K, split=1, stage_a=False, stage_b=False, has_c=False, loop_cap=None,
               device=None, trans_a=False, trans_b=False):
        return work(variant, M, N, K, split, stage_a, stage_b, has_c, loop_cap,
                    device, trans_a, trans_b)["phases"]
    return phases


for _name, _v in VARIANTS.items():
    if _v.a_path == "block":
        _formula = ("[stage_A] + [stage_B] + draws x chunks + [(chunks - 1) x targets "
                    f"without float blending] + 1, draws = block rows (M / {_v.tile_rows}) x "
                    "rects per block row (1 unless the targets wrap)")
    elif _v.tile_rows == 1:
        _formula = "[stage_A] + [stage_B] + 1 + (slices - 1) x acc"
    else:
        _formula = "[stage_A] + [stage_B] + 1 + (slices - 1) x acc + 1"
    register_plan(PassPlan(
        name=f"sgemm/{_name}",
        formula=_formula,
        phases=_plan_phases(_name),
        notes=(f"{_v.description}. Per fragment and K-quad: {_v.fetches_per_quad} texel "
               f"fetches, {_v.flops_per_quad} flops. slices = K slices: the split asked for, "
               "raised to what the device's loop cap needs (pass loop_cap or device). acc = "
               "passes of one accumulating pass: 1 with float blending, 1 + 2 x targets by "
               "ping-pong without (device profiles). Under a profile the variant adapts "
               "(tile rows to the render targets, A's path). Staging passes for "
               "device-array inputs, and for numpy inputs that need padding or transposing "
               "(the uniform-block windows of A always); the micro-tile variants end with one epilogue pass "
               "(targets -> C, alpha, beta)."),
        params=("M", "N", "K", "split", "stage_a", "stage_b", "has_c", "loop_cap", "device",
                "trans_a", "trans_b")))
