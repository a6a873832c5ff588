"""The mini-batch trainer: scikit-learn's stochastic training of a multilayer perceptron, with
every step on the device.

The training set (X and the encoded targets Y) is uploaded once and stays resident; each epoch
uploads one permutation (the index texture IDX) and each batch is rows ``IDX[start:start+nb]``
of it, gathered by the kernels that read X and Y. A step is ``3 K`` render passes for K weight
layers, with nothing read back:

* forward, one pass per layer (``mb_forward.frag``): ``A' = f(A W + b)``, the output layer's
  pre-activations Z unactivated;
* output, one pass (``mb_output.frag``): the output activation (identity, softmax, logistic),
  the output error ``p - y`` and each sample's loss added into a running sum;
* backprop, one pass per hidden layer (``mb_backprop.frag``);
* update, one pass per layer (``mb_update.frag``): the batch gradient with the L2 term, and
  the solver's step (SGD with momentum or Nesterov's momentum, or Adam) with its state
  (velocity, moments) in textures beside the weights; the same pass adds the squared weights
  into the penalty's running sum.

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
from ...ops.reduce.sums import SumReduction

ACTIVATIONS = {"identity": 0, "logistic": 1, "tanh": 2, "relu": 3}
OUT_ACTIVATIONS = {"identity": 0, "softmax": 1, "logistic": 2}
SOLVERS = {"sgd": 0, "adam": 1}
_ROWS = In(packed=True, order="row")
_STEP = {"start": ("int", 0), "nb": ("int", 0)}


def _gathered(gather: bool, inputs: dict) -> dict:
    return dict(inputs, IDX=In()) if gather else inputs


FORWARD = {g: declare("algorithms/backprop/mb_forward.frag",
                      inputs=_gathered(g, {"W": _ROWS, "A": _ROWS}), uniforms=_STEP,
                      defines={"ACT": 0, "GATHER": int(g)}, loop=lambda a: a.A.grid_w,
                      name=f"backprop/mb-forward{'-gather' if g else ''}")
           for g in (False, True)}
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
_SOLVER_UNIFORMS = dict(_STEP, first=("int", 0), lr="float", alpha="float", mu="float",
                        beta2=("float", 0.0), eps=("float", 1e-8), denom="float",
                        sqscale=("float", 1.0))


def _update(gather: bool, solver: str):
    ins = {"W": In(like="W_OUT"), "M": In(like="W_OUT"), "S": In(like="W_OUT"),
           "A": _ROWS, "D": _ROWS}
    outs = ("W_OUT", "M_OUT", "SQ")
    if solver == "adam":
        ins["V"] = In(like="W_OUT")
        outs = ("W_OUT", "M_OUT", "V_OUT", "SQ")
    return declare("algorithms/backprop/mb_update.frag", inputs=_gathered(gather, ins),
                   outputs=outs, uniforms=_SOLVER_UNIFORMS,
                   defines={"SOLVER": SOLVERS[solver], "NESTEROV": 0, "GATHER": int(gather),
                            "ACT": 0},
                   loop=lambda a: a.D.rows, name=f"backprop/mb-update-{solver}"
                   + ("-gather" if gather else ""))


UPDATE = {(g, s): _update(g, s) for g in (False, True) for s in SOLVERS}
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


def check_fits(dev, sizes, n_rows: int, batch: int, names: dict) -> None:
    """Refuse, from the shapes alone, a network or data set whose device arrays would not fit
    (before anything is uploaded): a ValueError naming ``names[what]`` (``"layer{m}"`` names
    layer m's units, which size its activations and the weights into it)."""
    shapes = [("X", (n_rows, sizes[0])), ("y", (n_rows, sizes[-1]))]
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
    """

    def __init__(self, device, sizes, activation, out_activation, solver, hyper, X, Y, batch,
                 weights, state=None, sample_weight=None):
        self.dev = dev = device
        self.sizes = list(sizes)
        self.K = K = len(sizes) - 1
        self.solver = solver
        self.hyper = dict(hyper)
        self.act = ACTIVATIONS[activation]
        self.out_act = OUT_ACTIVATIONS[out_activation]
        self.N = N = X.shape[0]
        self.B = B = int(batch)
        self._arrays = []
        mk = self._keep
        self.X = mk(dev.array(np.asarray(X, np.float32), name="X"))
        self.Y = mk(dev.array(np.asarray(Y, np.float32), name="y"))
        self.IDX = mk(dev.empty((1, N), packed=False))
        self.sw = None if sample_weight is None else np.asarray(sample_weight, np.float64)
        self.SW = mk(dev.array(np.ones((1, N)) if self.sw is None else self.sw.reshape(1, N),
                               packed=False))
        self.order = np.arange(N)
        self.A = [self.X] + [mk(dev.empty((B, sizes[m]))) for m in range(1, K)]
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
        fwd = []
        for m in range(K):
            gather = m == 0
            out = self.A[m + 1] if m < K - 1 else self.Z
            ins = {"W": W[m], "A": self.A[m]}
            if gather:
                ins["IDX"] = self.IDX
            fwd.append(dev.prepare(FORWARD[gather], out, inputs=ins,
                                   defines={"ACT": self.act if m < K - 1 else 0}))
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
        upd = []
        for m in range(K):
            gather = m == 0
            ins = {"W": W[m], "M": self.state[0][par][m], "S": self.SQ[par][m],
                   "A": self.A[m], "D": self.D[m + 1]}
            outs = {"W_OUT": nxt[m], "M_OUT": self.state[0][1 - par][m],
                    "SQ": self.SQ[1 - par][m]}
            if adam:
                ins["V"] = self.state[1][par][m]
                outs["V_OUT"] = self.state[1][1 - par][m]
            if gather:
                ins["IDX"] = self.IDX
            upd.append(dev.prepare(
                UPDATE[(gather, self.solver)], outs, inputs=ins,
                uniforms={"alpha": float(h["alpha"]), "mu": float(mu),
                          "beta2": float(h.get("beta_2", 0.0)),
                          "eps": float(h.get("epsilon", 1e-8))},
                defines={"NESTEROV": int(bool(h.get("nesterovs_momentum", False)))}))
        return fwd, out, back, upd

    def set_order(self, order) -> None:
        """The epoch's sample order (a permutation of 0..N-1): one upload of N indices."""
        self.order = np.asarray(order)
        self.IDX.set(self.order.astype(np.float32).reshape(1, -1))

    def step(self, start: int, nb: int, lr: float, first: bool) -> None:
        """One batch: rows ``start .. start + nb`` of the order, the solver's rate ``lr``
        (Adam: with its bias correction); ``first`` starts the epoch's loss sums."""
        fwd, out, back, upd = self._steps[self.parity]
        first = int(bool(first))
        denom = float(nb)
        if self.sw is not None:      # scikit-learn's weighted batch: sums over the weight sum
            denom = float(self.sw[self.order[start:start + nb]].sum())
        scale = nb / denom
        with self.dev.phase("forward"):
            fwd[0].run(start=start, nb=nb)       # rows IDX[start + r] of X
            for p in fwd[1:]:
                p.run(start=0, nb=nb)           # rows r of the batch's activations
        with self.dev.phase("output"):
            out.run(start=start, nb=nb, first=first, lscale=scale)
        with self.dev.phase("backprop"):
            for p in back:
                p.run()
        with self.dev.phase("update"):
            for p in upd:
                p.run(start=start, nb=nb, first=first, lr=float(lr), denom=denom,
                      sqscale=scale)
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
        from ...ops.reduce.sums import sum as dsum
        with self.dev.scope() as s:
            P = forward(self.dev, self.W[self.parity], Xv, self.act, self.out_act, scope=s)
            T = s.empty(P.shape)
            SCORE(T, P=P, Y=Yv, SW=SWv, defines={"KIND": kind})
            return dsum(T, axis=0).get().astype(np.float64).ravel()

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
    ``scope``: one forward pass per layer and the output activation's pass."""
    n = X.shape[0]
    A = X
    K = len(W)
    for m, w in enumerate(W):
        out = scope.empty((n, w.shape[1]))
        FORWARD[False](out, W=w, A=A, start=0, nb=n,
                       defines={"ACT": act if m < K - 1 else 0})
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
