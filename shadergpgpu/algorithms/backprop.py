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

``"fused"``: the modern way on the same engine, loops inside the shaders: one pass per layer
forward (the last one also writes the output error, two render targets), one per layer
backward, two per weight layer for the update (partial sums over chunks of training vectors,
then a pass that adds them and applies the step). 4K - 1 passes per step (7 for three layers),
independent of N and of the layer widths.

Loop budget: every kernel with a loop declares it (``loop=`` or a ``Split``), so a layer wider
than the device's loop cap (llvmpipe stops a fragment's loops after 65,535 iterations) is never
silently truncated. Backprop, apply and loss loops are linear in their sum and are cut by the
engine over blended passes; a forward layer whose inputs exceed the cap runs as blended
partial sums of W^T A (``FWD_SUM``) followed by one pass applying f. Only then does a step take
more than 4K - 1 passes; :func:`fused_phases` (``loop_cap=``) gives the exact count.
"""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine import validation as val
from ..engine.errors import LoopBudgetError
from ..engine.kernels import In, Split, declare
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


# fused schedule
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
PARTIAL = _pair("fused_partial.frag", "update-partial", lambda p: {"D": _rows(p), "A": _rows(p)},
                uniforms={"chunk": "int"}, loop=lambda a: a.uniforms["chunk"])
APPLY = declare("algorithms/backprop/fused_apply.frag", inputs={"W": In(), "P": In()},
                uniforms={"eta": "float"}, defines={"PACKED": 0},
                split=Split("s", length=lambda a: a.P.rows // a.W.rows),
                name="backprop/apply")
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


# ---- pass plans ----------------------------------------------------------------------------
def _sizes_arg(sizes=None, MI=None, MH=None, MO=None):
    if sizes is None:
        hidden = MH if isinstance(MH, (tuple, list)) else (MH,)
        sizes = (MI, *hidden, MO)
    return [int(s) for s in sizes]


def paper_phases(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None,
                 loop_cap=None) -> dict:
    """Expected passes per phase label for one learning step of the paper schedule (its
    kernels have no loops, so the loop cap changes nothing)."""
    L = _sizes_arg(sizes, MI, MH, MO)
    K = len(L) - 1
    per_layer = _grid_w(N, packed)
    return {"forward": sum(L[m] + 2 for m in range(K)),
            "backprop": sum(L[m + 1] for m in range(1, K)),
            "update": K * per_layer,
            "output-error": 1,
            "apply": K}


def fused_phases(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None,
                 loop_cap=None) -> dict:
    """Expected passes per phase label for one learning step of the fused schedule.

    4K - 1 passes when every loop fits the device's loop cap (``loop_cap``: None for none);
    a layer wider than the cap adds the passes the engine cuts its loop into (forward: a
    blended partial-sum pass per slice, then one activation pass).
    """
    L = _sizes_arg(sizes, MI, MH, MO)
    K = len(L) - 1
    cap = loop_cap
    gw = _grid_w(N, packed)
    nchunk = -(-gw // update_chunk(gw, cap))
    fwd = 0
    for m in range(K):
        if cap is None or L[m] + 1 <= cap:
            fwd += 1
        else:
            fwd += _slices(FWD_SUM[True], cap, A=(L[m] + 1, N)) + 1
    bwd = sum(_slices(BACKPROP[True], cap, W=(L[m] + 1, L[m + 1])) for m in range(1, K))
    app = sum(_slices(APPLY, cap, W=(L[m] + 1, L[m + 1]), P=((L[m] + 1) * nchunk, L[m + 1]))
              for m in range(K))
    return {"forward": fwd, "backprop": bwd, "update": K, "apply": app}


def paper_formula_total(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None) -> int:
    """The paper's own count (forward + backprop + update) for one step."""
    ph = paper_phases(sizes, N, packed, MI, MH, MO)
    return sum(ph[p] for p in PAPER_PHASES)


PLAN_PAPER_UNPACKED = register_plan(PassPlan(
    name="backprop/paper-unpacked", formula="MI + MH + MO + 2N + 4",
    phases=lambda **kw: paper_phases(packed=False, **kw),
    notes="forward MI+MH+4, backprop MO, update 2N; plus output-error 1 and apply 2 "
          "(not counted by the paper)",
    params=("sizes", "N")))
PLAN_PAPER_PACKED = register_plan(PassPlan(
    name="backprop/paper-packed", formula="MI + MH + MO + N/2 + 4",
    phases=lambda **kw: paper_phases(packed=True, **kw),
    notes="update takes ceil(N/4) passes per weight layer (N/2 when 4 divides N); plus "
          "output-error 1 and apply 2 (not counted by the paper)",
    params=("sizes", "N")))
PLAN_FUSED = register_plan(PassPlan(
    name="backprop/fused", formula="4K - 1 (7 for three layers)",
    phases=lambda **kw: fused_phases(**kw),
    notes="forward K (the last also writes the output error), backprop K-1, update K "
          "(partial sums) + apply K; independent of N and of the widths while every loop fits "
          "the device's loop cap (loop_cap=: wider layers add the split passes)",
    params=("sizes", "N", "packed", "loop_cap")))


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


# ---- the float64 numpy reference of the same equations ------------------------------------------
def _sigmoid(x):
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


# ---- forward passes shared by the trainer, the probe and device_forward ----------------------
def _forward_passes(dev, packed, W, A, out, T=None, D=None, keep=None) -> list:
    """Prepared passes computing layer ``out`` = f(W^T A) (and, with targets T, the output
    error D): one fused pass, or, when the layer's inputs exceed the device's loop cap, the
    blended partial-sum passes of FWD_SUM and one activation pass."""
    ins = {"W": W, "A": A}
    if T is None:
        k1, k2, outs, extra = FWD[packed], ACT[packed], out, {}
    else:
        k1, k2 = FWD_OUT[packed], ACT_OUT[packed]
        outs, extra = {"OUT": out, "DELTA": D}, {"T": T}
    if _fits(dev, k1, dict(ins, **extra), outs):
        return [dev.prepare(k1, outs, inputs=dict(ins, **extra))]
    Z = dev.alloc(out.layout)
    if keep is not None:
        keep.append(Z)
    return [dev.prepare(FWD_SUM[packed], Z, inputs=ins),
            dev.prepare(k2, outs, inputs=dict(extra, Z=Z))]


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
        if weights is None:
            weights = init_weights(L, seed)
        weights = _check_weights(weights, "weights", sizes=L)
        self._arrays = []
        self.A = [self._array(np.vstack([np.ones((1, N)), X.T]))]
        self.A += [self._empty((L[m] + 1, N)) for m in range(1, K + 1)]
        self.D = [None] + [self._empty((L[m] + 1, N)) for m in range(1, K + 1)]
        self.T = self._array(np.vstack([np.zeros((1, N)), T.T]))
        self.W = [[self._array(w, packed=False) for w in weights],
                  [self._empty(np.shape(w), packed=False) for w in weights]]
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
    def _array(self, x, packed=None):
        a = self.dev.array(x, packed=self.packed if packed is None else packed)
        self._arrays.append(a)
        return a

    def _empty(self, shape, packed=None):
        a = self.dev.empty(shape, packed=self.packed if packed is None else packed)
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
                rest = dev.prepare(FWD_ACCUM[p], self.Z[m + 1], inputs=io, blend=True)
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
                                   blend=True)
                ops.append(("update", [(first, None, None),
                                       (rest, "b", range(1, self.grid_w))]))
                if m > 0:
                    io = {"W": W[m], "DUP": D[m + 1], "A": A[m]}
                    first = dev.prepare(BP_ACCUM[p], D[m], inputs=io, uniforms={"k": 0})
                    rest = dev.prepare(BP_ACCUM[p], D[m], inputs=io, blend=True)
                    ops.append(("backprop", [(first, None, None),
                                             (rest, "k", range(1, L[m + 1]))]))
            from ..engine.builtin import SAXPY
            apply = [(dev.prepare(SAXPY, Wn[m], inputs={"X": self.dW[m], "Y": W[m]},
                                  uniforms={"alpha": 1.0}), None, None) for m in range(K)]
            ops.append(("apply", apply))
            self._steps.append(ops)

    def _build_fused(self):
        dev, L, K, A, D, p = self.dev, self.sizes, self.K, self.A, self.D, self.packed
        chunk = update_chunk(self.grid_w, dev.loop_cap)
        nchunk = -(-self.grid_w // chunk)
        self.P = [self._empty(((L[m] + 1) * nchunk, L[m + 1]), packed=False) for m in range(K)]
        self._steps = []
        for par in (0, 1):
            W, Wn = self.W[par], self.W[1 - par]
            fwd = []
            for m in range(K):
                last = m == K - 1
                ps = _forward_passes(dev, p, W[m], A[m], A[m + 1],
                                     T=self.T if last else None, D=D[m + 1] if last else None,
                                     keep=self._arrays)
                fwd += [(q, None, None) for q in ps]
            bwd = [(dev.prepare(BACKPROP[p], D[m],
                                inputs={"W": W[m], "DUP": D[m + 1], "A": A[m]}), None, None)
                   for m in range(K - 1, 0, -1)]
            part = [(dev.prepare(PARTIAL[p], self.P[m], inputs={"D": D[m + 1], "A": A[m]},
                                 uniforms={"chunk": chunk}), None, None) for m in range(K)]
            app = [(dev.prepare(APPLY, Wn[m], inputs={"W": W[m], "P": self.P[m]},
                                uniforms={"eta": self.lr}), None, None) for m in range(K)]
            ops = [("forward", fwd), ("backprop", bwd), ("update", part), ("apply", app)]
            self._steps.append([o for o in ops if o[1]])

    # -- training
    def step(self, n: int = 1) -> None:
        """Issue ``n`` learning steps (no readback, no wait)."""
        phase = self.dev.phase
        for _ in range(val.integer(n, "n", lo=0)):
            for label, items in self._steps[self.parity]:
                with phase(label):
                    for p, name, values in items:
                        if name is None:
                            p.run()
                        else:
                            p.repeat(name, values)
            self.parity ^= 1
            self.steps_done += 1

    def loss(self) -> float:
        """1/2 sum (y - t)^2 of the last forward pass (the step just issued), from the device."""
        with self.dev.phase("loss"):
            self._loss_pass.run()
        return float(np.sum(self.LOSS.get(), dtype=np.float64))

    def weights(self) -> list:
        """Current weights as float64 numpy matrices (L_m + 1, L_{m+1})."""
        return [w.get().astype(np.float64) for w in self.W[self.parity]]

    def outputs(self) -> np.ndarray:
        """Network outputs (N, MO) of the last forward pass."""
        return self.A[-1].get()[1:].T.astype(np.float64)

    def probe(self, X) -> "Probe":
        """Outputs of the current weights for other inputs X, kept on the device (displays)."""
        return Probe(self, X)

    def passes_per_step(self) -> dict:
        """Expected passes per phase for one step of this network (its plan on this device)."""
        fn = paper_phases if self.schedule == "paper" else fused_phases
        return fn(self.sizes, self.N, self.packed, loop_cap=self.dev.loop_cap)

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

    weights : list of (L_m + 1, L_{m+1}) matrices that chain (threshold row 0).
    device : a :class:`shadergpgpu.Device` or None for the default one.
    """
    X = val.array(X, "X")
    weights = _check_weights(weights, "weights", n_features=X.shape[1])
    dev = val.pick_device(device, [])
    packed = bool(packed)
    N = X.shape[0]
    with dev.scope() as s:
        A = s.array(np.vstack([np.ones((1, N)), X.T.astype(np.float64)]), packed=packed)
        made = []
        with dev.phase(phase):
            for w in weights:
                W = s.array(w, packed=False)
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

    def _train(self, X, T):
        """Train on X (N, MI) and targets T (N, MO) in [0, 1]; sets the fitted attributes."""
        hidden = self._check_params()
        sizes = [X.shape[1], *hidden, T.shape[1]]
        dev = val.pick_device(self.device, [])
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
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def fit(self, X, y):
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
        return self._train(X, (Y - lo) / span)

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

    def fit(self, X, y):
        self._check_params()
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_, idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("y: needs at least two classes to train a classifier, got 1 class "
                             f"({self.classes_[0]!r})")
        T = np.zeros((len(y), len(self.classes_)))
        T[np.arange(len(y)), idx] = 1.0
        return self._train(X, T)

    def predict_proba(self, X) -> np.ndarray:
        """Per-class scores (n_samples, n_classes): sigmoid outputs normalised per sample."""
        out = np.maximum(self._forward(X), 1e-12)
        return out / out.sum(axis=1, keepdims=True)

    def predict(self, X) -> np.ndarray:
        out = self._forward(X)
        return self.classes_[np.argmax(out, axis=1)]
