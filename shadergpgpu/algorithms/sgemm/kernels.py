"""The SGEMM kernels, each declared once (:func:`~shadergpgpu.engine.kernels.declare`): the
staging kernels (op(X) zero-padded into a packed row-major array, or into uniform-block
windows), the product kernels (simple, the micro-tiles, the uniform-block tiles with B by rows
or transposed) and the epilogues (targets -> C, ``alpha`` and ``beta``). Sources live under
``shaders/algorithms/sgemm/``.
"""
from __future__ import annotations

from ...engine.kernels import In, Split, declare

HINT = "K is cut across passes automatically; this device's loop cap is too small for one step"

_A = In(buffer="either", packed=True, order="row")   # staged A: texture buffer or 2-D texture
_B = In(packed=True, order="row")                    # staged B: 2-D texture

#: op(X) zero-padded into a packed row-major array (TRANS: X transposed); X of any layout,
#: a BufferArray included (TEXELS 1 where X is packed row-major and not transposed: one fetch
#: per output texel).
STAGE = declare("algorithms/sgemm/stage.frag", inputs={"X": In(buffer="either")},
                defines={"TRANS": 0, "TEXELS": 0}, loop=lambda a: 4,
                name="sgemm/stage")


def _simple(has_c: bool):
    inputs = {"A": _A, "B": _B, **({"C": In()} if has_c else {})}
    return declare(
        "algorithms/sgemm/simple.frag", inputs=inputs,
        uniforms={"alpha": "float", **({"beta": "float"} if has_c else {})},
        defines={"HAS_C": int(has_c)},
        # K-quads of the staged B; 4 more iterations for the lane loop reading C
        split=Split("kq", length=lambda a: a.B.rows // 4, cost=1, extra=4 if has_c else 0),
        name="sgemm/simple+C" if has_c else "sgemm/simple", hint=HINT)


#: simple variant: C = alpha A B (+ beta C with SIMPLE_WITH_C), one output texel per fragment.
SIMPLE = _simple(False)
SIMPLE_WITH_C = _simple(True)


def _tile(rows: int):
    # one loop iteration per step of UNROLL K-quads (the steps are unrolled by hand)
    return declare(
        "algorithms/sgemm/tile8x4.frag", inputs={"A": _A, "B": _B}, outputs=rows,
        defines={"TILE_ROWS": rows, "UNROLL": 2},
        split=Split("ks", length=lambda a: a.B.rows // (4 * a.defines["UNROLL"]), cost=1),
        name=f"sgemm/tile{rows}x4", hint=HINT)


#: micro-tile product kernels by tile rows: P (rows x 4 per fragment) into ``rows`` targets.
TILE = {8: _tile(8), 4: _tile(4)}


def _tile_ubo(rows: int):
    # one draw = one block row and K chunk: ks_n steps of UNROLL K-quads, at most the window's
    # quads (the declared loop is that bound, checked against the device's cap)
    return declare(
        "algorithms/sgemm/tile8x4_ubo.frag", inputs={"A": In(block=True), "B": _B},
        outputs=rows, uniforms={"kq0": "int", "ks_n": "int", "geo": "ivec4"},
        defines={"TILE_ROWS": rows, "UNROLL": 2, "QUAD_ORDER": 0},
        loop=lambda a: a.A.vec4s // (a.defines["TILE_ROWS"] * a.defines["UNROLL"]),
        name=f"sgemm/tile{rows}x4-ubo", hint=HINT)


#: uniform-block product kernels by tile rows (A from a block window, B from a texture).
TILE_UBO = {8: _tile_ubo(8), 4: _tile_ubo(4)}


def _tile_ubo_bt(targets: int):
    # as _tile_ubo, with B transposed and TILE_COLS (2 or 1) columns of C per fragment:
    # TILE_ROWS = 4 targets / TILE_COLS rows, ks_n steps at most the window's quads / UNROLL
    return declare(
        "algorithms/sgemm/tile_ubo_bt.frag", inputs={"A": In(block=True), "B": _B},
        outputs=targets, uniforms={"kq0": "int", "ks_n": "int", "geo": "ivec4"},
        defines={"N_OUT": targets, "TILE_COLS": 2, "UNROLL": 2, "QUAD_ORDER": 0},
        loop=lambda a: a.A.vec4s * a.defines["TILE_COLS"] // (
            4 * a.defines["N_OUT"] * a.defines["UNROLL"]),
        name=f"sgemm/ubo-bt{targets}", hint=HINT)


#: uniform-block product kernels with B transposed (tile16x2-ubo, tile32x1-ubo and their
#: adaptations), by render targets.
TILE_UBO_B_TRANSPOSED = {t: _tile_ubo_bt(t) for t in (8, 4, 2, 1)}

#: op(X) zero-padded and rearranged into block windows (one output row per block row and
#: K chunk) for the uniform-block variant.
STAGE_BLOCK = declare("algorithms/sgemm/stage_block.frag", inputs={"X": In(buffer="either")},
                      uniforms={"chunks": "int", "chunk": "int", "first": ("int", 0)},
                      defines={"TRANS": 0, "TILE_ROWS": 8, "TEXELS": 0}, loop=lambda a: 4,
                      name="sgemm/stage-block")


def _combine(rows: int, has_c: bool):
    inputs = {f"P{t}": _B for t in range(rows)}
    uniforms = {"alpha": "float"} if rows else {}
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


def _combine_ubo(targets: int, has_c: bool):
    inputs = {f"P{t}": _B for t in range(targets)}
    uniforms = {"alpha": "float", "geo": "ivec4"}
    if has_c:
        inputs["C"] = In()
        uniforms["beta"] = "float"
    return declare("algorithms/sgemm/combine_ubo.frag", inputs=inputs, uniforms=uniforms,
                   defines={"N_OUT": targets, "TILE_COLS": 4, "HAS_C": int(has_c),
                            "QUAD_ORDER": 0},
                   loop=lambda a: 4,  # the lanes of C
                   name=f"sgemm/combine-ubo{targets}" + ("+C" if has_c else ""))


#: epilogue kernels of the uniform-block variants by (targets, has C): C = alpha P + beta C,
#: P gathered from the targets' geometry (TILE_COLS: 4, 2 or 1 columns per fragment).
COMBINE_UBO = {(t, c): _combine_ubo(t, c) for t in (8, 4, 2, 1) for c in (False, True)}
