"""Backpropagation training of multilayer perceptrons with render passes (Takizawa et al. 2009).

A network of layer sizes ``[MI, MH, ..., MO]`` with sigmoid units and thresholds as weight row 0
(``x0 = o0 = 1``) is trained by full-batch gradient descent on the summed squared error
``E = 1/2 sum_l |y_l - t_l|^2`` with learning rate ``eta``: ``W := W - eta * grad E``.
Weights, activations, errors and weight modifications live in RGBA32F textures for the whole run;
the host reads back only the loss (every ``loss_every`` steps) and the final weights.

On the device (N training vectors, layer widths L_m):

* activations ``A_m``: (L_m + 1) x N, row 0 the constant 1 (0 in the padding of a packed row),
* errors ``D_m``: same shape, row 0 zero,
* weights ``W_m``: (L_m + 1) x L_{m+1}, one value per texel (each weight-update fragment owns one
  weight); two buffers per layer (ping-pong),
* packed (default): four consecutive training vectors share one RGBA texel, so every forward and
  backward texture shrinks to a quarter and a weight-update pass takes four training vectors.

Two schedules on the same engine:

``"paper"``: the pass structure of the paper. Forward, per weight layer, one accumulating pass per
row of A (inputs plus threshold) and one pass applying f; error backpropagation, one pass per
neuron of the upper layer; weight update, one accumulating pass per training vector (unpacked) or
per four training vectors (packed) per weight layer. For three layers::

    forward  = (MI + 2) + (MH + 2)          backprop = MO
    update   = 2 N  (unpacked)  or  2 ceil(N / 4)  (packed)
    total    = MI + MH + MO + 2N + 4   or   MI + MH + MO + N/2 + 4

With N not divisible by 4 a packed update takes ceil(N/4) passes per weight layer (the last one
covers the remaining 1..3 vectors), so the packed total is ``MI + MH + MO + 2 ceil(N/4) + 4``.
Two passes the paper does not count are labelled apart: ``"output-error"`` (one pass computing
(y - t) y (1 - y)) and ``"apply"`` (one pass per weight layer adding the accumulated
modifications to the weights). For any number of layers the plan generalises (K weight
layers): forward sum_m (L_m + 2), backprop L_2 + ... + L_K, update K N or K ceil(N/4).

``"fused"``: the modern way on the same engine, loops inside the shaders, the products
register-tiled like SGEMM's 8x4 micro-tile (the step shared through
``shaders/ops/product/tile.glsl``): a fragment computes R (1, 4 or 8, within the device's
render targets; :func:`tile_rows`) rows x 4 columns through R render targets, reusing each
fetched texel R or 4 times. The weights live column-packed (4 consecutive inputs of a neuron
per texel: the operand layout of the forward product). Per weight layer:

* forward: one direct pass (fewer than 8 inputs, or R = 1: the loop computes and applies f),
  or the tiled product of W^T A into R targets and one pass gathering them and applying f
  (the output layer's gather also writes the output error, two render targets);
* error backpropagation: one direct pass (four or fewer upper neurons), or the tiled product
  of W D' into R targets and one pass gathering them times a (1 - a);
* update: one tiled pass of partial gradient sums over chunks of training vectors, written in
  the weights' layout, and one pass adding them and applying the step.

Two passes are saved where the data allow: the first hidden layer's errors feed only the first
gradient, so with at most four neurons above it they are made inside that gradient (no
backprop pass into it); and a first hidden layer over at most three inputs (the paper's
networks) is not stored at all: the output layer's forward product and both gradients make its
activations again from the inputs (one fetch per row, as reading it would cost). So a step takes
4K - 3 to 6K - 2 passes (K >= 2; 5 for the paper's 2-64-1, 10 for 64-256-10), independent
of N.

Where buffer textures exist, a software rasteriser reads the weights and the inputs through
buffer copies (refreshed after each update), which it fetches faster; a GPU reads the textures
themselves, the refresh costing it more than it saves (``HARDWARE`` holds the choices of a
hardware rasteriser, measured on an NVIDIA H200).

Loop budget: every kernel with a loop declares it (``loop=`` or a ``Split``), so a layer wider
than the device's loop cap (llvmpipe stops a fragment's loops after 65,535 iterations) is never
silently truncated. The tiled products, apply and loss loops are linear in their sum and are cut
by the engine over accumulating passes; a direct forward layer whose inputs exceed the cap runs
as the tiled product (R = 1) cut the same way, then the gather pass applying f.
:func:`fused_phases` gives the exact count.

Device profiles (``Device(profile=...)``, e.g. the paper's GeForce 7800 GTX): both schedules
adapt instead of failing. Accumulation goes through ``accumulate="add"``, which the engine turns
into ping-pong passes (draw into a temporary, combine, copy back: 1 + 2 per output) where the
device has no float32 blending; tiles use at most the profile's draw buffers; loops are cut at
its loop cap; arrays wrap at its texture size. :func:`paper_phases` and :func:`fused_phases`
take ``profile=`` (or ``device=``), so the plan equals the counter under every profile.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine import validation as val
from ..engine.errors import LoopBudgetError, TooLargeError
from ..engine.kernels import In, Split, declare
from ..engine.layout import DEFAULT_MAX_SIZE, Layout
from ..engine.plans import PassPlan, register_plan

SCHEDULES = ("paper", "fused")
PAPER_PHASES = ("forward", "backprop", "update")      # what the paper's formula counts
EXTRA_PHASES = ("output-error", "apply")              # passes the paper leaves out

# ---- kernels ---------------------------------------------------------------------------------
# Activations, errors and targets are (L + 1) x N matrices, packed (four training vectors per
# texel) or not; the kernels read them texel by texel, so each is declared for both packings
# (a call with the other packing is refused before any GL work). Weights and gradient sums are
# unpacked and read by element. Every size is a shape macro or a uniform: one program per
# kernel and layout kind serves every network.
_HINT = "use a smaller layer, or the paper schedule"


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
FWD = _pair("fused_forward.frag", "forward", lambda p: {"W": In(), "A": _rows(p)},
            defines={"OUTPUT_LAYER": 0}, loop=lambda a: a.A.rows, hint=_HINT)
FWD_OUT = _pair("fused_forward.frag", "forward-output",
                lambda p: {"W": In(), "A": _rows(p), "T": In(like="OUT")},
                outputs=("OUT", "DELTA"), defines={"OUTPUT_LAYER": 1},
                loop=lambda a: a.A.rows, hint=_HINT)
FWD_SUM = _pair("fused_sum.frag", "forward-sum", lambda p: {"W": In(), "A": _rows(p)},
                split=Split("i", length=lambda a: a.A.rows))
ACT = _pair("fused_activate.frag", "activate-fused", lambda p: {"Z": In(like="OUT")},
            defines={"OUTPUT_LAYER": 0})
ACT_OUT = _pair("fused_activate.frag", "activate-output",
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


def _neurons(lay) -> int:
    """Neurons (columns of W) of a weight operand's layout: texture or buffer mirror."""
    return lay.rows if getattr(lay, "kind", ("",))[0] == "buffer" else lay.cols


def _quads(n) -> int:
    return -(-int(n) // 4)


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
FWD_TILE = {rc: _tiled("tile_forward.frag", "forward-tile" + ("-rc" if rc else ""),
                       _fwd_inputs(rc, False),
                       defines={"ACTIVATE": 0, "OUTPUT_LAYER": 0, "RECOMPUTE": int(rc)},
                       split=Split("q", length=lambda a: _quads(_b_rows(a))))
            for rc in (False, True)}
FWD_DIRECT = {(last, rc): _tiled("tile_forward.frag", "forward-direct"
                                 + ("-output" if last else "") + ("-rc" if rc else ""),
                                 _fwd_inputs(rc, last), rows=(1,),
                                 outputs=("OUT", "DELTA") if last else ("OUT",),
                                 defines={"ACTIVATE": 1, "OUTPUT_LAYER": int(last),
                                          "RECOMPUTE": int(rc)},
                                 loop=lambda a: _quads(_b_rows(a)), hint=_HINT)[1]
              for last in (False, True) for rc in (False, True)}
TACT = {last: _tiled("tile_activate.frag", "activate-tile" + ("-output" if last else ""),
                     (lambda p, R: dict(_prows(R, p), T=In(like="OUT"))) if last else
                     (lambda p, R: _prows(R, p)),
                     outputs=("OUT", "DELTA") if last else ("OUT",),
                     defines={"OUTPUT_LAYER": int(last)})
        for last in (False, True)}
BP_TILE = _tiled("tile_backprop.frag", "backprop-tile",
                 lambda p, R: {"W": _WOP, "DUP": _rows(p)}, rows=(4, 8),
                 split=Split("q", length=lambda a: _quads(_neurons(a.W))))
TDELTA = _tiled("tile_delta.frag", "delta-tile", lambda p, R: dict(_prows(R, p), A=In(like="OUT")),
                rows=(4, 8), outputs=("OUT",))
PART_TILE = {rc: _tiled("tile_partial.frag", "update-tile" + ("-rc" if rc else ""),
                        (lambda p, R: {"D": _rows(p), "X": _rows_or_buffer(p), "WL": _WOP})
                        if rc else (lambda p, R: {"D": _rows(p), "A": _rows_or_buffer(p)}),
                        uniforms={"chunk": "int"}, loop=lambda a: a.uniforms["chunk"],
                        defines={"FUSED_DELTA": 0, "RECOMPUTE": int(rc)})
             for rc in (False, True)}
# the first weight layer's gradient when the layer above the hidden one has at most four
# neurons: its errors are made inside the partial sums instead of by a pass of their own
# (rc: and the hidden layer's activations too, from the inputs and the first weights)
PART_FUSED = {rc: _tiled("tile_partial.frag", "update-fused-tile" + ("-rc" if rc else ""),
                         (lambda p, R: {"A": _rows_or_buffer(p), "DUP": _rows(p), "WU": In(),
                                        "WL": _WOP})
                         if rc else
                         (lambda p, R: {"A": _rows_or_buffer(p), "AH": _rows(p), "DUP": _rows(p),
                                        "WU": In()}),
                         uniforms={"chunk": "int"}, loop=lambda a: a.uniforms["chunk"],
                         defines={"FUSED_DELTA": 1, "RECOMPUTE": int(rc)})
              for rc in (False, True)}
FUSE_MAX_UP = 4         # widest upper layer whose errors the first gradient makes itself
TAPPLY = _tiled("tile_apply.frag", "apply-tile", lambda p, R: dict(_prows(R), W=In(like="OUT")),
                packings=None, outputs=("OUT",), uniforms={"eta": "float"},
                split=lambda R: Split("s", length=lambda a: a.P0.rows // -(-a.W.cols // R)))


# paper schedule
FWD_ACCUM = _pair("fwd_accum.frag", "forward-accumulate", lambda p: {"W": In(), "A": _rows(p)},
                  uniforms={"i": "int"})
ACTIVATE = _pair("activate.frag", "activate", lambda p: {"Z": _rows(p)})
OUT_ERROR = _pair("out_error.frag", "output-error",
                  lambda p: {"Y": In(like="OUT"), "T": In(like="OUT")})
UPDATE_ACCUM = _pair("update_accum.frag", "update-accumulate",
                     lambda p: {"D": _rows(p), "A": _rows(p)},
                     uniforms={"b": "int", "eta": "float"})
BP_ACCUM = _pair("bp_accum.frag", "backprop-accumulate",
                 lambda p: {"W": In(), "DUP": _rows(p), "A": In(like="OUT")},
                 uniforms={"k": "int"})
# both
LOSS = _pair("loss.frag", "loss", lambda p: {"Y": _rows(p), "T": In(like="Y")},
             uniforms={"chunk": "int"},
             split=Split("q", length=lambda a: (a.Y.rows - 1) * a.uniforms["chunk"]))
GRID_VIEW = declare("algorithms/backprop/grid_view.frag", inputs=("Y",),
                    name="backprop/grid-view")
"""Reshape row 1 of a probe's output (MO + 1) x G^2 into a G x G unpacked image (display)."""


def update_chunk(grid_w: int, loop_cap: int | None) -> int:
    """Training-vector texels one partial-sum fragment of the fused update adds up."""
    chunk = max(8, math.isqrt(int(grid_w)))
    return chunk if loop_cap is None else max(1, min(chunk, int(loop_cap)))


def _grid_w(N, packed):
    return -(-int(N) // 4) if packed else int(N)


def _fits(dev, kernel, inputs, outputs, uniforms=None) -> bool:
    """Whether ``kernel`` runs in one pass within the device's loop cap."""
    try:
        dev.passes_for(kernel, inputs, outputs, uniforms)
    except LoopBudgetError:
        return False
    return True


def _slices(kernel, loop_cap, uniforms=None, **shapes) -> int:
    """Passes the engine cuts a split kernel into for arrays of these (rows, cols)."""
    lays = {k: SimpleNamespace(rows=r, cols=c) for k, (r, c) in shapes.items()}
    return max(1, len(kernel.slices(lays, uniforms or {}, {}, loop_cap)))


# ---- the limits a schedule adapts to -----------------------------------------------------------
def limits(device=None, profile=None, loop_cap=None, software=False,
           max_texture_size=None) -> SimpleNamespace:
    """What the schedules adapt to: ``loop_cap`` (None for none), ``max_outputs`` (render
    targets per pass), ``float_blending`` (accumulation by blending; without it every
    accumulating pass becomes ping-pong passes), ``max_texture_size`` (arrays wrap past it)
    and ``software`` (a software rasteriser, which runs a gather pass's branches masked: the
    fused forward gathers one render target per pass there). From a device (its profile and
    the real context), else from a profile (name, path or Profile; None: native),
    ``loop_cap``, ``software`` and ``max_texture_size``."""
    if device is not None:
        return SimpleNamespace(loop_cap=device.loop_cap, max_outputs=int(device.max_outputs),
                               float_blending=bool(device.float_blending),
                               max_texture_size=int(device.max_texture_size),
                               software=bool(device.is_software))
    from ..engine.profiles import load
    lim = load(profile).limits
    caps = [int(c) for c in (loop_cap, lim.get("loop_cap")) if c is not None]
    sizes = [int(c) for c in (max_texture_size, lim.get("max_texture_size")) if c is not None]
    return SimpleNamespace(loop_cap=min(caps) if caps else None,
                           max_outputs=min(8, lim.get("max_draw_buffers") or 8),
                           float_blending=lim.get("float32_blend") is not False,
                           max_texture_size=min(sizes) if sizes else DEFAULT_MAX_SIZE,
                           software=bool(software))


def _gather_passes(lim, R: int, n_out: int, out_layout, last: bool = False) -> int:
    """Passes gathering a forward product's R targets into layer ``out_layout``: one, or on a
    software rasteriser (a hidden layer, unwrapped) one per non-empty target, each over the
    rows that target holds (a plain copy with f instead of R masked fetches per texel)."""
    if not lim.software or R == 1 or last or out_layout.wrapped:
        return 1
    h = -(-int(n_out) // R)
    return -(-int(n_out) // h)


def _acc(lim, n_outputs: int) -> int:
    """Passes one accumulating pass draws: 1 by blending, else 1 + 2 per output (ping-pong:
    draw into temporaries, combine, copy back; ``Device.accumulate_passes``)."""
    return 1 if lim.float_blending else 1 + 2 * int(n_outputs)


def _split_passes(kernel, lim, n_outputs, uniforms=None, **shapes) -> int:
    """Passes of a split kernel: its first slice writes, the others accumulate."""
    n = _slices(kernel, lim.loop_cap, uniforms, **shapes)
    return 1 + (n - 1) * _acc(lim, n_outputs)


def tile_rows(max_outputs: int, rows: int) -> int:
    """Rows R of the register tile (render targets) for a product with ``rows`` output rows:
    the R in (1, 4, 8) within ``max_outputs`` that needs the fewest fetches per K-quad over all
    rows, ceil(rows / R) (R + 4), counting a quarter fetch per row computed (the rows past
    ``rows`` are wasted multiply-adds: 10 rows take R = 4, three tiles, not two of 8)."""
    best, cost = 1, 5.25 * int(rows)
    for R in (4, 8):
        if R <= max_outputs:
            t = -(-int(rows) // R)
            c = t * (R + 4) + 0.25 * t * R
            if c <= cost:
                best, cost = R, c
    return best


def _product_rows(max_outputs: int, rows: int, quads: int, direct: float) -> int:
    """R for a product with ``rows`` output rows over ``quads`` K-quads, by fetches per
    column texel, counting a fragment as FRAGMENT_COST fetches: the direct kernel (R = 1, no
    gather pass) costs ``direct`` per row and K-quad; a tile of R rows ceil(rows / R) quads
    (R + 4 + R / 4: a quarter fetch per row computed) and the gather pass R + 1 per row (it
    reads every target where a rasteriser runs its branches masked)."""
    F = FRAGMENT_COST
    best, cost = 1, rows * (direct * quads + F)
    for R in (4, 8):
        if R <= max_outputs:
            c = -(-rows // R) * (quads * (1.25 * R + 4) + F) + rows * (R + 1 + F)
            if c < cost:
                best, cost = R, c
    return best


FRAGMENT_COST = 4


def _fwd_rows(lim, n_in: int, n_out: int) -> int:
    """Tile rows of the forward product of a layer with ``n_in`` inputs (threshold included):
    1 for the direct kernel (a W texel and four A texels per K-quad)."""
    return _product_rows(lim.max_outputs, n_out, _quads(n_in), 5)


# What a hardware rasteriser (``lim.software`` False) takes, measured with the fused step on an
# NVIDIA H200 (steady state, ms/step): making the first hidden layer and its errors inside their
# consumers pays there too (2-64-1 N=1,024: 7 passes 0.11-0.12, 5 passes 0.09-0.11; 2-1024-1
# N=16,384: 3.9 vs 1.5), but the buffer mirrors of the weights do not: refreshing them costs
# more than the buffer fetches save (2-64-1: 0.12-0.13 with, 0.09-0.11 without; 64-256-10
# N=4,096: 1.09 vs 0.99; 2-1024-1: 1.57 vs 1.53), so the products read the textures there.
# A software rasteriser (llvmpipe) fetches from buffers faster and takes all three.
HARDWARE = {"fuse_delta": True, "recompute": True, "buffers": False}


def _hw(lim, key) -> bool:
    return lim is None or lim.software or HARDWARE[key]


def _fused_delta(L, lim=None) -> bool:
    """Whether the fused schedule makes the first hidden layer's errors inside the first
    layer's gradient (no backprop pass into it): they feed nothing else, and the layer above
    has at most FUSE_MAX_UP neurons (one K-quad)."""
    return len(L) > 2 and L[2] <= FUSE_MAX_UP and _hw(lim, "fuse_delta")


def _recompute(L, lim=None) -> bool:
    """Whether the fused schedule never stores the first hidden layer: over at most three
    inputs (one K-quad with the threshold), each consumer (the next forward product, the
    gradients) makes it again from the inputs and the first weights, one fetch per row as
    reading it would cost; with its errors already made inside the first gradient
    (:func:`_fused_delta`), that saves the passes writing both."""
    return _fused_delta(L, lim) and L[0] + 1 <= 4 and _hw(lim, "recompute")


def _buffers(dev) -> bool:
    """Whether the products read the weights and inputs through buffer textures (mirrors)."""
    return bool(dev.buffer_textures) and _hw(limits(device=dev), "buffers")


def _bp_rows(lim, n_up: int, n_low: int) -> int:
    """Tile rows of the error backpropagation from ``n_up`` neurons to ``n_low`` rows (1: the
    direct kernel, a W element and a Dup texel per upper neuron)."""
    return _product_rows(lim.max_outputs, n_low, _quads(n_up), 8)


# ---- pass plans ----------------------------------------------------------------------------
def _sizes_arg(sizes=None, MI=None, MH=None, MO=None):
    if sizes is None:
        hidden = MH if isinstance(MH, (tuple, list)) else (MH,)
        sizes = (MI, *hidden, MO)
    return [int(s) for s in sizes]


def paper_phases(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None,
                 loop_cap=None, profile=None, device=None, software=False,
                 max_texture_size=None) -> dict:
    """Expected passes per phase label for one learning step of the paper schedule.

    Its kernels have no loops, so the loop cap changes nothing; without float blending
    (``profile``/``device``: e.g. the GeForce 7800 GTX) every accumulating pass is drawn as
    1 + 2 ping-pong passes, so forward, backprop and update triple (less their first pass)."""
    L = _sizes_arg(sizes, MI, MH, MO)
    K = len(L) - 1
    lim = limits(device, profile, loop_cap, software, max_texture_size)
    acc = _acc(lim, 1)
    per_layer = _grid_w(N, packed)
    return {"forward": sum(1 + L[m] * acc + 1 for m in range(K)),
            "backprop": sum(1 + (L[m + 1] - 1) * acc for m in range(1, K)),
            "update": K * (1 + (per_layer - 1) * acc),
            "output-error": 1,
            "apply": K}


def fused_phases(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None,
                 loop_cap=None, profile=None, device=None, software=False,
                 max_texture_size=None) -> dict:
    """Expected passes per phase label for one learning step of the fused schedule.

    Per weight layer: forward 1 pass (a thin layer: the direct kernel computes and applies f)
    or 2 (the register-tiled product into R render targets, then a pass gathering them and
    applying f); backprop 1 (direct) or 2 (tiled product, then the pass multiplying by
    a (1 - a)); update 1 (tiled partial sums) and apply 1. A loop longer than the device's loop
    cap (``loop_cap``, or the profile's / device's) adds the passes the engine cuts it into;
    each of them is 1 + 2R ping-pong passes where the device has no float blending. Limits
    come from ``device``, else from ``profile`` and ``loop_cap``.
    """
    L = _sizes_arg(sizes, MI, MH, MO)
    K = len(L) - 1
    lim = limits(device, profile, loop_cap, software, max_texture_size)
    cap = lim.loop_cap
    gw = _grid_w(N, packed)
    nchunk = -(-gw // update_chunk(gw, cap))
    fwd = bwd = app = 0
    rc = _recompute(L, lim)
    for m in range(K):
        R = _fwd_rows(lim, L[m] + 1, L[m + 1])
        if rc and m == 0:
            pass                             # the first hidden layer is never stored
        elif R == 1 and (cap is None or _quads(L[m] + 1) <= cap):
            fwd += 1
        else:
            out = (_squarish_layout(lim.max_texture_size, L[m + 1] + 1, N, packed) if m == K - 1
                   else Layout(L[m + 1] + 1, int(N), packed, "row", lim.max_texture_size))
            fwd += _split_passes(FWD_TILE[False][R][True], lim, R, A=(L[m] + 1, N)) + \
                _gather_passes(lim, R, L[m + 1], out, m == K - 1)
        Rg = tile_rows(lim.max_outputs, L[m + 1])
        app += _split_passes(TAPPLY[Rg], lim, 1, W=(L[m] + 1, L[m + 1]),
                             P0=(nchunk * -(-L[m + 1] // Rg), L[m] + 1))
    for m in range(2 if _fused_delta(L, lim) else 1, K):
        R = _bp_rows(lim, L[m + 1], L[m] + 1)
        if R == 1:
            bwd += _split_passes(BACKPROP[True], lim, 1, W=(L[m] + 1, L[m + 1]))
        else:
            bwd += _split_passes(BP_TILE[R][True], lim, R, W=(L[m] + 1, L[m + 1])) + 1
    out = {"forward": fwd, "backprop": bwd, "update": K, "apply": app}
    return {k: v for k, v in out.items() if v}


def step_flops(sizes) -> int:
    """Floating-point operations of the products in one learning step per training vector
    (2 per multiply-add): forward (L_m + 1) L_{m+1}, error backpropagation L_m L_{m+1}
    (m >= 1) and gradient (L_m + 1) L_{m+1} per weight layer."""
    L = _sizes_arg(sizes)
    f = 0
    for m in range(len(L) - 1):
        f += 2 * 2 * (L[m] + 1) * L[m + 1]
        if m > 0:
            f += 2 * L[m] * L[m + 1]
    return f


def paper_formula_total(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None) -> int:
    """The paper's own count (forward + backprop + update) for one step."""
    ph = paper_phases(sizes, N, packed, MI, MH, MO)
    return sum(ph[p] for p in PAPER_PHASES)


PLAN_PAPER_UNPACKED = register_plan(PassPlan(
    name="backprop/paper-unpacked", formula="MI + MH + MO + 2N + 4",
    phases=lambda packed=False, **kw: paper_phases(packed=False, **kw),
    notes="forward MI+MH+4, backprop MO, update 2N; plus output-error 1 and apply 2 "
          "(not counted by the paper)",
    params=("sizes", "N", "loop_cap", "profile", "software", "max_texture_size")))
PLAN_PAPER_PACKED = register_plan(PassPlan(
    name="backprop/paper-packed", formula="MI + MH + MO + N/2 + 4",
    phases=lambda packed=True, **kw: paper_phases(packed=True, **kw),
    notes="update takes ceil(N/4) passes per weight layer (N/2 when 4 divides N); plus "
          "output-error 1 and apply 2 (not counted by the paper)",
    params=("sizes", "N", "loop_cap", "profile", "software", "max_texture_size")))
PLAN_FUSED = register_plan(PassPlan(
    name="backprop/fused", formula="4K - 3 to 6K - 2 (5 to 10 for three layers)",
    phases=lambda **kw: fused_phases(**kw),
    notes="per weight layer: forward 1 (direct) or 2 (register-tiled product + gather/f), "
          "backprop 1 or 2 (tiled product + a(1-a)), update 1 (tiled partial sums), apply 1; "
          "no backprop pass into the first hidden layer under an upper layer of <= 4 neurons, "
          "no forward pass for a first hidden layer over <= 3 inputs (both made inside the "
          "consumers); independent of N while every loop fits the loop cap (loop_cap=, "
          "profile=: split loops add passes, ping-pong accumulation without float blending)",
    params=("sizes", "N", "packed", "loop_cap", "profile", "software", "max_texture_size")))


def plan_for(schedule: str, packed: bool) -> PassPlan:
    if schedule == "fused":
        return PLAN_FUSED
    return PLAN_PAPER_PACKED if packed else PLAN_PAPER_UNPACKED


# ---- validation --------------------------------------------------------------------------------
def _check_sizes(sizes, name="sizes"):
    try:
        sizes = list(sizes)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of layer widths, got {sizes!r}") from None
    if len(sizes) < 2:
        raise ValueError(f"{name} needs at least an input and an output layer, got {sizes!r}")
    return [val.integer(s, f"{name}[{i}]", lo=1) for i, s in enumerate(sizes)]


def _check_targets(t, n, name="T"):
    a = val.array(t, name, ndim=(1, 2))
    if a.ndim == 1:
        a = a[:, None]
    if a.shape[0] != n:
        raise ValueError(f"{name}: has {a.shape[0]} rows but X has {n}")
    if a.min() < 0.0 or a.max() > 1.0:
        raise ValueError(f"{name}: targets must lie in [0, 1] for sigmoid outputs "
                         f"(got min {a.min():g}, max {a.max():g})")
    return a


def _check_weights(weights, name="weights", sizes=None, n_features=None):
    """A list of K (L_m + 1, L_{m+1}) real matrices that chain (threshold row 0)."""
    if isinstance(weights, np.ndarray) or not isinstance(weights, (list, tuple)):
        raise TypeError(f"{name} must be a list of weight matrices, got "
                        f"{type(weights).__name__}")
    if len(weights) < 1:
        raise ValueError(f"{name} must hold at least one weight matrix")
    out = [val.array(w, f"{name}[{m}]").astype(np.float64) for m, w in enumerate(weights)]
    for m, w in enumerate(out):
        if w.shape[0] < 2:
            raise ValueError(f"{name}[{m}] has shape {w.shape}: it needs a threshold row and at "
                             "least one input row")
        if m + 1 < len(out) and out[m + 1].shape[0] != w.shape[1] + 1:
            raise ValueError(f"{name} do not chain: {name}[{m}] has {w.shape[1]} outputs, so "
                             f"{name}[{m + 1}] needs {w.shape[1] + 1} rows (threshold + inputs), "
                             f"got shape {out[m + 1].shape}")
    if sizes is not None:
        if len(out) != len(sizes) - 1:
            raise ValueError(f"{name}: expected {len(sizes) - 1} matrices, got {len(out)}")
        for m, w in enumerate(out):
            if w.shape != (sizes[m] + 1, sizes[m + 1]):
                raise ValueError(f"{name}[{m}]: expected shape {(sizes[m] + 1, sizes[m + 1])}, "
                                 f"got {w.shape}")
    if n_features is not None and out[0].shape[0] != n_features + 1:
        raise ValueError(f"X has {n_features} features but {name}[0] expects "
                         f"{out[0].shape[0] - 1} (its {out[0].shape[0]} rows are the threshold "
                         "and one per input)")
    return out


def init_weights(sizes, seed=0) -> list:
    """Seeded initial weights: uniform in +-sqrt(6 / (fan_in + 1 + fan_out)), thresholds too."""
    sizes = _check_sizes(sizes)
    rng = np.random.default_rng(seed)
    out = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        r = math.sqrt(6.0 / (a + 1 + b))
        out.append(rng.uniform(-r, r, size=(a + 1, b)))
    return out


# ---- sizes: every device array of a network checked from the shapes, before any allocation ------
def net_arrays(lim, sizes, N: int, packed: bool = True, schedule: str = "paper",
               inference: bool = False) -> list:
    """The device arrays a :class:`BackpropNet` of layer widths ``sizes`` over ``N`` training
    vectors makes (``inference``: only those of a forward pass, :func:`device_forward`), as
    ``(description, (rows, cols, packed, order, max_size), layers)`` with ``layers`` the
    indices into ``sizes`` the array's size depends on (-1: N). Shapes only: nothing is
    allocated, no Layout is built."""
    L = [int(v) for v in sizes]
    K = len(L) - 1
    p = bool(packed)
    mx = int(lim.max_texture_size)
    out = [(f"activations of layer {m}", (L[m] + 1, N, p, "row", mx), (m, -1))
           for m in range(K + 1)]
    wl = (False, "row") if schedule == "paper" and not inference else (True, "col")
    out += [(f"weights of layer {m + 1}", (L[m] + 1, L[m + 1], *wl, mx), (m, m + 1))
            for m in range(K)]
    if inference:
        return out
    if schedule == "fused":
        # the output layer (and its errors, targets) wrapped into a squarer texture
        lay = _squarish_layout(mx, L[K] + 1, N, p)
        out[K] = (f"activations of layer {K}", (L[K] + 1, N, p, "row", lay.max_size), (K, -1))
        gw = _grid_w(N, p)
        nchunk = -(-gw // update_chunk(gw, lim.loop_cap))
        for m in range(K):
            R = tile_rows(lim.max_outputs, L[m + 1])
            lay = _squarish_layout(mx, nchunk * -(-L[m + 1] // R), L[m] + 1)
            out.append((f"partial gradients of layer {m + 1}",
                        (lay.rows, lay.cols, True, "row", lay.max_size), (m, m + 1, -1)))
    else:
        out += [(f"weighted sums of layer {m}", (L[m], N, p, "row", mx), (m, -1))
                for m in range(1, K + 1)]
    return out


def check_net_fits(lim, sizes, N: int, packed: bool = True, schedule: str = "paper",
                   names=None, inference: bool = False) -> None:
    """Refuse, from the shapes alone (before anything is allocated on the host or the device),
    a network whose device arrays (:func:`net_arrays`) do not fit one texture of the device
    (``lim``: :func:`limits`). ValueError naming the arguments that set the sizes: ``names``
    maps a layer index (0 .. K) or -1 (the number of training vectors) to the argument's name
    (default ``sizes[m]`` and ``X``)."""
    names = names or {}
    for what, (rows, cols, pk, order, mx), dims in net_arrays(lim, sizes, N, packed, schedule,
                                                             inference):
        try:
            Layout(rows, cols, pk, order, mx)
        except TooLargeError:
            args = [names.get(d, f"sizes[{d}] = {sizes[d]}" if d >= 0 else f"X ({N} samples)")
                    for d in dims]
            texels = rows * -(-cols // 4) if pk else rows * cols
            big = max(dims, key=lambda d: (N if d < 0 else int(sizes[d])))
            raise ValueError(
                f"{args[dims.index(big)]}: too large for this device: the {what} "
                f"({rows} x {cols}{', 4 per texel' if pk else ', one per texel'}: {texels} "
                f"texels, set by {' and '.join(args)}) exceed one texture of "
                f"{lim.max_texture_size} x {lim.max_texture_size} = "
                f"{lim.max_texture_size ** 2} texels (the device's max_texture_size)") from None



# ---- the float64 numpy reference of the same equations ------------------------------------------
def _sigmoid(x):
    with np.errstate(over="ignore"):        # exp(-x) = inf for x << 0: sigmoid 0, as wanted
        return 1.0 / (1.0 + np.exp(-x))


def numpy_forward(weights, X):
    """Activations of every layer (without the constant row) for inputs X (N x MI)."""
    acts = [np.asarray(X, dtype=np.float64)]
    for W in weights:
        acts.append(_sigmoid(W[0] + acts[-1] @ W[1:]))
    return acts


def numpy_step(weights, X, T, lr):
    """One full-batch learning step in float64; returns (new weights, loss before the step)."""
    acts = numpy_forward(weights, X)
    y = acts[-1]
    loss = 0.5 * float(np.sum((y - T) ** 2))
    d = (y - T) * y * (1.0 - y)
    new = [None] * len(weights)
    for m in range(len(weights) - 1, -1, -1):
        a = acts[m]
        grad = np.vstack([d.sum(axis=0, keepdims=True), a.T @ d])
        if m > 0:
            d = (d @ weights[m][1:].T) * a * (1.0 - a)
        new[m] = weights[m] - lr * grad
    return new, loss


class NumpyMLP:
    """The same algorithm on the CPU (float64 or float32 numpy), for the reports' CPU column."""

    def __init__(self, sizes, X, T, lr, weights=None, seed=0, dtype=np.float64):
        self.sizes = _check_sizes(sizes)
        self.dtype = dtype
        self.X = np.asarray(X, dtype=dtype)
        self.T = np.asarray(T, dtype=dtype)
        self.lr = dtype(lr)
        ws = weights if weights is not None else init_weights(self.sizes, seed)
        self.weights = [np.asarray(w, dtype=dtype).copy() for w in ws]

    def step(self, n=1):
        for _ in range(n):
            self.weights, self.last_loss = numpy_step(self.weights, self.X, self.T, self.lr)


# ---- passes shared by the trainer, the probe and device_forward ------------------------------
def _col_packed(W) -> bool:
    """Weights in the fused schedule's operand layout (column-packed, or its buffer mirror)."""
    lay = W.layout
    return lay.kind[0] == "buffer" or (lay.packed and lay.order == "col")


def _wshape(W) -> tuple:
    """(inputs + 1, neurons) of weights W: a texture or its buffer mirror."""
    lay = W.layout
    return (lay.cols, lay.rows) if lay.kind[0] == "buffer" else tuple(W.shape)


class _Mirror:
    """A buffer copy of a column-packed weight texture (same texels in the same order),
    refreshed on the device after each update: the products' weight operand where buffer
    textures exist (``Device.buffer_textures``)."""

    def __init__(self, dev, W):
        from ..engine.glraw import BufferArray
        from ..engine.layout import BufferLayout
        n_in, n_out = W.shape
        self.W = W
        self.buf = BufferArray(dev, BufferLayout(n_out, n_in),
                               dev.ctx.buffer(reserve=W.layout.nbytes))
        self.refresh()

    def refresh(self):
        self.W.texture.read_into(self.buf.buffer, alignment=4)

    @staticmethod
    def usable(dev, W) -> bool:
        return _buffers(dev) and W.layout.n_texels <= _max_buffer(dev)


def _max_buffer(dev) -> int:
    from ..engine.glraw import max_texture_buffer_size
    return max_texture_buffer_size(dev)



def _squarish(dev, rows: int, cols: int, packed: bool = True):
    """Layout of a temporary (rows x cols): as usual, or wrapped into a squarer texture when
    the usual one would be a thin strip (a 1-texel-wide column of partial sums leaves most
    lanes of a rasteriser's pixel blocks idle)."""
    return _squarish_layout(dev.max_texture_size, rows, cols, packed)


def _squarish_layout(max_size: int, rows: int, cols: int, packed: bool = True) -> Layout:
    lay = Layout(int(rows), int(cols), packed, "row", max_size)
    n = lay.n_texels
    if min(lay.tex_size) >= 16 or n <= 4096:
        return lay
    side = min(max_size, max(64, 1 << math.ceil(math.log2(math.sqrt(n)))))
    return Layout(int(rows), int(cols), packed, "row", side)


def _temps(dev, R, shape, packed, keep):
    out = [dev.alloc(dev.layout(shape, packed, "row"), shape) for _ in range(R)]
    if keep is not None:
        keep.extend(out)
    return out


def _forward_passes(dev, packed, W, A, out, T=None, D=None, keep=None, below=None) -> list:
    """Prepared passes computing layer ``out`` = f(W^T A) (and, with targets T, the output
    error D).

    Weights column-packed (the fused schedule): a thin layer (R = 1, :func:`_fwd_rows`) runs
    the direct kernel, one pass; otherwise the register-tiled product writes Z into R render
    targets (its K-quad loop cut over accumulating passes if it exceeds the loop cap) and one
    pass gathers them and applies f. ``below`` = (X, WL): A is not stored but made from X and
    WL (:func:`_recompute`; A is then None). Other weights (a paper-schedule net's probe): one
    fused pass, or the blended partial sums of FWD_SUM and one activation pass past the cap."""
    last = T is not None
    outs = {"OUT": out, "DELTA": D} if last else out
    extra = {"T": T} if last else {}
    if not _col_packed(W):
        ins = {"W": W, "A": A}
        k1, k2 = (FWD_OUT[packed], ACT_OUT[packed]) if last else (FWD[packed], ACT[packed])
        if _fits(dev, k1, dict(ins, **extra), outs):
            return [dev.prepare(k1, outs, inputs=dict(ins, **extra))]
        Z = dev.alloc(out.layout)
        if keep is not None:
            keep.append(Z)
        return [dev.prepare(FWD_SUM[packed], Z, inputs=ins),
                dev.prepare(k2, outs, inputs=dict(extra, Z=Z))]
    lim = limits(device=dev)
    n_in, n_out = _wshape(W)
    R = _fwd_rows(lim, n_in, n_out)
    rc = below is not None
    ins = {"W": W, "X": below[0], "WL": below[1]} if rc else {"W": W, "A": A}
    n = out.shape[1]                     # training vectors
    if R == 1 and _fits(dev, FWD_DIRECT[last, rc][packed], dict(ins, **extra), outs):
        return [dev.prepare(FWD_DIRECT[last, rc][packed], outs, inputs=dict(ins, **extra))]
    Z = _temps(dev, R, (-(-n_out // R), n), packed, keep)
    first = dev.prepare(FWD_TILE[rc][R][packed], Z, inputs=ins)
    gathers = _gather_passes(lim, R, n_out, out.layout, last)
    if gathers > 1:         # one pass per target, over the rows it holds (row 0 in the first)
        h = -(-n_out // R)
        ps = [first]
        for t in range(gathers):
            y0, y1 = (0 if t == 0 else 1 + t * h), min(1 + (t + 1) * h, n_out + 1)
            ps.append(dev.prepare(TACT[last][1][packed], outs, inputs=dict(extra, P0=Z[t]),
                                  rect=(0, y0, out.layout.tex_w, y1 - y0)))
        return ps
    return [first,
            dev.prepare(TACT[last][R][packed], outs,
                        inputs=dict(extra, **{f"P{t}": z for t, z in enumerate(Z)}))]


def _backprop_passes(dev, packed, W, DUP, A, out, keep=None, Wop=None) -> list:
    """Prepared passes computing the errors ``out`` of the layer below W: the direct kernel
    for four or fewer upper neurons, else the register-tiled product into R render targets
    and one pass gathering them times a (1 - a). ``Wop``: W's buffer mirror for the tiled
    product (default W)."""
    lim = limits(device=dev)
    n_low, n_up = _wshape(W)
    R = _bp_rows(lim, n_up, n_low)
    if R == 1:
        return [dev.prepare(BACKPROP[packed], out, inputs={"W": W, "DUP": DUP, "A": A})]
    S = _temps(dev, R, (-(-n_low // R), A.shape[1]), packed, keep)
    return [dev.prepare(BP_TILE[R][packed], S, inputs={"W": W if Wop is None else Wop,
                                                       "DUP": DUP}),
            dev.prepare(TDELTA[R][packed], out,
                        inputs=dict(A=A, **{f"P{t}": x for t, x in enumerate(S)}))]


# ---- the device trainer ------------------------------------------------------------------------
class BackpropNet:
    """A network and its training set on the device, trained step by step with render passes.

    Parameters
    ----------
    device : :class:`shadergpgpu.Device`.
    sizes : layer widths [MI, MH, ..., MO].
    X : (N, MI) inputs; T : (N, MO) targets in [0, 1].
    weights : list of (L_m + 1, L_{m+1}) matrices (threshold row 0); default ``init_weights``.
    lr : learning rate eta (of the summed error). schedule : "paper" or "fused".
    packed : four training vectors per texel (True) or one (False).
    """

    def __init__(self, device, sizes, X, T, weights=None, lr=0.5, schedule="paper",
                 packed=True, seed=0):
        self.dev = dev = val.pick_device(device, [])
        self.sizes = L = _check_sizes(sizes)
        self.schedule = val.choice(schedule, "schedule", SCHEDULES)
        self.packed = p = bool(packed)
        self.lr = val.real(lr, "lr", lo=0.0, closed="neither")
        X = val.array(X, "X").astype(np.float64)
        if X.shape[1] != L[0]:
            raise ValueError(f"X: expected {L[0]} columns (sizes[0]), got shape {X.shape}")
        T = _check_targets(T, X.shape[0], "T")
        if T.shape[1] != L[-1]:
            raise ValueError(f"T: expected {L[-1]} output columns, got {T.shape[1]}")
        self.N = N = X.shape[0]
        self.K = K = len(L) - 1
        # every device array checked from the shapes before anything is made (an impossible
        # layer width is refused at once, not after initialising gigabytes of weights)
        check_net_fits(limits(device=dev), L, N, p, self.schedule)
        if weights is None:
            weights = init_weights(L, seed)
        weights = _check_weights(weights, "weights", sizes=L)
        self._arrays = []
        self.A = [self._array(np.vstack([np.ones((1, N)), X.T]))]
        self.A += [self._empty((L[m] + 1, N)) for m in range(1, K)]
        self.D = [None] + [self._empty((L[m] + 1, N)) for m in range(1, K)]
        # the output layer: a thin strip of texels (few outputs, many training vectors) is
        # wrapped into a squarer texture for the fused schedule, whose kernels loop per fragment
        out_lay = (_squarish(dev, L[K] + 1, N, p) if self.schedule == "fused"
                   else dev.layout((L[K] + 1, N), p, "row"))
        self.A.append(self._track(dev.alloc(out_lay)))
        self.D.append(self._track(dev.alloc(out_lay)))
        self.T = self._track(dev.alloc(out_lay).set(np.vstack([np.zeros((1, N)), T.T])))
        # the paper's layout: one weight per texel; the fused schedule's: column-packed (the
        # operand layout of its register-tiled products)
        wl = dict(packed=False) if self.schedule == "paper" else dict(packed=True, order="col")
        self.W = [[self._array(w, **wl) for w in weights],
                  [self._empty(np.shape(w), **wl) for w in weights]]
        self.parity = 0
        self.steps_done = 0
        gw = self.A[0].layout.grid_w            # training-vector texels per row
        self.grid_w = gw
        chunk = max(16, math.isqrt(gw))
        self.LOSS = self._empty((1, -(-gw // chunk)), packed=False)
        self._loss_pass = dev.prepare(LOSS[p], self.LOSS, inputs={"Y": self.A[K], "T": self.T},
                                      uniforms={"chunk": chunk})
        if self.schedule == "paper":
            self._build_paper()
        else:
            self._build_fused()

    # -- arrays
    def _track(self, a):
        self._arrays.append(a)
        return a

    def _array(self, x, packed=None, order="row"):
        a = self.dev.array(x, packed=self.packed if packed is None else packed, order=order)
        self._arrays.append(a)
        return a

    def _empty(self, shape, packed=None, order="row"):
        a = self.dev.empty(shape, packed=self.packed if packed is None else packed, order=order)
        self._arrays.append(a)
        return a

    # -- schedules: a list of (phase, [(pass, uniform name or None, values)]) per parity
    def _build_paper(self):
        dev, L, K, A, D, p = self.dev, self.sizes, self.K, self.A, self.D, self.packed
        self.Z = [None] + [self._empty((L[m], self.N)) for m in range(1, K + 1)]
        self.dW = [self._empty((L[m] + 1, L[m + 1]), packed=False) for m in range(K)]
        self._steps = []
        for par in (0, 1):
            W, Wn = self.W[par], self.W[1 - par]
            ops = []
            for m in range(K):
                io = {"W": W[m], "A": A[m]}
                first = dev.prepare(FWD_ACCUM[p], self.Z[m + 1], inputs=io, uniforms={"i": 0})
                rest = dev.prepare(FWD_ACCUM[p], self.Z[m + 1], inputs=io, accumulate="add")
                act = dev.prepare(ACTIVATE[p], A[m + 1], inputs={"Z": self.Z[m + 1]})
                ops.append(("forward", [(first, None, None), (rest, "i", range(1, L[m] + 1)),
                                        (act, None, None)]))
            oe = dev.prepare(OUT_ERROR[p], D[K], inputs={"Y": A[K], "T": self.T})
            ops.append(("output-error", [(oe, None, None)]))
            for m in range(K - 1, -1, -1):
                io = {"D": D[m + 1], "A": A[m]}
                u = {"eta": self.lr}
                first = dev.prepare(UPDATE_ACCUM[p], self.dW[m], inputs=io,
                                    uniforms=dict(u, b=0))
                rest = dev.prepare(UPDATE_ACCUM[p], self.dW[m], inputs=io, uniforms=u,
                                   accumulate="add")
                ops.append(("update", [(first, None, None),
                                       (rest, "b", range(1, self.grid_w))]))
                if m > 0:
                    io = {"W": W[m], "DUP": D[m + 1], "A": A[m]}
                    first = dev.prepare(BP_ACCUM[p], D[m], inputs=io, uniforms={"k": 0})
                    rest = dev.prepare(BP_ACCUM[p], D[m], inputs=io, accumulate="add")
                    ops.append(("backprop", [(first, None, None),
                                             (rest, "k", range(1, L[m + 1]))]))
            from ..engine.builtin import SAXPY
            apply = [(dev.prepare(SAXPY, Wn[m], inputs={"X": self.dW[m], "Y": W[m]},
                                  uniforms={"alpha": 1.0}), None, None) for m in range(K)]
            ops.append(("apply", apply))
            self._steps.append(ops)

    def _build_fused(self):
        dev, L, K, A, D, p = self.dev, self.sizes, self.K, self.A, self.D, self.packed
        lim = limits(device=dev)
        chunk = update_chunk(self.grid_w, dev.loop_cap)
        nchunk = -(-self.grid_w // chunk)
        self.P = []
        for m in range(K):
            R = tile_rows(lim.max_outputs, L[m + 1])
            lay = _squarish(dev, nchunk * -(-L[m + 1] // R), L[m] + 1)
            self.P.append([dev.alloc(lay) for _ in range(R)])
            self._arrays += self.P[-1]
        # buffer mirrors of the weights for the products (refreshed after each update)
        self._mirrors = [[_Mirror(dev, w) if _Mirror.usable(dev, w) else None for w in ws]
                         for ws in self.W]
        for ms in self._mirrors:
            self._arrays += [mi.buf for mi in ms if mi is not None]
        # the inputs never change: a buffer copy of them (packed) for the products
        A0 = A[0]
        if p and _buffers(dev) and A[0].layout.n_texels <= _max_buffer(dev):
            from ..engine.glraw import BufferArray
            from ..engine.layout import BufferLayout
            A0 = BufferArray.from_host(dev, BufferLayout(*A[0].shape), A[0].get())
            self._arrays.append(A0)
        self._steps = []
        for par in (0, 1):
            W, Wn = self.W[par], self.W[1 - par]
            Wop = [w if mi is None else mi.buf for w, mi in zip(W, self._mirrors[par])]
            fwd = []
            rc = _recompute(L, lim)
            for m in range(1 if rc else 0, K):
                last = m == K - 1
                below = (A0, Wop[0]) if rc and m == 1 else None
                ps = _forward_passes(dev, p, Wop[m], A0 if m == 0 else A[m], A[m + 1],
                                     T=self.T if last else None, D=D[m + 1] if last else None,
                                     keep=self._arrays, below=below)
                fwd += [(q, None, None) for q in ps]
            fuse = _fused_delta(L, lim)
            bwd = [(q, None, None) for m in range(K - 1, 1 if fuse else 0, -1)
                   for q in _backprop_passes(dev, p, W[m], D[m + 1], A[m], D[m],
                                             keep=self._arrays, Wop=Wop[m])]
            part = []
            for m in range(K):
                R = len(self.P[m])
                if m == 0 and rc:
                    k, ins = PART_FUSED[True][R][p], {"A": A0, "DUP": D[2], "WU": W[1],
                                                      "WL": Wop[0]}
                elif m == 0 and fuse:
                    k, ins = PART_FUSED[False][R][p], {"A": A0, "AH": A[1], "DUP": D[2],
                                                       "WU": W[1]}
                elif m == 1 and rc:
                    k, ins = PART_TILE[True][R][p], {"D": D[2], "X": A0, "WL": Wop[0]}
                else:
                    k, ins = PART_TILE[False][R][p], {"D": D[m + 1],
                                                      "A": A0 if m == 0 else A[m]}
                part.append((dev.prepare(k, self.P[m], inputs=ins, uniforms={"chunk": chunk}),
                             None, None))
            app = [(dev.prepare(TAPPLY[len(self.P[m])], Wn[m],
                                inputs=dict(W=W[m], **{f"P{t}": x
                                                       for t, x in enumerate(self.P[m])}),
                                uniforms={"eta": self.lr}), None, None) for m in range(K)]
            ops = [("forward", fwd), ("backprop", bwd), ("update", part), ("apply", app)]
            self._steps.append([o for o in ops if o[1]])

    # -- training
    def step(self, n: int = 1) -> None:
        """Issue ``n`` learning steps (no readback, no wait)."""
        phase = self.dev.phase
        # Pass.repeat draws its passes after the first with the bound state, which is only
        # right for accumulation by blending; ping-pong accumulation goes pass by pass
        fast = self.dev.float_blending
        for _ in range(val.integer(n, "n", lo=0)):
            for label, items in self._steps[self.parity]:
                with phase(label):
                    for p, name, values in items:
                        if name is None:
                            p.run()
                        elif fast or p.blend is None:
                            p.repeat(name, values)
                        else:
                            for v in values:
                                p.run(**{name: v})
            self.parity ^= 1
            for mi in getattr(self, "_mirrors", [[], []])[self.parity]:
                if mi is not None:
                    mi.refresh()
            self.steps_done += 1

    def loss(self) -> float:
        """1/2 sum (y - t)^2 of the last forward pass (the step just issued), from the device."""
        with self.dev.phase("loss"):
            self._loss_pass.run()
        return float(np.sum(self.LOSS.get(), dtype=np.float64))

    def weights(self) -> list:
        """Current weights as float64 numpy matrices (L_m + 1, L_{m+1})."""
        return [w.get().astype(np.float64) for w in self.W[self.parity]]

    def set_weights(self, weights) -> None:
        """Replace the current weights (a list of (L_m + 1, L_{m+1}) matrices) on the device,
        copies included: the next ``step`` starts from them (the data-parallel driver of
        :mod:`shadergpgpu.distributed` broadcasts the weights every step)."""
        weights = _check_weights(weights, "weights", sizes=self.sizes)
        for a, w in zip(self.W[self.parity], weights):
            a.set(w)
        for mi in getattr(self, "_mirrors", [[], []])[self.parity]:
            if mi is not None:
                mi.refresh()

    def outputs(self) -> np.ndarray:
        """Network outputs (N, MO) of the last forward pass."""
        return self.A[-1].get()[1:].T.astype(np.float64)

    def probe(self, X) -> "Probe":
        """Outputs of the current weights for other inputs X, kept on the device (displays)."""
        return Probe(self, X)

    def passes_per_step(self) -> dict:
        """Expected passes per phase for one step of this network (its plan on this device)."""
        fn = paper_phases if self.schedule == "paper" else fused_phases
        return fn(self.sizes, self.N, self.packed, device=self.dev)

    def release(self) -> None:
        for a in self._arrays:
            a.release()
        self._arrays.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class Probe:
    """Forward passes of a :class:`BackpropNet`'s current weights over fixed inputs X.

    ``run()`` returns the output activations as a DeviceArray of shape (MO + 1, n) (row 0 the
    constant row) without reading anything back; made by :meth:`BackpropNet.probe`.
    """

    def __init__(self, net, X):
        dev, L = net.dev, net.sizes
        X = val.array(X, "X").astype(np.float64)
        if X.shape[1] != L[0]:
            raise ValueError(f"X: expected {L[0]} columns, got shape {X.shape}")
        n = X.shape[0]
        self.net = net
        self.A = [net._array(np.vstack([np.ones((1, n)), X.T]))]
        self.A += [net._empty((L[m] + 1, n)) for m in range(1, net.K + 1)]
        self._passes = [[q for m in range(net.K)
                         for q in _forward_passes(dev, net.packed, net.W[par][m], self.A[m],
                                                  self.A[m + 1], keep=net._arrays)]
                        for par in (0, 1)]

    def run(self):
        with self.net.dev.phase("probe"):
            for p in self._passes[self.net.parity]:
                p.run()
        return self.A[-1]


def device_forward(device, weights, X, packed=True, phase="predict") -> np.ndarray:
    """Outputs (N, MO) of a network for inputs X (N, MI), computed with fused forward passes.

    Accuracy: the forward bound of :class:`MLP` (per layer |dz| <= (L + 3) u sum |w| |a| +
    sum |w| |da|, |da| <= a (1 - a) |dz| + 4 u, u = 2^-24). Sizes are checked against the
    texture limit before anything is uploaded (ValueError naming X).

    weights : list of (L_m + 1, L_{m+1}) matrices that chain (threshold row 0).
    device : a :class:`shadergpgpu.Device` or None for the default one.
    """
    X = val.array(X, "X")
    weights = _check_weights(weights, "weights", n_features=X.shape[1])
    dev = val.pick_device(device, [])
    packed = bool(packed)
    N = X.shape[0]
    sizes = [X.shape[1]] + [w.shape[1] for w in weights]
    check_net_fits(limits(device=dev), sizes, N, packed, names={0: "X (its n_features)"},
                   inference=True)
    with dev.scope() as s:
        A = s.array(np.vstack([np.ones((1, N)), X.T.astype(np.float64)]), packed=packed)
        made = []
        with dev.phase(phase):
            for w in weights:
                W = s.array(w, packed=True, order="col")
                nxt = s.empty((w.shape[1] + 1, N), packed=packed)
                for q in _forward_passes(dev, packed, W, A, nxt, keep=made):
                    q.run()
                A = nxt
        out = A.get()[1:].T.astype(np.float64)
        for a in made:
            a.release()
    return out


# ---- scikit-learn estimators -------------------------------------------------------------------
class _BaseMLP(BaseEstimator):
    """Shared by :class:`MLP` and :class:`MLPClassifier` (parameters, training loop)."""

    def __init__(self, hidden=(4,), schedule="paper", packed=True, lr=0.5, steps=1000, seed=0,
                 loss_every=10, device=None, callback=None):
        self.hidden = hidden
        self.schedule = schedule
        self.packed = packed
        self.lr = lr
        self.steps = steps
        self.seed = seed
        self.loss_every = loss_every
        self.device = device
        self.callback = callback

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags

    def _hidden(self):
        h = self.hidden
        if isinstance(h, (int, np.integer)) and not isinstance(h, (bool, np.bool_)):
            h = (h,)
        try:
            h = tuple(h)
        except TypeError:
            raise TypeError(f"hidden must be a tuple of layer widths, got {h!r}") from None
        return tuple(val.integer(w, "hidden", lo=1) for w in h)

    def _check_params(self):
        hidden = self._hidden()
        val.choice(self.schedule, "schedule", SCHEDULES)
        val.real(self.lr, "lr", lo=0.0, closed="neither")
        val.integer(self.steps, "steps", lo=0)
        val.integer(self.loss_every, "loss_every", lo=0)
        if self.callback is not None and not callable(self.callback):
            raise TypeError(f"callback must be callable, got {self.callback!r}")
        return hidden

    def _check_sizes(self, n_samples, n_features, n_outputs, dev=None, client=None,
                     outputs="outputs"):
        """Refuse, from the shapes alone, a network whose device arrays would not fit (before
        any weight, target or texture is made); the error names hidden[i], X or y. With a
        Dask ``client`` the weights are checked against the workers' smallest texture limit
        (each worker's net checks its shard of the training vectors itself)."""
        hidden = self._check_params()
        sizes = [int(n_features), *hidden, int(n_outputs)]
        names = {0: f"X (its {n_features} features)", -1: f"X (its {n_samples} samples)",
                 len(sizes) - 1: f"y (its {n_outputs} {outputs})"}
        names.update({m + 1: f"hidden[{m}] = {w}" for m, w in enumerate(hidden)})
        if client is not None:
            from ..distributed import device_info
            mx = min(int(i["max_texture_size"]) for i in device_info(client))
            lim = limits(max_texture_size=mx)
            names[-1] = f"X (its {n_samples} samples, split over the workers)"
            n_samples = 1
        else:
            lim = limits(device=dev if dev is not None else val.pick_device(self.device, []))
        check_net_fits(lim, sizes, int(n_samples), bool(self.packed), self.schedule, names)

    def _train(self, X, T, client=None):
        """Train on X (N, MI) and targets T (N, MO) in [0, 1]; sets the fitted attributes.
        With a Dask ``client``: data-parallel over its workers (shadergpgpu.distributed)."""
        if client is not None:
            from ..distributed import fit_mlp
            self._check_sizes(X.shape[0], X.shape[1], T.shape[1], client=client)
            return fit_mlp(self, X, T, client)
        hidden = self._check_params()
        sizes = [X.shape[1], *hidden, T.shape[1]]
        dev = val.pick_device(self.device, [])
        self._check_sizes(X.shape[0], X.shape[1], T.shape[1], dev=dev)
        loss_curve, loss_steps = [], []
        passes = {}
        steps, every = int(self.steps), int(self.loss_every)
        with BackpropNet(dev, sizes, X, T, lr=self.lr, schedule=self.schedule,
                         packed=self.packed, seed=self.seed) as net:
            before = dict(dev.counter.passes)
            done = 0
            for s in range(steps):
                net.step()
                done = s + 1
                if s == 0:
                    passes = {k: v - before.get(k, 0) for k, v in dev.counter.passes.items()
                              if v != before.get(k, 0)}
                if (every and s % every == 0) or s == steps - 1:
                    loss = net.loss()
                    loss_curve.append(loss)
                    loss_steps.append(s)
                    if self.callback is not None and self.callback(s, loss, net) is False:
                        break
            weights = net.weights()
        return self._set_fitted(weights, sizes, loss_curve, loss_steps, done, passes)

    def _set_fitted(self, weights, sizes, loss_curve, loss_steps, done, passes):
        """The fitted attributes (one device or several: ``distributed``)."""
        self.weights_ = weights
        self.sizes_ = sizes
        self.n_outputs_ = sizes[-1]
        self.coefs_ = [w[1:] for w in weights]
        self.intercepts_ = [w[0] for w in weights]
        self.loss_curve_ = loss_curve
        self.loss_steps_ = loss_steps
        self.loss_ = loss_curve[-1] if loss_curve else float("nan")
        self.n_iter_ = done  # steps actually run (a callback may stop early)
        self.passes_per_step_ = passes
        return self

    def _forward(self, X) -> np.ndarray:
        check_is_fitted(self, "weights_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        dev = val.pick_device(self.device, [])
        return device_forward(dev, self.weights_, X, packed=bool(self.packed))


class MLP(RegressorMixin, _BaseMLP):
    """Multilayer perceptron regressor trained by backpropagation on the device.

    A scikit-learn estimator (``get_params``/``set_params``, ``clone``, pipelines, grid search).
    The output units are sigmoids: targets within [0, 1] are learned as given; other targets are
    mapped per output column into [0, 1] by their training minimum and range (``y_min_``,
    ``y_range_``) and predictions are mapped back.

    Parameters
    ----------
    hidden : tuple of hidden-layer widths, e.g. ``(64,)``.
    schedule : "paper" (the 2009 pass structure) or "fused" (loops inside shaders).
    packed : four training vectors per RGBA texel.
    lr : learning rate eta of the summed squared error (scale it with 1/N for large N).
    steps : learning steps (full-batch) per ``fit``.
    seed : weight initialisation seed.
    loss_every : read the loss back every this many steps (0: only at the end).
    device : a :class:`shadergpgpu.Device`; None for the process-wide one.
    callback : called as ``callback(step, loss, net)`` whenever the loss is read back; returning
        False stops training.

    Fitted attributes: ``weights_`` (list of (L_m + 1, L_{m+1}) matrices, threshold row 0),
    ``coefs_`` / ``intercepts_`` (scikit-learn's split), ``loss_curve_`` with ``loss_steps_``,
    ``loss_``, ``n_iter_``, ``n_features_in_``, ``n_outputs_``, ``passes_per_step_`` (measured,
    per phase), ``y_min_``, ``y_range_``.

    Sizes: ``fit`` checks every device array of the network (:func:`net_arrays`) against the
    device's texture limit from the shapes alone, before any weight, target or texture is
    made; a layer too wide (or too many samples, outputs or classes) is refused at once with
    a ValueError naming ``hidden[i]``, ``X`` or ``y``.

    Accuracy (u = 2^-24; first order in u). ``predict`` (one float32 forward pass of the
    float32 weights; X rounded to float32): with a = X for the input layer and, per layer,
    z_j = w_0j + sum_i w_ij a_i summed in float32 over its L_m + 1 terms, then
    a_j = 1 / (1 + exp(-z_j)),::

        |dz_j| <= (L_m + 3) u (|w_0j| + sum_i |w_ij| |a_i|) + sum_i |w_ij| |da_i|
        |da_j| <= a_j (1 - a_j) |dz_j| + 4 u          (da = u |X| for the inputs)

    against float64 (:func:`numpy_forward`) of the same weights; the last layer's da bounds
    the outputs (times ``y_range_`` for the regressor's mapped targets). Saturated units
    (|z| > ~88) give 0 or 1 exactly, within the bound. ``fit``: one full-batch step changes
    weight w_ij by -lr g_ij, g_ij = sum_n delta_nj a_ni summed in float32 over the N training
    vectors (by blended passes or per-chunk partial sums, in another order than float64),
    so against :func:`numpy_step` from the same weights::

        |dw_ij| <= u |w_ij| + lr ((N + 4) u sum_n |delta_nj| |a_ni|
                                  + sum_n (|d delta_nj| |a_ni| + |delta_nj| |da_ni|))

    with da from the forward bound and d delta from it by the output error
    (y - t) y (1 - y) (|d delta| <= 1.25 |dy| + 4 u |delta|) and the backpropagation
    delta_i = a_i (1 - a_i) sum_j w_ij delta_j (the dz rule above with delta for a). Over many
    steps these per-step errors are carried on by the descent itself: there is no a-priori
    bound for the whole trajectory (tests compare steps with float64 at 1e-5 relative).
    ``tests/test_algorithm_guards.py`` checks both bounds on a wide, saturating network.
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X, y, client=None):
        self._check_params()
        X, y = validate_data(self, X, y, multi_output=True, y_numeric=True, dtype=np.float64)
        self._y_1d = y.ndim == 1
        Y = y.reshape(len(y), -1).astype(np.float64)
        if Y.min() >= 0.0 and Y.max() <= 1.0:
            lo, span = np.zeros(Y.shape[1]), np.ones(Y.shape[1])
        else:
            lo = Y.min(axis=0)
            span = Y.max(axis=0) - lo
            span[span == 0] = 1.0
        self.y_min_, self.y_range_ = lo, span
        return self._train(X, (Y - lo) / span, client)

    def predict(self, X) -> np.ndarray:
        """Network outputs (mapped back to the targets' range): (n_samples,) if fitted on 1-D y,
        else (n_samples, n_outputs)."""
        out = self._forward(X) * self.y_range_ + self.y_min_
        return out[:, 0] if self._y_1d else out


class MLPClassifier(ClassifierMixin, _BaseMLP):
    """Class labels in, class labels out: one sigmoid output per class (one-hot targets).

    Same parameters and fitted attributes as :class:`MLP`, plus ``classes_``. ``predict_proba``
    gives the sigmoid outputs normalised to sum to 1 per sample.
    """

    def fit(self, X, y, client=None):
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("y: needs at least two classes to train a classifier, got 1 class "
                             f"({self.classes_[0]!r})")
        # one output per class: the sizes checked before the one-hot targets are made
        self._check_sizes(X.shape[0], X.shape[1], len(self.classes_), client=client,
                          outputs="classes")
        T = np.zeros((len(y), len(self.classes_)))
        T[np.arange(len(y)), idx] = 1.0
        return self._train(X, T, client)

    def predict_proba(self, X) -> np.ndarray:
        """Per-class scores (n_samples, n_classes): sigmoid outputs normalised per sample."""
        out = np.maximum(self._forward(X), 1e-12)
        return out / out.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        out = self._forward(X)
        return self.classes_[np.argmax(out, axis=1)]
