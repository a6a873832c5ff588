"""The product passes of one call: the operands staged, the product kernel (K slices summed
by the engine), the epilogue; the uniform-block variants draw one rect per block row and K
chunk from one prepared pass.
"""
from __future__ import annotations

from ...engine.builtin import SAXPY
from ...engine.glraw import max_texture_buffer_size
from ...engine.layout import BufferLayout
from .kernels import COMBINE, COMBINE_UBO, SIMPLE, SIMPLE_WITH_C
from .splits import auto_split
from .staging import stage_b, stage_block, stage_buffer, stage_texture
from .tuning import SgemmTuning
from .ubo import ubo_plan
from .variants import Limits, padded_shape


def draw_product(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K, has_p, has_c,
             split, Bs=None):
    """The passes of ``out = alpha op(A) op(B) + beta C``; ``Bs``: op(B) already staged
    (:func:`~.staging.stage_b`, owned by the caller), else B is staged here into ``s``."""
    c_inputs = {"C": Cd} if has_c else {}
    c_uniforms = {"beta": beta} if has_c else {}
    if not has_p:
        if has_c:
            dev.run(COMBINE[0, True], out, inputs=c_inputs, uniforms=c_uniforms)
        else:
            dev.fill(out, 0.0)
        return
    if v.a_path == "block":
        _product_ubo(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K, has_c,
                     split, Bs)
        return
    Mp, Kp = padded_shape(v, M, K)
    a_path = v.a_path
    if a_path == "buffer" and BufferLayout(Mp, Kp).n_texels > max_texture_buffer_size(dev):
        a_path = "texture"  # too large for one texture buffer: use the 2-D path
    stage = stage_buffer if a_path == "buffer" else stage_texture
    As = s.track(stage(dev, A, trans_a, M, K, Mp, Kp))
    if Bs is None:
        Bs = s.track(stage_b(dev, v, B, trans_b, N, K))
    slices = split or auto_split(dev, v, M, N, K)
    if v.tile_rows == 1:
        # slice t adds alpha * A[:, slice] B[slice, :] into C; beta * C in the first slice only
        kern = SIMPLE_WITH_C if has_c else SIMPLE
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


def _product_ubo(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K, has_c,
                 split, Bs=None):
    """The uniform-block variants: one draw per block row and K chunk (see the module doc)."""
    lim = Limits.of(dev)
    plan = ubo_plan(v, M, N, K, lim, split or 1, dev.tuning(SgemmTuning))
    blk = s.track(stage_block(dev, A, trans_a, M, K, plan))
    if Bs is None:       # op(B)^T (its rows padded to whole fragments) or op(B)
        Bs = s.track(stage_b(dev, v, B, trans_b, N, K))
    targets = v.targets
    parts = [s.alloc(plan.parts) for _ in range(targets)]
    kern = v.kernel
    inputs = {"A": blk, "B": Bs}
    defines = {**v.defines, "QUAD_ORDER": int(plan.quad)}
    uni = {"kq0": 0, "ks_n": 0, "geo": plan.geo}
    first = dev.prepare(kern, parts, inputs=inputs, uniforms=uni, defines=defines)
    later = None
    n = len(plan.chunks)
    rects = [r for per_row in plan.rects for r in per_row]
    row_of = [i for i, per_row in enumerate(plan.rects) for _ in per_row]
    with dev.phase("sgemm/product"):
        for c, (q0, q1) in enumerate(plan.chunks):
            if c == 0:
                p = first
            elif later is None and dev.float_blending:
                # later chunks add into the targets by blending, draw by draw
                p = later = dev.prepare(kern, parts, inputs=inputs, uniforms=uni,
                                        defines=defines, accumulate="add")
            elif later is None:
                # no float blending: each later chunk is drawn into fresh targets and added
                # to the sum by one pass per target (not by ping-pong passes per draw)
                fresh = [s.alloc(plan.parts) for _ in range(targets)]
                p = later = dev.prepare(kern, fresh, inputs=inputs, uniforms=uni,
                                        defines=defines)
            p.set(kq0=q0, ks_n=(q1 - q0) // v.unroll)
            offsets = [(i * n + c) * blk.stride for i in row_of]
            p.sweep(rects, each=lambda d, offsets=offsets: blk.select(offsets[d]))
            if c > 0 and not dev.float_blending:
                for t in range(targets):
                    total = s.alloc(plan.parts)
                    dev.run(SAXPY, total, inputs={"X": fresh[t], "Y": parts[t]},
                            uniforms={"alpha": 1.0})
                    parts[t].release()
                    parts[t] = total
    c_inputs = {"C": Cd} if has_c else {}
    with dev.phase("sgemm/combine"):
        dev.run(COMBINE_UBO[targets, has_c], out,
                inputs={**{f"P{t}": p for t, p in enumerate(parts)}, **c_inputs},
                uniforms={"alpha": alpha, "geo": plan.geo,
                          **({"beta": beta} if has_c else {})},
                defines={"TILE_COLS": plan.cols, "QUAD_ORDER": int(plan.quad)})
