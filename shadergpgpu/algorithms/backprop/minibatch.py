"""The mini-batch trainer: scikit-learn's stochastic training of a multilayer perceptron, with
every step on the device.

The training set (X and the encoded targets Y) is uploaded once and stays resident; each epoch
uploads one permutation (the index texture IDX) and each batch is rows ``IDX[start:start+nb]``
of it. A step is ``4 K + 2`` render passes for K weight layers (one more per later layer
whose forward is cut in parts, below), with nothing read back:

* gather, one pass (``mb_gather.frag``): the batch's rows of X copied into a (B, L) texture,
  so no later loop reads an index;
* forward, one pass per layer (``mb_forward.frag``): ``A' = f(A W + b)``, the output layer's
  pre-activations Z unactivated; the first layer in two: ``mb_forward4.frag`` (four batch
  rows per fragment, four render targets: 64 multiply-adds per eight texel fetches) and
  ``mb_sum.frag`` (the intercepts and the activation);
* output, one pass (``mb_output.frag``): the output activation (identity, softmax, logistic),
  the output error ``p - y`` and each sample's loss added into a running sum;
* backprop, one pass per hidden layer (``mb_backprop.frag``);
* update, two passes per layer: the batch gradient ``A^T D`` (``mb_gradient.frag``: a 4 x 4
  block of weights per fragment, four render targets, 16 multiply-adds per two texel fetches),
  then the solver's step (``mb_update.frag``: the L2 term, SGD with momentum or Nesterov's
  momentum, or Adam, with its state (velocity, moments) in textures beside the weights; the
  same pass adds the squared weights into the penalty's running sum).

On hardware renderers the first layer's loops are too long for too few fragments: the forward's
and the gradient's loops are cut into S parts (:func:`slice_plan`), each a fragment of its own,
their partial sums added by the next pass (``mb_sum.frag`` after the forward, ``mb_update.frag``
after the gradient); S = 1 on software renderers, where a part only adds work, except the
first layer's forward, cut so that its fragments cover enough tiles for llvmpipe's threads.

The host reads the epoch's loss (one readback of K + 1 sums made on the device), and, with
early stopping, the validation score (one sum per output). Weights live as (Lp + 1, L') matrices packed by rows,
``Lp = 4 ceil(L / 4)``: rows ``L .. Lp - 1`` zero (a texel of four inputs meets four weight rows)
and row ``Lp`` the intercepts.
"""
from __future__ import annotations

import numpy as np

from ...engine.builtin import COPY
from ...engine.errors import TooLargeError
from ...engine.kernels import In, declare
from ...ops.reduce.chain import result_array
from ...ops.reduce.sums import SumReduction, sum as device_sum

ACTIVATIONS = {"identity": 0, "logistic": 1, "tanh": 2, "relu": 3}
OUT_ACTIVATIONS = {"identity": 0, "softmax": 1, "logistic": 2}
SOLVERS = {"sgd": 0, "adam": 1}
_ROWS = In(packed=True, order="row")
_STEP = {"start": ("int", 0), "nb": ("int", 0)}


def _per(n: int, parts: int) -> int:
    """Iterations of one of ``parts`` slices of a loop of ``n``."""
    return -(-int(n) // int(parts))


GATHER = declare("algorithms/backprop/mb_gather.frag", inputs={"X": _ROWS, "IDX": In()},
                 uniforms=_STEP, loop=lambda a: 0, name="backprop/mb-gather")
FORWARD = declare("algorithms/backprop/mb_forward.frag", inputs={"W": _ROWS, "A": _ROWS},
                  uniforms=_STEP, defines={"ACT": 0, "SLICES": 1},
                  loop=lambda a: _per(a.A.grid_w, a.defines["SLICES"]),
                  name="backprop/mb-forward")
_PARTS = ("P0", "P1", "P2", "P3")
FORWARD4 = declare("algorithms/backprop/mb_forward4.frag", inputs={"W": _ROWS, "A": _ROWS},
                   outputs=_PARTS, uniforms={"nb": ("int", 0)}, defines={"SLICES": 1},
                   loop=lambda a: _per(a.A.grid_w, a.defines["SLICES"]),
                   name="backprop/mb-forward4")
FORWARD_SUM = declare("algorithms/backprop/mb_sum.frag",
                      inputs={"P0": _ROWS, "P1": In(like="P0"), "P2": In(like="P0"),
                              "P3": In(like="P0"), "W": _ROWS},
                      uniforms={"nb": ("int", 0)}, defines={"ACT": 0, "SLICES": 1, "BLOCK": 0},
                      loop=lambda a: a.defines["SLICES"], name="backprop/mb-forward-sum")
BACKPROP = declare("algorithms/backprop/mb_backprop.frag",
                   inputs={"D": _ROWS, "W": _ROWS, "A": In(like="OUT")}, defines={"ACT": 0},
                   loop=lambda a: a.D.grid_w, name="backprop/mb-backprop")
OUTPUT_TRAIN = declare("algorithms/backprop/mb_output.frag",
                       inputs={"Z": In(like="DELTA"), "LIN": In(like="DELTA"), "Y": _ROWS,
                               "IDX": In(), "SW": In()},
                       outputs=("DELTA", "LOSS"),
                       uniforms=dict(_STEP, first=("int", 0), lscale=("float", 1.0)),
                       defines={"OUT_ACT": 0, "TRAIN": 1, "ACT": 0},
                       loop=lambda a: 8 * a.Z.grid_w, name="backprop/mb-output-train")
OUTPUT = declare("algorithms/backprop/mb_output.frag", inputs={"Z": In(like="OUT")},
                 uniforms=dict(_STEP, first=("int", 0), lscale=("float", 1.0)),
                 defines={"OUT_ACT": 0, "TRAIN": 0, "ACT": 0},
                 loop=lambda a: 8 * a.Z.grid_w, name="backprop/mb-output")
_BLOCKS = ("G0", "G1", "G2", "G3")
GRADIENT = declare("algorithms/backprop/mb_gradient.frag", inputs={"A": _ROWS, "D": _ROWS},
                   outputs=_BLOCKS, uniforms={"nb": ("int", 0)}, defines={"SLICES": 1},
                   loop=lambda a: _per(a.D.rows, a.defines["SLICES"]),
                   name="backprop/mb-gradient")
_SOLVER_UNIFORMS = dict(first=("int", 0), lr="float", alpha="float", mu="float",
                        beta2=("float", 0.0), eps=("float", 1e-8), denom="float",
                        sqscale=("float", 1.0))


def _update(solver: str):
    ins = {"W": In(like="W_OUT"), "M": In(like="W_OUT"), "S": In(like="W_OUT"),
           "G0": _ROWS, "G1": In(like="G0"), "G2": In(like="G0"), "G3": In(like="G0")}
    outs = ("W_OUT", "M_OUT", "SQ")
    if solver == "adam":
        ins["V"] = In(like="W_OUT")
        outs = ("W_OUT", "M_OUT", "V_OUT", "SQ")
    return declare("algorithms/backprop/mb_update.frag", inputs=ins, outputs=outs,
                   uniforms=_SOLVER_UNIFORMS,
                   defines={"SOLVER": SOLVERS[solver], "NESTEROV": 0, "ACT": 0, "SLICES": 1},
                   loop=lambda a: a.defines["SLICES"], name=f"backprop/mb-update-{solver}")


UPDATE = {s: _update(s) for s in SOLVERS}
SCORE = declare("algorithms/backprop/mb_score.frag",
                inputs={"P": _ROWS, "Y": _ROWS, "SW": In()},
                defines={"KIND": 0}, loop=lambda a: 4 * a.P.grid_w, name="backprop/mb-score")
SCORE_KINDS = {"identity": 0, "softmax": 1, "logistic": 2}


def padded(n: int) -> int:
    """Rows a layer of ``n`` units takes in the weights below the intercept row."""
    return 4 * -(-int(n) // 4)


def pack_layer(coef, intercept) -> np.ndarray:
    """A layer's (L, L') coefficients and (L',) intercepts as the device's (Lp + 1, L')."""
    coef = np.asarray(coef, np.float64)
    w = np.zeros((padded(coef.shape[0]) + 1, coef.shape[1]))
    w[:coef.shape[0]] = coef
    w[-1] = intercept
    return w


def unpack_layer(w, fan_in: int):
    """The inverse of :func:`pack_layer`: (coef (L, L'), intercept (L',)), float64."""
    w = np.asarray(w, np.float64)
    return w[:fan_in].copy(), w[-1].copy()


# The split of the long loops on hardware renderers (``slices``): a GPU runs the first layer's
# forward (B x L'/4 fragments, each looping over L/4 texels) and gradient (L/4 x L'/4 blocks,
# each looping over the batch) with far too few fragments to fill it, so their loops are cut
# into S parts, each a fragment of its own (partial sums in a texture, summed by the next pass).
# S is chosen so that the fragments reach TARGET_FRAGMENTS, each part keeping MIN_SLICE
# iterations; on a software renderer the cores are full already and a split only adds a pass.
MOST_SLICES = 16
TARGET_FRAGMENTS = 65536
MIN_SLICE = 8
# Mesa llvmpipe shades 64 x 64-pixel tiles, one thread each: the first layer's forward (B / 4
# rows of fragments) is cut so that its rows fill about SOFTWARE_ROWS, four tiles for the
# threads to share (its sum pass is drawn anyway); every other loop keeps S = 1 there.
SOFTWARE_ROWS = 256


def choose_slices(fragments: int, trips: int, software: bool) -> int:
    """The parts S (1 .. MOST_SLICES) a loop of ``trips`` iterations run by ``fragments``
    fragments is cut into: 1 on a software renderer."""
    if software:
        return 1
    s = min(MOST_SLICES, -(-TARGET_FRAGMENTS // max(1, int(fragments))),
            int(trips) // MIN_SLICE)
    return max(1, s)


def slice_plan(dev, sizes, batch: int, slices=None) -> list:
    """(forward S, gradient S) per weight layer: ``slices`` (an int) for every loop, or None
    for :func:`choose_slices` on ``dev`` (the first layer's forward on a software renderer:
    SOFTWARE_ROWS), lowered where the partial sums would not fit in a texture. The first
    layer's forward computes four batch rows per fragment (``mb_forward4.frag``, B / 4 rows
    of fragments)."""
    plan = []
    for m in range(len(sizes) - 1):
        cols = -(-sizes[m + 1] // 4)
        blocks = padded(sizes[m]) // 4 + 1
        row = []
        fwd_rows = -(-batch // 4) if m == 0 else batch     # the first layer: mb_forward4
        for rows, frags, trips in ((fwd_rows, fwd_rows * cols, -(-sizes[m] // 4)),
                                   (blocks, blocks * cols, batch)):
            s = slices or choose_slices(frags, trips, dev.is_software)
            if m == 0 and rows == fwd_rows and dev.is_software and not slices:
                s = max(1, min(MOST_SLICES, trips // MIN_SLICE, SOFTWARE_ROWS // rows))
            while True:
                try:
                    dev.layout((s * rows, sizes[m + 1]))
                    break
                except TooLargeError:
                    if slices or s == 1:
                        raise ValueError(f"slices = {s}: the partial sums of layer {m + 1} "
                                         "do not fit the device's textures") from None
                    s = max(1, s // 2)
            row.append(s)
        plan.append(tuple(row))
    return plan


def check_fits(dev, sizes, n_rows: int, batch: int, names: dict) -> None:
    """Refuse, from the shapes alone, a network or data set whose device arrays would not fit
    (before anything is uploaded): a ValueError naming ``names[what]`` (``"layer{m}"`` names
    layer m's units, which size its activations and the weights into it)."""
    shapes = [("X", (n_rows, sizes[0])), ("X", (batch, sizes[0])), ("y", (n_rows, sizes[-1]))]
    shapes += [(f"layer{m + 1}", (padded(sizes[m]) + 1, sizes[m + 1]))
               for m in range(len(sizes) - 1)]
    shapes += [(f"layer{m}", (batch, sizes[m])) for m in range(1, len(sizes))]
    for what, shape in shapes:
        try:
            dev.layout(shape)
        except TooLargeError as e:
            raise ValueError(f"{names.get(what, what)}: its device array {shape[0]}x{shape[1]} "
                             f"does not fit the device's textures (max_texture_size "
                             f"{dev.max_texture_size}): {e}") from None
    cap = dev.loop_cap
    if cap is None:
        return
    if batch > cap:
        raise ValueError(f"{names.get('batch', 'batch_size')} = {batch}: a batch is summed in "
                         f"one fragment loop, and this device stops loops after {cap} "
                         "iterations; use a smaller batch_size")
    K = len(sizes) - 1
    # the loops of the other kernels: a forward pass over a layer's inputs, backprop over the
    # units above, the output activation over the outputs (twice, four per texel)
    loops = [(f"layer{m}", -(-sizes[m] // 4)) for m in range(K)]
    loops += [(f"layer{K}", 8 * -(-sizes[K] // 4))]
    for what, trips in loops:
        if trips > cap:
            raise ValueError(f"{names.get(what, what)}: a fragment loops {trips} times over "
                             f"it, and this device stops loops after {cap} iterations")


class MinibatchTrainer:
    """A network, its training set and its solver state on the device.

    Parameters
    ----------
    device : :class:`shadergpgpu.Device`.
    sizes : layer widths [n_features, hidden..., n_outputs].
    activation : hidden activation (``ACTIVATIONS``); out_activation : ``OUT_ACTIVATIONS``.
    solver : "sgd" or "adam"; hyper : dict of alpha, momentum, nesterovs_momentum, beta_1,
        beta_2, epsilon.
    X : (N, n_features) inputs; Y : (N, n_outputs) encoded targets.
    batch : rows per batch (the last batch of an epoch may be shorter).
    weights : list of packed (Lp + 1, L') layers (:func:`pack_layer`); state : the solver's
        packed state per layer (velocities, or (first, second) moments), or None for zeros.
    sample_weight : (N,) weights of the samples, or None for ones.
    slices : the parts S (1 .. 16) the forward's and the gradient's loops are cut into, or None
        to choose (:func:`slice_plan`: 1 on software renderers).
    """

    def __init__(self, device, sizes, activation, out_activation, solver, hyper, X, Y, batch,
                 weights, state=None, sample_weight=None, slices=None):
        self.dev = dev = device
        self.sizes = list(sizes)
        self.K = K = len(sizes) - 1
        self.solver = solver
        self.hyper = dict(hyper)
        self.act = ACTIVATIONS[activation]
        self.out_act = OUT_ACTIVATIONS[out_activation]
        self.N = N = X.shape[0]
        self.B = B = int(batch)
        if slices is not None and not 1 <= int(slices) <= MOST_SLICES:
            raise ValueError(f"slices must be 1 .. {MOST_SLICES} or None, got {slices!r}")
        self.slices = slice_plan(dev, sizes, B, None if slices is None else int(slices))
        self._arrays = []
        mk = self._keep
        self.X = mk(dev.array(np.asarray(X, np.float32), name="X"))
        self.Y = mk(dev.array(np.asarray(Y, np.float32), name="y"))
        self.IDX = mk(dev.empty((1, N), packed=False))
        self.sw = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        self.SW = mk(dev.array(np.ones((1, N)) if self.sw is None else self.sw.reshape(1, N),
                               packed=False))
        self.order = np.arange(N)
        self.XB = mk(dev.empty((B, sizes[0])))          # the batch's rows of X (mb_gather)
        self.A = [self.XB] + [mk(dev.empty((B, sizes[m]))) for m in range(1, K)]
        # per layer: the forward's partial sums (S > 1), the gradient's blocks (mb_gradient)
        self.P = [None] * K          # the forward's partial sums: P0..P3 (mb_forward4), P0
        for m, (sf, _) in enumerate(self.slices):
            if m == 0:
                self.P[m] = [mk(dev.empty((sf * -(-B // 4), sizes[1]))) for _ in _PARTS]
            elif sf > 1:
                self.P[m] = [mk(dev.empty((sf * B, sizes[m + 1])))] * len(_PARTS)
        self.G = [[mk(dev.empty((sg * (padded(sizes[m]) // 4 + 1), sizes[m + 1])))
                   for _ in _BLOCKS] for m, (_, sg) in enumerate(self.slices)]
        self.Z = mk(dev.empty((B, sizes[K])))
        self.D = [None] + [mk(dev.empty((B, sizes[m]))) for m in range(1, K + 1)]
        self.LACC = [mk(dev.empty((B, sizes[K]))) for _ in range(2)]
        self.W = [[mk(dev.array(w)) for w in weights],
                  [mk(dev.empty(np.shape(w))) for w in weights]]
        nstate = 2 if solver == "adam" else 1
        state = state or [[np.zeros(np.shape(w)) for w in weights] for _ in range(nstate)]
        self.state = [[[mk(dev.array(s)) for s in st], [mk(dev.empty(np.shape(s))) for s in st]]
                      for st in state]
        self.SQ = [[mk(dev.empty(np.shape(w))) for w in weights] for _ in range(2)]
        self.parity = 0
        self._steps = [self._prepare(par) for par in (0, 1)]
        # the epoch's loss terms, summed on the device into one small result (slot 0: the
        # samples' losses; slot 1 + m: layer m's squared weights over the epoch's batches)
        self.SUMS = mk(result_array(dev, K + 1))
        self._sums = [[SumReduction(dev, a.layout, result=self.SUMS, slot=i, source=a)
                       for i, a in enumerate([self.LACC[par]] + self.SQ[par])]
                      for par in (0, 1)]

    def _keep(self, a):
        self._arrays.append(a)
        return a

    def _prepare(self, par):
        """The passes of one step whose current buffers have parity ``par``."""
        dev, K, h = self.dev, self.K, self.hyper
        W, nxt = self.W[par], self.W[1 - par]
        gather = dev.prepare(GATHER, self.XB, inputs={"X": self.X, "IDX": self.IDX})
        fwd = []
        for m, (sf, _) in enumerate(self.slices):
            out = self.A[m + 1] if m < K - 1 else self.Z
            act = self.act if m < K - 1 else 0
            ins = {"W": W[m], "A": self.A[m]}
            if self.P[m] is None:
                fwd.append(dev.prepare(FORWARD, out, inputs=ins, defines={"ACT": act}))
                continue
            parts = dict(zip(_PARTS, self.P[m]))
            if m == 0:
                fwd.append(dev.prepare(FORWARD4, parts, inputs=ins, defines={"SLICES": sf}))
            else:
                fwd.append(dev.prepare(FORWARD, parts["P0"], inputs=ins,
                                       defines={"SLICES": sf}))
            fwd.append(dev.prepare(FORWARD_SUM, out, inputs=dict(parts, W=W[m]),
                                   defines={"ACT": act, "SLICES": sf, "BLOCK": int(m == 0)}))
        out = dev.prepare(OUTPUT_TRAIN, {"DELTA": self.D[K], "LOSS": self.LACC[1 - par]},
                          inputs={"Z": self.Z, "LIN": self.LACC[par], "Y": self.Y,
                                  "IDX": self.IDX, "SW": self.SW},
                          defines={"OUT_ACT": self.out_act})
        back = [dev.prepare(BACKPROP, self.D[m], inputs={"D": self.D[m + 1], "W": W[m],
                                                         "A": self.A[m]},
                            defines={"ACT": self.act})
                for m in range(K - 1, 0, -1)]
        adam = self.solver == "adam"
        mu = h["beta_1"] if adam else h["momentum"]
        grads, upd = [], []
        for m, (_, sg) in enumerate(self.slices):
            blocks = dict(zip(_BLOCKS, self.G[m]))
            grads.append(dev.prepare(GRADIENT, blocks, inputs={"A": self.A[m],
                                                               "D": self.D[m + 1]},
                                     defines={"SLICES": sg}))
            ins = dict(blocks, W=W[m], M=self.state[0][par][m], S=self.SQ[par][m])
            outs = {"W_OUT": nxt[m], "M_OUT": self.state[0][1 - par][m],
                    "SQ": self.SQ[1 - par][m]}
            if adam:
                ins["V"] = self.state[1][par][m]
                outs["V_OUT"] = self.state[1][1 - par][m]
            upd.append(dev.prepare(
                UPDATE[self.solver], outs, inputs=ins,
                uniforms={"alpha": float(h["alpha"]), "mu": float(mu),
                          "beta2": float(h.get("beta_2", 0.0)),
                          "eps": float(h.get("epsilon", 1e-8))},
                defines={"NESTEROV": int(bool(h.get("nesterovs_momentum", False))),
                         "SLICES": sg}))
        return gather, fwd, out, back, grads, upd

    def set_order(self, order) -> None:
        """The epoch's sample order (a permutation of 0..N-1): one upload of N indices."""
        self.order = np.asarray(order)
        self.IDX.set(self.order.astype(np.float32).reshape(1, -1))

    def step(self, start: int, nb: int, lr: float, first: bool) -> None:
        """One batch: rows ``start .. start + nb`` of the order, the solver's rate ``lr``
        (Adam: with its bias correction); ``first`` starts the epoch's loss sums."""
        gather, fwd, out, back, grads, upd = self._steps[self.parity]
        first = int(bool(first))
        denom = float(nb)
        if self.sw is not None:      # scikit-learn's weighted batch: sums over the weight sum
            denom = float(self.sw[self.order[start:start + nb]].sum())
        scale = nb / denom
        with self.dev.phase("forward"):
            gather.run(start=start, nb=nb)      # rows IDX[start + r] of X
            for p in fwd:
                p.run(nb=nb)                    # rows r of the batch
        with self.dev.phase("output"):
            out.run(start=start, nb=nb, first=first, lscale=scale)
        with self.dev.phase("backprop"):
            for p in back:
                p.run()
        with self.dev.phase("update"):
            for g, p in zip(grads, upd):
                g.run(nb=nb)
                p.run(first=first, lr=float(lr), denom=denom, sqscale=scale)
        self.parity ^= 1

    def epoch_sums(self) -> tuple:
        """(sum of the samples' losses, sum over the epoch's batches of |W|^2) since the
        epoch's first step: the sums made on the device, K + 1 texels read back once."""
        with self.dev.phase("loss"):
            for chain in self._sums[self.parity]:
                chain.run()
            v = self.SUMS.get().astype(np.float64).reshape(-1, 4)[:, 0]
        return float(v[0]), float(v[1:].sum())

    def weights(self) -> list:
        """The current packed layers (float64)."""
        return [w.get().astype(np.float64) for w in self.W[self.parity]]

    def solver_state(self) -> list:
        """The solver's current packed state per layer (float64), as ``state`` takes it."""
        return [[s.get().astype(np.float64) for s in st[self.parity]] for st in self.state]

    def snapshot(self, into) -> list:
        """Copy the current weights on the device into ``into`` (arrays made by
        :meth:`snapshot_arrays`); nothing is read back."""
        for src, dst in zip(self.W[self.parity], into):
            COPY(dst, X=src)
        return into

    def snapshot_arrays(self) -> list:
        return [self._keep(self.dev.empty(w.shape)) for w in self.W[0]]

    def score_terms(self, Xv, Yv, SWv, kind: int):
        """Per-output sums of the validation terms (``mb_score.frag``) for the device arrays
        Xv, Yv and weights SWv: one sum per output read back."""
        with self.dev.scope() as s:
            P = forward(self.dev, self.W[self.parity], Xv, self.act, self.out_act, scope=s)
            T = s.empty(P.shape)
            SCORE(T, P=P, Y=Yv, SW=SWv, defines={"KIND": kind})
            return device_sum(T, axis=0).get().astype(np.float64).ravel()

    def release(self) -> None:
        for chains in getattr(self, "_sums", []):
            for c in chains:
                c.release()
        self._sums = []
        for a in self._arrays:
            a.release()
        self._arrays.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def forward(dev, W, X, act: int, out_act: int, scope):
    """The network's outputs for the device array X (n, n_features), as a device array made in
    ``scope``: per layer a pass of four rows per fragment (``mb_forward4.frag``) and the pass
    adding its intercepts and activation (``mb_sum.frag``), then the output activation's
    pass."""
    n = X.shape[0]
    A = X
    K = len(W)
    for m, w in enumerate(W):
        parts = {name: scope.empty((-(-n // 4), w.shape[1])) for name in _PARTS}
        FORWARD4(parts, W=w, A=A, nb=n, defines={"SLICES": 1})
        out = scope.empty((n, w.shape[1]))
        FORWARD_SUM(out, W=w, nb=n, defines={"ACT": act if m < K - 1 else 0, "SLICES": 1,
                                              "BLOCK": 1}, **parts)
        A = out
    P = scope.empty(A.shape)
    OUTPUT(P, Z=A, defines={"OUT_ACT": out_act})
    return P


def predict(dev, layers, X, activation: str, out_activation: str) -> np.ndarray:
    """Outputs (n, n_outputs) of packed ``layers`` for numpy inputs X, on the device."""
    with dev.scope() as s:
        with dev.phase("predict"):
            W = [s.array(w) for w in layers]
            P = forward(dev, W, s.array(np.asarray(X, np.float32)), ACTIVATIONS[activation],
                        OUT_ACTIVATIONS[out_activation], scope=s)
        return P.get().astype(np.float64)
