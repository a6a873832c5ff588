"""The kernels of both schedules, declared once (shaders under ``shaders/algorithms/backprop/``).

Declared when this module is imported (the package's ``__init__`` imports it), so the kernel
registry and the pass plans see every backprop kernel.
"""
from __future__ import annotations

from ...engine.kernels import In, Split, declare
from .geometry import quad_count

# ---- kernels ---------------------------------------------------------------------------------
# Activations, errors and targets are (L + 1) x N matrices, packed (four training vectors per
# texel) or not; the kernels read them texel by texel, so each is declared for both packings
# (a call with the other packing is refused before any GL work). Weights and gradient sums are
# unpacked and read by element. Every size is a shape macro or a uniform: one program per
# kernel and layout kind serves every network.
HINT = "use a smaller layer, or the paper schedule"


def _pair(file, name, inputs, **kw):
    """The kernel declared for packed (True) and unpacked (False) activations: ``inputs(p)``
    gives the input declarations for packing p."""
    out = {}
    for p in (True, False):
        defines = dict(kw.get("defines", {}), PACKED=int(p))
        args = {k: v for k, v in kw.items() if k != "defines"}
        out[p] = declare(f"algorithms/backprop/{file}", inputs=inputs(p), defines=defines,
                         name=f"backprop/{name}-{'packed' if p else 'unpacked'}", **args)
    return out


def _rows(p):
    return In(packed=p, order="row")


def _rows_or_buffer(p):
    """The input layer as a product operand: the texture, or (packed) its buffer copy."""
    return In(packed=p, order="row", buffer="either" if p else False)


# fused schedule, direct kernels (one output texel per fragment; any layout of W): the
# forward pass of weights kept unpacked (a paper-schedule net's probe) and the error
# backpropagation of a thin upper layer (four or fewer neurons: nothing to reuse)
FORWARD = _pair("fused_forward.frag", "forward", lambda p: {"W": In(), "A": _rows(p)},
                defines={"OUTPUT_LAYER": 0}, loop=lambda a: a.A.rows, hint=HINT)
FORWARD_OUTPUT = _pair("fused_forward.frag", "forward-output",
                       lambda p: {"W": In(), "A": _rows(p), "T": In(like="OUT")},
                       outputs=("OUT", "DELTA"), defines={"OUTPUT_LAYER": 1},
                       loop=lambda a: a.A.rows, hint=HINT)
FORWARD_SUM = _pair("fused_sum.frag", "forward-sum", lambda p: {"W": In(), "A": _rows(p)},
                    split=Split("i", length=lambda a: a.A.rows))
ACTIVATE_FUSED = _pair("fused_activate.frag", "activate-fused", lambda p: {"Z": In(like="OUT")},
                       defines={"OUTPUT_LAYER": 0})
ACTIVATE_OUTPUT = _pair("fused_activate.frag", "activate-output",
                        lambda p: {"Z": In(like="OUT"), "T": In(like="OUT")},
                        outputs=("OUT", "DELTA"), defines={"OUTPUT_LAYER": 1})
BACKPROP = _pair("fused_backprop.frag", "backprop",
                 lambda p: {"W": In(), "DUP": _rows(p), "A": In(like="OUT")},
                 split=Split("k", length=lambda a: a.W.cols))

# fused schedule, register-tiled products (shaders/ops/product/tile.glsl, SGEMM's micro-tile):
# TILE_ROWS (R) outputs per fragment through R render targets, four per texel, every fetched
# texel reused R or 4 times. The fused schedule keeps its weights column-packed
# (texel (j, q) = W[4q .. 4q+3][j]), the "A" operand of the forward product as it lies.
TILE_ROWS = (1, 4, 8)
# the weights as a product operand: the column-packed texture, or a buffer mirror of it (the
# same texels: W^T packed by rows), which a software rasteriser fetches faster
_WOP = In(buffer="either", packed=True)
_BLOCK = In(block=True)          # a uniform-block window (geometry.UBO_BLOCK_BYTES)


def _neurons(lay) -> int:
    """Neurons (columns of W) of a weight operand's layout: texture or buffer mirror."""
    return lay.rows if getattr(lay, "kind", ("",))[0] == "buffer" else lay.cols


def _prows(R, p=True):
    return {f"P{t}": In(packed=p, order="row") for t in range(R)}


def _tiled(file, name, inputs, rows=TILE_ROWS, packings=(True, False), **kw):
    """``{R: {packed: kernel}}`` (or ``{R: kernel}`` with ``packings=None``)."""
    out = {}
    for R in rows:
        per = {}
        for p in (packings or (False,)):
            defines = dict(kw.get("defines", {}), TILE_ROWS=R, PACKED=int(p))
            args = {k: v for k, v in kw.items() if k not in ("defines", "outputs")}
            if callable(args.get("split")):
                args["split"] = args["split"](R)
            outputs = kw.get("outputs", R)
            outputs = outputs(R) if callable(outputs) else outputs
            suffix = "" if packings is None else "-packed" if p else "-unpacked"
            per[p] = declare(f"algorithms/backprop/{file}", inputs=inputs(p, R),
                             outputs=outputs, defines=defines,
                             name=f"backprop/{name}{R}{suffix}", **args)
        out[R] = per if packings else per[False]
    return out


def _b_rows(a) -> int:
    """Rows of the forward product's B operand: A, or the recomputed layer over X (WL)."""
    return _neurons(a.WL) + 1 if hasattr(a, "WL") else a.A.rows


def _fwd_inputs(rc, last):
    def inputs(p, R):
        ins = ({"W": _WOP, "X": _rows_or_buffer(p), "WL": _WOP} if rc else
               {"W": _WOP, "A": _rows_or_buffer(p)})
        return dict(ins, T=In(like="OUT")) if last else ins
    return inputs


# rc: the layer multiplied is recomputed from the one below it (X, WL) instead of read
FORWARD_TILE = {rc: _tiled("tile_forward.frag", "forward-tile" + ("-rc" if rc else ""),
                           _fwd_inputs(rc, False),
                           defines={"ACTIVATE": 0, "OUTPUT_LAYER": 0, "RECOMPUTE": int(rc),
                                    "WUBO": 0},
                           split=Split("q", length=lambda a: quad_count(_b_rows(a))))
                for rc in (False, True)}
FORWARD_DIRECT = {(last, rc): _tiled("tile_forward.frag", "forward-direct"
                                     + ("-output" if last else "") + ("-rc" if rc else ""),
                                     _fwd_inputs(rc, last), rows=(1,),
                                     outputs=("OUT", "DELTA") if last else ("OUT",),
                                     defines={"ACTIVATE": 1, "OUTPUT_LAYER": int(last),
                                              "RECOMPUTE": int(rc), "WUBO": 0},
                                     loop=lambda a: quad_count(_b_rows(a)), hint=HINT)[1]
                  for last in (False, True) for rc in (False, True)}
ACTIVATE_TILE = {last: _tiled("tile_activate.frag", "activate-tile" + ("-output" if last else ""),
                              (lambda p, R: dict(_prows(R, p), T=In(like="OUT"))) if last else
                              (lambda p, R: _prows(R, p)),
                              outputs=("OUT", "DELTA") if last else ("OUT",),
                              defines={"OUTPUT_LAYER": int(last), "WINDOWS": 0})
                 for last in (False, True)}



# the forward product with the weights from uniform-block windows (geometry.ubo_forward_plan): one
# draw per window, every fragment of a block of target rows reading one address per K-quad;
# its gather pass maps the windows' rows back (uniforms hw: tile rows per window, rpt: target
# texture rows per tile row, geometry.ubo_targets)
FORWARD_UBO = _tiled("tile_forward.frag", "forward-ubo",
                     lambda p, R: {"WB": _BLOCK, "A": _rows(p)}, rows=(4, 8),
                     uniforms={"hw": "int", "rpt": "int"},
                     defines={"ACTIVATE": 0, "OUTPUT_LAYER": 0, "RECOMPUTE": 0, "WUBO": 1},
                     loop=lambda a: quad_count(a.A.rows), hint=HINT)
ACTIVATE_UBO = {last: _tiled("tile_activate.frag", "activate-ubo" + ("-output" if last else ""),
                             (lambda p, R: dict(_prows(R, p), T=In(like="OUT"))) if last else
                             (lambda p, R: _prows(R, p)), rows=(4, 8),
                             outputs=("OUT", "DELTA") if last else ("OUT",),
                             uniforms={"hw": "int", "rpt": "int"},
                             defines={"OUTPUT_LAYER": int(last), "WINDOWS": 1})
                for last in (False, True)}
BACKPROP_TILE = _tiled("tile_backprop.frag", "backprop-tile",
                       lambda p, R: {"W": _WOP, "DUP": _rows(p)}, rows=(4, 8),
                       split=Split("q", length=lambda a: quad_count(_neurons(a.W))))
DELTA_TILE = _tiled("tile_delta.frag", "delta-tile",
                    lambda p, R: dict(_prows(R, p), A=In(like="OUT")),
                    rows=(4, 8), outputs=("OUT",))
UPDATE_TILE = {rc: _tiled("tile_partial.frag", "update-tile" + ("-rc" if rc else ""),
                          (lambda p, R: {"D": _rows(p), "X": _rows_or_buffer(p), "WL": _WOP})
                          if rc else (lambda p, R: {"D": _rows(p), "A": _rows_or_buffer(p)}),
                          uniforms={"chunk": "int"}, loop=lambda a: a.uniforms["chunk"],
                          defines={"FUSED_DELTA": 0, "RECOMPUTE": int(rc)})
               for rc in (False, True)}
# the first weight layer's gradient when the layer above the hidden one has at most four
# neurons: its errors are made inside the partial sums instead of by a pass of their own
# (rc: and the hidden layer's activations too, from the inputs and the first weights)
UPDATE_FUSED_TILE = {rc: _tiled("tile_partial.frag", "update-fused-tile" + ("-rc" if rc else ""),
                                (lambda p, R: {"A": _rows_or_buffer(p), "DUP": _rows(p), "WU": In(),
                                               "WL": _WOP})
                                if rc else
                                (lambda p, R: {"A": _rows_or_buffer(p), "AH": _rows(p),
                                               "DUP": _rows(p), "WU": In()}),
                                uniforms={"chunk": "int"}, loop=lambda a: a.uniforms["chunk"],
                                defines={"FUSED_DELTA": 1, "RECOMPUTE": int(rc)})
                     for rc in (False, True)}
APPLY_TILE = _tiled("tile_apply.frag", "apply-tile", lambda p, R: dict(_prows(R), W=In(like="OUT")),
                    packings=None, outputs=("OUT",), uniforms={"eta": "float"},
                    split=lambda R: Split("s", length=lambda a: a.P0.rows // -(-a.W.cols // R)))


# fused schedule on uniform blocks, the recompute path (geometry.ubo_recompute): forward through
# both layers with the weights from uniform blocks (one address per loop step for the whole
# draw), the gradients of both layers in one pass per hidden unit, one apply pass per layer.
# Every block input is a window of geometry.UBO_BLOCK_BYTES (one program for every width).
_RECOMPUTE_DEFINES = {"IN_ROWS": 4, "OUTS": 1, "SIG_NEWTON": 0, "STRIDED": 1}
RECOMPUTE_FORWARD = _pair("rc_forward.frag", "rc-forward",
                          lambda p: {"X": _rows(p), "T": In(like="OUT"), "WB1": _BLOCK,
                                     "WB2": _BLOCK},
                          outputs=("OUT", "DELTA"), uniforms={"nh": "int", "nq": "int"},
                          defines=_RECOMPUTE_DEFINES, loop=lambda a: a.uniforms["nq"], hint=HINT)
RECOMPUTE_GRADIENT = _pair("rc_gradient.frag", "rc-gradient",
                           lambda p: {"X": _rows(p), "DO": _rows(p),
                                      "W1": In(packed=True, order="col"),
                                      "W2": In(packed=True, order="col")},
                           outputs=2, uniforms={"chunk": "int"}, defines=_RECOMPUTE_DEFINES,
                           loop=lambda a: a.uniforms["chunk"], hint=HINT)
RECOMPUTE_APPLY = {layer: declare("algorithms/backprop/rc_apply.frag",
                                  inputs={"W": In(like="OUT"), "P": In(packed=True, order="row")},
                                  uniforms={"eta": "float"}, defines={"LAYER": layer},
                                  loop=lambda a: a.P.rows,
                                  name=f"backprop/rc-apply{layer}", hint=HINT)
                   for layer in (1, 2)}


# paper schedule
FORWARD_ACCUMULATE = _pair("fwd_accum.frag", "forward-accumulate",
                           lambda p: {"W": In(), "A": _rows(p)}, uniforms={"i": "int"})
ACTIVATE = _pair("activate.frag", "activate", lambda p: {"Z": _rows(p)})
OUT_ERROR = _pair("out_error.frag", "output-error",
                  lambda p: {"Y": In(like="OUT"), "T": In(like="OUT")})
UPDATE_ACCUMULATE = _pair("update_accum.frag", "update-accumulate",
                          lambda p: {"D": _rows(p), "A": _rows(p)},
                          uniforms={"b": "int", "eta": "float"})
BACKPROP_ACCUMULATE = _pair("bp_accum.frag", "backprop-accumulate",
                            lambda p: {"W": In(), "DUP": _rows(p), "A": In(like="OUT")},
                            uniforms={"k": "int"})
# both
LOSS = _pair("loss.frag", "loss", lambda p: {"Y": _rows(p), "T": In(like="Y")},
             uniforms={"chunk": "int"},
             split=Split("q", length=lambda a: (a.Y.rows - 1) * a.uniforms["chunk"]))
GRID_VIEW = declare("algorithms/backprop/grid_view.frag", inputs=("Y",),
                    name="backprop/grid-view")
"""Reshape row 1 of a probe's output (MO + 1) x G^2 into a G x G unpacked image (display)."""
