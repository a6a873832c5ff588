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
"""
from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

from ..engine.plans import PassPlan, register_plan

SCHEDULES = ("paper", "fused")
PAPER_PHASES = ("forward", "backprop", "update")      # what the paper's formula counts
EXTRA_PHASES = ("output-error", "apply")              # passes the paper leaves out


# ---- pass plans ----------------------------------------------------------------------------
def _sizes_arg(sizes=None, MI=None, MH=None, MO=None):
    if sizes is None:
        hidden = MH if isinstance(MH, (tuple, list)) else (MH,)
        sizes = (MI, *hidden, MO)
    return [int(s) for s in sizes]


def paper_phases(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None) -> dict:
    """Expected passes per phase label for one learning step of the paper schedule."""
    L = _sizes_arg(sizes, MI, MH, MO)
    K = len(L) - 1
    per_layer = math.ceil(int(N) / 4) if packed else int(N)
    return {"forward": sum(L[m] + 2 for m in range(K)),
            "backprop": sum(L[m + 1] for m in range(1, K)),
            "update": K * per_layer,
            "output-error": 1,
            "apply": K}


def fused_phases(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None) -> dict:
    """Expected passes per phase label for one learning step of the fused schedule."""
    K = len(_sizes_arg(sizes, MI, MH, MO)) - 1
    return {"forward": K, "backprop": K - 1, "update": K, "apply": K}


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
          "(partial sums) + apply K; independent of N and of the widths",
    params=("sizes", "N")))


def plan_for(schedule: str, packed: bool) -> PassPlan:
    if schedule == "fused":
        return PLAN_FUSED
    return PLAN_PAPER_PACKED if packed else PLAN_PAPER_UNPACKED


# ---- validation --------------------------------------------------------------------------------
def _check_schedule(schedule):
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    return schedule


def _check_lr(lr):
    if isinstance(lr, bool) or not isinstance(lr, Real) or not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a positive finite number, got {lr!r}")
    return float(lr)


def _check_sizes(sizes):
    try:
        sizes = list(sizes)
    except TypeError:
        raise ValueError(f"sizes must be a sequence of layer widths, got {sizes!r}") from None
    if len(sizes) < 2:
        raise ValueError(f"sizes needs at least an input and an output layer, got {sizes!r}")
    for s in sizes:
        if isinstance(s, bool) or not isinstance(s, Integral) or s < 1:
            raise ValueError(f"layer widths must be positive integers, got {sizes!r}")
    return [int(s) for s in sizes]


def _check_matrix(x, name, cols=None):
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real numeric array, got dtype {a.dtype}")
    if a.ndim != 2:
        raise ValueError(f"{name}: expected a 2-D array (n_samples, n_features), "
                         f"got shape {a.shape}")
    if a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name}: empty array of shape {a.shape}")
    if cols is not None and a.shape[1] != cols:
        raise ValueError(f"{name}: expected {cols} columns, got shape {a.shape}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or Inf")
    return a


def _check_targets(t, n, name="y"):
    a = np.asarray(t)
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name}: expected a real numeric array, got dtype {a.dtype}")
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[1] < 1:
        raise ValueError(f"{name}: expected shape (n_samples,) or (n_samples, n_outputs), "
                         f"got {np.shape(t)}")
    if a.shape[0] != n:
        raise ValueError(f"{name}: has {a.shape[0]} rows but X has {n}")
    a = a.astype(np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or Inf")
    if a.min() < 0.0 or a.max() > 1.0:
        raise ValueError(f"{name}: targets must lie in [0, 1] for sigmoid outputs "
                         f"(got min {a.min():g}, max {a.max():g})")
    return a


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
        self.dev = dev = device
        self.sizes = L = _check_sizes(sizes)
        self.schedule = _check_schedule(schedule)
        self.packed = bool(packed)
        self.lr = _check_lr(lr)
        X = _check_matrix(X, "X", L[0])
        T = _check_targets(T, X.shape[0], "T")
        if T.shape[1] != L[-1]:
            raise ValueError(f"T: expected {L[-1]} output columns, got {T.shape[1]}")
        self.N = N = X.shape[0]
        self.K = K = len(L) - 1
        if weights is None:
            weights = init_weights(L, seed)
        if len(weights) != K:
            raise ValueError(f"weights: expected {K} matrices, got {len(weights)}")
        for m, w in enumerate(weights):
            if np.shape(w) != (L[m] + 1, L[m + 1]):
                raise ValueError(f"weights[{m}]: expected shape {(L[m] + 1, L[m + 1])}, "
                                 f"got {np.shape(w)}")
            if not np.all(np.isfinite(w)):
                raise ValueError(f"weights[{m}]: contains NaN or Inf")
        p = self.packed
        self._arrays = []
        self.A = [self._array(np.vstack([np.ones((1, N)), X.T]))]
        self.A += [self._empty((L[m] + 1, N)) for m in range(1, K + 1)]
        self.D = [None] + [self._empty((L[m] + 1, N)) for m in range(1, K + 1)]
        self.T = self._array(np.vstack([np.zeros((1, N)), T.T]))
        self.W = [[self._array(w, packed=False) for w in weights],
                  [self._empty(np.shape(w), packed=False) for w in weights]]
        self.defines = {"PACKED": int(p)}
        self.parity = 0
        self.steps_done = 0
        gw = self.A[0].layout.grid_w            # training-vector texels per row
        self.grid_w = gw
        self._loss_chunk = max(16, math.isqrt(gw))
        self.LOSS = self._empty((1, -(-gw // self._loss_chunk)), packed=False)
        self._loss_pass = dev.prepare("backprop/loss.frag", self.LOSS,
                                      inputs={"Y": self.A[K], "T": self.T},
                                      defines=dict(self.defines, CHUNK=self._loss_chunk))
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
        dev, L, K, A, D = self.dev, self.sizes, self.K, self.A, self.D
        df = self.defines
        self.Z = [None] + [self._empty((L[m], self.N)) for m in range(1, K + 1)]
        self.dW = [self._empty((L[m] + 1, L[m + 1]), packed=False) for m in range(K)]
        self._steps = []
        for par in (0, 1):
            W, Wn = self.W[par], self.W[1 - par]
            ops = []
            for m in range(K):
                io = {"W": W[m], "A": A[m]}
                first = dev.prepare("backprop/fwd_accum.frag", self.Z[m + 1], inputs=io,
                                    uniforms={"i": 0}, defines=df)
                rest = dev.prepare("backprop/fwd_accum.frag", self.Z[m + 1], inputs=io,
                                   defines=df, blend=True)
                act = dev.prepare("backprop/activate.frag", A[m + 1],
                                  inputs={"Z": self.Z[m + 1], "MASK": A[0]}, defines=df)
                ops.append(("forward", [(first, None, None), (rest, "i", range(1, L[m] + 1)),
                                        (act, None, None)]))
            oe = dev.prepare("backprop/out_error.frag", D[K],
                             inputs={"Y": A[K], "T": self.T, "MASK": A[0]}, defines=df)
            ops.append(("output-error", [(oe, None, None)]))
            for m in range(K - 1, -1, -1):
                io = {"D": D[m + 1], "A": A[m]}
                u = {"eta": self.lr}
                first = dev.prepare("backprop/update_accum.frag", self.dW[m], inputs=io,
                                    uniforms=dict(u, b=0), defines=df)
                rest = dev.prepare("backprop/update_accum.frag", self.dW[m], inputs=io,
                                   uniforms=u, defines=df, blend=True)
                ops.append(("update", [(first, None, None),
                                       (rest, "b", range(1, self.grid_w))]))
                if m > 0:
                    io = {"W": W[m], "DUP": D[m + 1], "A": A[m]}
                    first = dev.prepare("backprop/bp_accum.frag", D[m], inputs=io,
                                        uniforms={"k": 0}, defines=df)
                    rest = dev.prepare("backprop/bp_accum.frag", D[m], inputs=io, defines=df,
                                       blend=True)
                    ops.append(("backprop", [(first, None, None),
                                             (rest, "k", range(1, L[m + 1]))]))
            apply = [(dev.prepare("engine/saxpy.frag", Wn[m], inputs={"X": self.dW[m], "Y": W[m]},
                                  uniforms={"alpha": 1.0}), None, None) for m in range(K)]
            ops.append(("apply", apply))
            self._steps.append(ops)

    def _build_fused(self):
        dev, L, K, A, D = self.dev, self.sizes, self.K, self.A, self.D
        df = self.defines
        chunk = max(8, math.isqrt(self.grid_w))
        nchunk = -(-self.grid_w // chunk)
        self.P = [self._empty(((L[m] + 1) * nchunk, L[m + 1]), packed=False) for m in range(K)]
        self._steps = []
        for par in (0, 1):
            W, Wn = self.W[par], self.W[1 - par]
            fwd = []
            for m in range(K):
                ins = {"W": W[m], "A": A[m], "MASK": A[0]}
                if m == K - 1:
                    ins["T"] = self.T
                    outs = {"OUT": A[m + 1], "DELTA": D[m + 1]}
                else:
                    outs = A[m + 1]
                fwd.append((dev.prepare("backprop/fused_forward.frag", outs, inputs=ins,
                                        defines=dict(df, OUTPUT_LAYER=int(m == K - 1))),
                            None, None))
            bwd = [(dev.prepare("backprop/fused_backprop.frag", D[m],
                                inputs={"W": W[m], "DUP": D[m + 1], "A": A[m]}, defines=df),
                    None, None) for m in range(K - 1, 0, -1)]
            part = [(dev.prepare("backprop/fused_partial.frag", self.P[m],
                                 inputs={"D": D[m + 1], "A": A[m]},
                                 defines=dict(df, CHUNK=chunk)), None, None) for m in range(K)]
            app = [(dev.prepare("backprop/fused_apply.frag", Wn[m],
                                inputs={"W": W[m], "P": self.P[m]}, uniforms={"eta": self.lr},
                                defines=df), None, None) for m in range(K)]
            ops = [("forward", fwd), ("backprop", bwd), ("update", part), ("apply", app)]
            self._steps.append([o for o in ops if o[1]])

    # -- training
    def step(self, n: int = 1) -> None:
        """Issue ``n`` learning steps (no readback, no wait)."""
        phase = self.dev.phase
        for _ in range(int(n)):
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
        """Expected passes per phase for one step of this network (its plan)."""
        fn = paper_phases if self.schedule == "paper" else fused_phases
        return fn(self.sizes, self.N, self.packed)

    def release(self) -> None:
        for a in self._arrays:
            a.release()
        self._arrays.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class Probe:
    """Fused forward passes of a :class:`BackpropNet`'s current weights over fixed inputs X.

    ``run()`` returns the output activations as a DeviceArray of shape (MO + 1, n) (row 0 the
    constant row) without reading anything back; made by :meth:`BackpropNet.probe`.
    """

    def __init__(self, net, X):
        dev, L = net.dev, net.sizes
        X = _check_matrix(X, "X", L[0])
        n = X.shape[0]
        self.net = net
        self.A = [net._array(np.vstack([np.ones((1, n)), X.T]))]
        self.A += [net._empty((L[m] + 1, n)) for m in range(1, net.K + 1)]
        df = dict(net.defines, OUTPUT_LAYER=0)
        self._passes = [[dev.prepare("backprop/fused_forward.frag", self.A[m + 1],
                                     inputs={"W": net.W[par][m], "A": self.A[m],
                                             "MASK": self.A[0]}, defines=df)
                         for m in range(net.K)] for par in (0, 1)]

    def run(self):
        with self.net.dev.phase("probe"):
            for p in self._passes[self.net.parity]:
                p.run()
        return self.A[-1]


def device_forward(device, weights, X, packed=True, phase="predict") -> np.ndarray:
    """Outputs (N, MO) of a network for inputs X, computed with fused forward passes."""
    K = len(weights)
    X = np.asarray(X, dtype=np.float64)
    N = X.shape[0]
    made = []
    try:
        A = device.array(np.vstack([np.ones((1, N)), X.T]), packed=packed)
        made.append(A)
        df = {"PACKED": int(packed), "OUTPUT_LAYER": 0}
        for m in range(K):
            W = device.array(weights[m], packed=False)
            made.append(W)
            nxt = device.empty((weights[m].shape[1] + 1, N), packed=packed)
            made.append(nxt)
            with device.phase(phase):
                device.run("backprop/fused_forward.frag", nxt,
                           inputs={"W": W, "A": A, "MASK": made[0]}, defines=df)
            A = nxt
        return A.get()[1:].T.astype(np.float64)
    finally:
        for a in made:
            a.release()


# ---- scikit-learn style estimators -------------------------------------------------------------
class MLP:
    """Multilayer perceptron trained by backpropagation on the device (scikit-learn style).

    Parameters
    ----------
    hidden : tuple of hidden-layer widths, e.g. ``(64,)``.
    schedule : "paper" (the 2009 pass structure) or "fused" (loops inside shaders).
    packed : four training vectors per RGBA texel.
    lr : learning rate eta of the summed squared error (scale it with 1/N for large N).
    steps : learning steps (full-batch) per ``fit``.
    seed : weight initialisation seed.
    loss_every : read the loss back every this many steps (0: only at the end).
    device : a :class:`shadergpgpu.Device`; default the process-wide one.
    callback : called as ``callback(step, loss, net)`` whenever the loss is read back.

    Fitted attributes: ``weights_`` (list of (L_m + 1, L_{m+1}) matrices, threshold row 0),
    ``coefs_`` / ``intercepts_`` (scikit-learn's split), ``loss_curve_`` with ``loss_steps_``,
    ``loss_``, ``n_features_in_``, ``n_outputs_``, ``passes_per_step_`` (measured, per phase).
    """

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

    def _validate_params(self):
        h = (self.hidden,) if isinstance(self.hidden, Integral) else tuple(self.hidden)
        for w in h:
            if isinstance(w, bool) or not isinstance(w, Integral) or w < 1:
                raise ValueError(f"hidden must be positive integers, got {self.hidden!r}")
        _check_schedule(self.schedule)
        _check_lr(self.lr)
        for name in ("steps", "loss_every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, Integral) or v < 0:
                raise ValueError(f"{name} must be a non-negative integer, got {v!r}")
        return tuple(int(w) for w in h)

    def _device(self):
        if self.device is None:
            from ..engine.device import get_device
            self.device = get_device()
        return self.device

    def fit(self, X, y):
        hidden = self._validate_params()
        X = _check_matrix(X, "X")
        T = _check_targets(y, X.shape[0], "y")
        self._y_1d = np.ndim(y) == 1
        sizes = [X.shape[1], *hidden, T.shape[1]]
        dev = self._device()
        self.loss_curve_, self.loss_steps_ = [], []
        self.passes_per_step_ = {}
        net = BackpropNet(dev, sizes, X, T, lr=self.lr, schedule=self.schedule,
                          packed=self.packed, seed=self.seed)
        try:
            every = self.loss_every
            before = dict(dev.counter.passes)
            done = 0
            for s in range(self.steps):
                net.step()
                done = s + 1
                if s == 0:
                    self.passes_per_step_ = {k: v - before.get(k, 0)
                                             for k, v in dev.counter.passes.items()
                                             if v != before.get(k, 0)}
                if (every and s % every == 0) or s == self.steps - 1:
                    loss = net.loss()
                    self.loss_curve_.append(loss)
                    self.loss_steps_.append(s)
                    if self.callback is not None and self.callback(s, loss, net) is False:
                        break
            self.weights_ = net.weights()
        finally:
            net.release()
        self.sizes_ = sizes
        self.n_features_in_ = sizes[0]
        self.n_outputs_ = sizes[-1]
        self.coefs_ = [w[1:] for w in self.weights_]
        self.intercepts_ = [w[0] for w in self.weights_]
        self.loss_ = self.loss_curve_[-1] if self.loss_curve_ else float("nan")
        self.n_iter_ = done  # steps actually run (a callback may stop early)
        return self

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise ValueError("this MLP is not fitted yet; call fit(X, y) first")

    def predict_proba(self, X) -> np.ndarray:
        """Network outputs in (0, 1): (n_samples,) if fitted on 1-D y, else (n_samples, MO)."""
        self._check_fitted()
        X = _check_matrix(X, "X", self.n_features_in_)
        out = device_forward(self._device(), self.weights_, X, packed=bool(self.packed))
        return out[:, 0] if self._y_1d else out

    def predict(self, X) -> np.ndarray:
        """Outputs thresholded at 0.5 (0 or 1)."""
        return (self.predict_proba(X) >= 0.5).astype(np.int64)

    def get_params(self, deep=True):
        return {k: getattr(self, k) for k in ("hidden", "schedule", "packed", "lr", "steps",
                                              "seed", "loss_every", "device", "callback")}

    def set_params(self, **params):
        for k, v in params.items():
            if k not in self.get_params():
                raise ValueError(f"unknown parameter {k!r}")
            setattr(self, k, v)
        return self


class MLPClassifier(MLP):
    """Class labels in, class labels out: one sigmoid output per class (one-hot targets)."""

    def fit(self, X, y):
        y = np.asarray(y)
        if y.ndim != 1:
            raise ValueError(f"y: expected a 1-D array of class labels, got shape {y.shape}")
        self.classes_, idx = np.unique(y, return_inverse=True)
        if len(self.classes_) < 2:
            raise ValueError("y: needs at least two classes")
        T = np.zeros((len(y), len(self.classes_)))
        T[np.arange(len(y)), idx] = 1.0
        return super().fit(X, T)

    def predict(self, X) -> np.ndarray:
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))
