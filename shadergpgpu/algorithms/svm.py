"""Support vector classification trained by SMO on the device (RBF kernel).

The solver is libsvm's (Fan, Chen and Lin 2005) laid out the way Catanzaro et al. (2008) run it
on a GPU. The dual gradient ``G``, the alphas and the labels live on the device as packed
vectors; each iteration is

1. selection: ``i = argmax_{t in I_up} -y_t G_t`` and ``Gmax2 = max_{t in I_low} y_t G_t`` by
   masked arg-max reductions (:mod:`shadergpgpu.ops.reduce`) whose first level computes the values
   and the I_up / I_low membership on the fly; with ``working_set="second-order"`` one more pass
   evaluates the kernel row of ``i`` and libsvm's second-order gain for every point (reading
   ``i`` from the device, no readback) and an arg-min picks ``j``; with ``"first-order"``
   ``j`` is the I_low arg-max (the "high"/"low" pair of the source);
2. the two-variable subproblem, solved exactly as libsvm does (clipping to the box), and
3. one update pass evaluating ``K(x_t, x_i)`` and ``K(x_t, x_j)`` for all ``t`` (fused) and
   adding ``y_t (y_i dalpha_i K_ti + y_j dalpha_j K_tj)`` to ``G_t``, writing the new alphas.

By default (``readback_every = k > 1``) step 2 runs on the device: every fragment of the update
pass solves the subproblem itself from the selection results (a few fetches: ``G_i, G_j``,
``alpha_i, alpha_j``, ``y_i, y_j`` and ``K_ij`` from the objective pass's kernel row), so an
iteration is the selection passes and one update pass, with no readback and no host work. The
solver state (iterations, stop flag, duality gap) lives in the last texel of the alpha vector
(padding points); the host reads that one texel every k iterations for the stopping test
(libsvm's ``Gmax + Gmax2 < tol``, or no second-order partner, or ``max_iter``). Once stopped,
the steps are no-ops, so the at most k - 1 iterations run past the stop change nothing and the
result does not depend on k. ``readback_every = 1`` keeps the earlier path: one readback of the
3-texel result array per iteration, the step solved on the host in float64, its result passed
to the update pass as uniforms. The device step computes in float32 (libsvm's kernel cache is
float32 too); on the test problems both paths take the same iterations and support vectors.

G and the alphas are read once at the end for the bias and the dual coefficients.

Loop budget: the update and objective passes walk all features in one fragment. Past the
device's loop cap (llvmpipe: ``ceil(n_features / 4) > 65,535``, i.e. more than 262,140
features) the squared distances are summed by split kernels over several blended passes and
the exponential is applied in one more pass (:mod:`shadergpgpu.ops.rbf`); below the cap the
fused single passes run unchanged. Under a device profile without float blending
(``Device(profile="geforce-7800gtx")`` and the mobile ones) the split passes accumulate by
ping-pong passes instead (the engine's ``accumulate``), and the reduction fan-in stays within
the profile's loop cap (:func:`shadergpgpu.ops.reduce.fanin_for`). The pass plan ``svm/smo``
counts every path (its parameters include ``loop_cap``, ``float_blend``, ``readback_every``).
Multi-class problems are split one-vs-one as libsvm does; the fitted attributes follow
scikit-learn's ``SVC`` (``classes_, support_, support_vectors_, n_support_, dual_coef_,
intercept_, n_iter_``).
"""
from __future__ import annotations

import math
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..engine import validation as val
from ..engine.errors import TooLargeError
from ..engine.kernels import In, Split, declare
from ..engine.layout import Layout
from ..engine.limits import ceil_div
from ..engine.plans import PassPlan, register_plan
from ..ops import reduce as _reduce
from ..ops import rbf as _rbf
from ..ops.rbf import (DATA_INPUTS, RBF_PAIR_D2, RBFData, over_cap, pair_passes,
                       rbf_matrix_host)

TAU = 1e-12
#: points per problem are padded up to a multiple of this (padding points have label 0 and take
#: part in nothing), so problems of nearby sizes share textures and pass plans
PAD_POINTS = 256

# ---- kernels ---------------------------------------------------------------------------------
_VEC = {"G": In(packed=True, order="row"), "A": In(like="G"), "Y": In(like="G")}
_SETS = {"C": "float"}
#: first selection levels (arg-max reductions computing I_up / I_low values on the fly)
SELECT_PAIR = _reduce.arg_kernels("algorithms/svm/select_pair.frag", _VEC, _SETS,
                                  name="svm/select_pair", dual=True)
SELECT_UP = _reduce.arg_kernels("algorithms/svm/select_up.frag", _VEC, _SETS,
                                name="svm/select_up")
SELECT_LOW = _reduce.arg_kernels("algorithms/svm/select_low.frag", _VEC, _SETS,
                                 name="svm/select_low")
_FEATURES = lambda a: a.XR.grid_w  # noqa: E731  (feature texels one fragment walks)
_HINT = "X has too many features (n_features) for one pass on this device"
#: first level of the second-order partner selection computing the gain on the fly (the
#: kernel row of i for the level's FANIN texels: FANIN x (feature texels + 1) loop steps)
SELECT_SECOND = _reduce.arg_kernels(
    "algorithms/svm/select_second.frag",
    dict(DATA_INPUTS, **_VEC, SEL=In(packed=True, order="row")), {"C": "float", "gamma": "float"},
    name="svm/select_second", loop=lambda a: a.defines["FANIN"] * (a.XR.grid_w + 1))
#: second-order selection: the gain computed inside the arg-min's first level (True) rather
#: than by an objective pass of its own writing the kernel row of i (one dependent pass less
#: per iteration; used where the level's loop fits the device's loop cap). Off by default:
#: on the H200 the level's few fragments then walk FANIN kernel rows each and the iteration
#: got slower (10,000 points: 110 vs 102 us), on llvmpipe it is ~5% faster.
FUSE_GAIN = False
_OUT_VEC = {"G": In(like="OUT"), "A": In(like="OUT"), "Y": In(like="OUT"),
            "RES": In(packed=True, order="row")}
#: second-order gain of every point against i (read from RES on the device), fused RBF walk;
#: the kernel row K(x_t, x_i) goes to KI (the device step reads K_ij there)
OBJECTIVE = declare("algorithms/svm/objective.frag", inputs=dict(DATA_INPUTS, **_OUT_VEC),
                    outputs=("OUT", "KI"), uniforms={"gamma": "float", "C": "float"},
                    defines={"FROM_D2": 0}, loop=_FEATURES, name="svm/objective", hint=_HINT)
#: split path (past the loop cap): partial squared distances to i, then the gain from them
OBJECTIVE_D2 = declare("algorithms/svm/objective_d2.frag",
                       inputs=dict(DATA_INPUTS, RES=In(packed=True, order="row")),
                       split=Split("d4", length=_FEATURES, cost=1), name="svm/objective_d2")
OBJECTIVE_FROM_D2 = declare("algorithms/svm/objective.frag",
                            inputs=dict(_OUT_VEC, D=In(like="OUT")),
                            uniforms={"gamma": "float", "C": "float"}, defines={"FROM_D2": 1},
                            name="svm/objective_from_d2")
_UPD_UNI = {"h": "int", "l": "int", "gamma": "float", "ch": "float", "cl": "float",
            "a_h": "float", "a_l": "float"}
_UPD_VEC = {"G": In(like="OUT0"), "A": In(like="OUT0"), "Y": In(like="OUT0")}
#: gradient and alpha update with the fused kernel rows of (h, l) (host step: uniforms)
UPDATE = declare("algorithms/svm/update.frag", inputs=dict(DATA_INPUTS, **_UPD_VEC), outputs=2,
                 uniforms=_UPD_UNI, defines={"FROM_D2": 0, "FROM_STEP": 0}, loop=_FEATURES,
                 name="svm/update", hint=_HINT)
#: split path: the update from distances computed by ops.rbf's split pair kernel
UPDATE_FROM_D2 = declare("algorithms/svm/update.frag",
                         inputs=dict(_UPD_VEC, DH=In(like="OUT0"), DL=In(like="OUT0")),
                         outputs=2, uniforms=_UPD_UNI, defines={"FROM_D2": 1, "FROM_STEP": 0},
                         name="svm/update_from_d2")
#: device step: every fragment of the update solves the two-variable step from the selection
#: results RES (step.glsl) and the state texel of A; K_ij from a walk over the features of
#: x_i, x_j (KSRC 0), the kernel row KI of the objective pass (1) or the distances D (2)
_STEP_UNI = {"gamma": "float", "tol": "float", "C": "float", "max_iter": "float",
             "state_texel": "int"}
_RES = {"RES": In(packed=True, order="row")}
_KSRC_IN = {0: {}, 1: {"KI": In()}, 2: {"D": In()}}
UPDATE_STEP = {
    ksrc: declare("algorithms/svm/update.frag",
                  inputs=dict(DATA_INPUTS, **_UPD_VEC, **_RES, **_KSRC_IN[ksrc]), outputs=2,
                  uniforms=_STEP_UNI,
                  defines={"FROM_D2": 0, "FROM_STEP": 1, "KSRC": ksrc, "SECOND_ORDER": 1},
                  loop=(lambda a: 2 * a.XR.grid_w) if ksrc == 0 else _FEATURES,
                  name=f"svm/update_step{ksrc}", hint=_HINT)
    for ksrc in (0, 1, 2)}
UPDATE_STEP_FROM_D2 = declare("algorithms/svm/update.frag",
                              inputs=dict(_UPD_VEC, DH=In(like="OUT0"), DL=In(like="OUT0"),
                                          **_RES, **_KSRC_IN[2]),
                              outputs=2, uniforms=_STEP_UNI,
                              defines={"FROM_D2": 1, "FROM_STEP": 1, "KSRC": 2,
                                       "SECOND_ORDER": 1},
                              name="svm/update_step_from_d2")
#: device step, split path: distances to the selected pair (read from RES)
PAIR_D2_STEP = declare("algorithms/svm/pair_d2_step.frag", inputs=dict(DATA_INPUTS, **_RES),
                       outputs=2, defines={"SECOND_ORDER": 1},
                       split=Split("d4", length=_FEATURES, cost=1), name="svm/pair_d2_step",
                       hint=_HINT)
#: iterations between two readbacks of the step state by default (the stopping test)
READBACK_EVERY = 32
#: iteration counts travel as float32 on the device: exact below this
_MAX_COUNT = 2 ** 24 - 1


def _padded(n: int) -> int:
    """Points stored per problem: n plus at least 4 padding points (the last texel of the
    alpha vector holds the device step's solver state), rounded up to PAD_POINTS."""
    return ceil_div(n + 4, PAD_POINTS) * PAD_POINTS


def _walk_fits(n_features: int, loop_cap) -> bool:
    """Whether the first-order device step's update walks K_ij's features too (2 walks)."""
    return loop_cap is None or 2 * ceil_div(int(n_features), 4) <= loop_cap


def split_passes(n_features: int, loop_cap: int | None, n_outputs: int,
                 float_blend: bool = True) -> int:
    """Passes of one split distance kernel (0 below the loop cap): one pass per cut of the
    feature texels; the cuts after the first accumulate, by blending (1 pass) or, without float
    blending, by ping-pong passes (1 + 2 per output; ``Device.accumulate_passes``)."""
    texels = ceil_div(int(n_features), 4)
    if loop_cap is None or texels <= loop_cap:
        return 0
    cuts = ceil_div(texels, int(loop_cap))
    return cuts + (cuts - 1) * (0 if float_blend else 2 * int(n_outputs))


def gain_fused(n_pad: int, n_features: int, fanin: int, loop_cap: int | None,
               working_set: str = "second-order") -> bool:
    """Whether the second-order selection computes the gain inside the arg-min's first level
    (:data:`FUSE_GAIN`; that level's FANIN x (feature texels + 1) steps fit the cap, and it is
    not the final level, which writes the results the level reads)."""
    steps = int(fanin) * (ceil_div(int(n_features), 4) + 1)
    return (FUSE_GAIN and working_set == "second-order" and
            _reduce.passes(n_pad, fanin) > 1 and (loop_cap is None or steps <= loop_cap))


def smo_phases(n: int, n_iter: int, working_set: str = "second-order",
               fanin: int | None = None, fused: bool = True, n_features: int = 1,
               loop_cap: int | None = None, readback_every: int = 1,
               float_blend: bool = True) -> dict:
    """Passes of one binary SMO solve of ``n`` points that took ``n_iter`` iterations
    (``fanin`` None: the default for ``loop_cap``, as the solver picks it)."""
    fanin = fanin or _reduce.default_fanin(loop_cap)
    npad = _padded(n)
    L = _reduce.passes(npad, fanin)
    rbf = pair_passes(n_features, loop_cap, float_blend)
    d2 = split_passes(n_features, loop_cap, 1, float_blend)
    obj = 1 if not d2 else d2 + 1
    if gain_fused(npad, n_features, fanin, loop_cap, working_set):
        obj = 0
    second = working_set == "second-order"
    select = (L if fused else 2 * L) + (obj + L if second else 0)
    if readback_every == 1:
        return {"svm/init": 2, "svm/select": (n_iter + 1) * select, "svm/update": n_iter * rbf}
    if not second and not _walk_fits(n_features, loop_cap):
        # the distances to i for K_ij: split cuts (at least one pass)
        select += max(1, d2)
    runs = ceil_div(n_iter + 1, int(readback_every)) * int(readback_every)
    return {"svm/init": 2, "svm/select": runs * select, "svm/update": runs * rbf}


register_plan(PassPlan(
    name="svm/smo",
    formula="readback_every = 1 (host step): init 2; per iteration: update R + select S, one "
            "more selection to stop. readback_every = k > 1 (device step, solved in the "
            "update pass): init 2; ceil((n_iter + 1) / k) * k iterations of select S, "
            "update R. "
            "S = L (fused I_up/I_low pair; 2L unfused) (+ O + L second-order); "
            "L = ceil(log_F(n_pad / 4)), n_pad = n rounded up to 256; R = 1, O = 0 (the "
            "gain computed in the arg-min's first level, where F (ceil(d / 4) + 1) fits the "
            "loop cap), else O = 1, or past "
            "the loop cap (ceil(d / 4) > cap, c = ceil(ceil(d / 4) / cap) cuts) R = c + 1, "
            "O = c + 1 (first-order device step with 2 ceil(d / 4) > cap: S += max(1, c)), each "
            "cut after the first costing "
            "1 + 2 per output more without float blending",
    phases=smo_phases,
    notes="host step: one small readback per iteration (3 texels); device step: one 1-texel "
          "readback every k iterations; G and alpha read once at the end",
    params=("n", "n_iter", "working_set", "fanin", "fused", "n_features", "loop_cap",
            "readback_every", "float_blend")))


class BinarySMO:
    """One binary C-SVC dual problem solved on the device. ``y`` in {+1, -1}.

    ``readback_every``: 1 solves the two-variable step on the host from a 3-texel readback per
    iteration; k > 1 solves it on the device, in every fragment of the update pass
    (``step.glsl``), and reads the solver state (one texel) only every k iterations for the
    stopping test (the iterations run past the stop are no-ops).
    """

    def __init__(self, dev, X, y, C: float, gamma: float, tol: float, max_iter: int,
                 working_set: str = "second-order", fanin: int | None = None,
                 fused: bool = True, readback_every: int = READBACK_EVERY):
        self.dev = dev
        # the fused selection writes four render targets: fewer draw buffers, two reductions
        self.fused = bool(fused) and dev.max_outputs >= 4
        n = len(y)
        self.n, self.C, self.gamma, self.tol = n, float(C), float(gamma), float(tol)
        self.max_iter = int(max_iter)
        self.working_set = working_set
        self.readback_every = int(readback_every)
        self.device_step = self.readback_every > 1
        self.fanin = _reduce.fanin_for(dev, fanin)
        npad = _padded(n)
        self._arrays = []
        self.data = RBFData(dev, X, n_pad=npad)
        self.split = over_cap(dev, self.data.d)
        second = working_set == "second-order"
        # where the device step reads K_ij: the kernel row of i (second-order), a walk over
        # the features of x_i and x_j (first-order), or the distances to i (past the cap)
        self.fuse_gain = not self.split and gain_fused(npad, self.data.d, self.fanin,
                                                         dev.loop_cap, working_set)
        if self.split or (not second and not _walk_fits(self.data.d, dev.loop_cap)):
            self.ksrc = 2
        else:
            self.ksrc = 1 if second and not self.fuse_gain else 0
        self.y = np.asarray(y, np.float64)
        ypad = np.zeros(npad, np.float32)
        ypad[:n] = self.y
        self.Y = self._keep(self.data.vector().set(ypad))
        self.G = [self._keep(self.data.vector()) for _ in range(2)]
        self.A = [self._keep(self.data.vector()) for _ in range(2)]
        self.res = self._keep(_reduce.result_array(dev, 3))
        self.obj = None if self.fuse_gain else self._keep(self.data.vector())
        self.krow = None if self.fuse_gain else self._keep(self.data.vector())
        self.d2 = self._keep(self.data.vector()) if self.split or self.ksrc == 2 else None
        self.state_texel = npad // 4 - 1
        self.passes_run = 0

    def _keep(self, a):
        self._arrays.append(a)
        return a

    def _chains(self, k: int):
        """Selection chains (and passes) reading G[k], A[k]."""
        dev, C = self.dev, float(np.float32(self.C))
        src = {"G": self.G[k], "A": self.A[k], "Y": self.Y}
        nt = self.G[k].layout.n_texels
        kw = dict(payload=self.G[k], fanin=self.fanin, strict_scan=True,
                  first_uniforms={"C": C})
        if self.fused:
            # both selections in the same passes (two reductions, four render targets)
            chains = [_reduce.ArgReduction(dev, "max", SELECT_PAIR, src, nt, self.res, 0,
                                           dual=True, **kw)]
        else:
            chains = [_reduce.ArgReduction(dev, "max", SELECT_UP, src, nt, self.res, 0, **kw),
                      _reduce.ArgReduction(dev, "max", SELECT_LOW, src, nt, self.res, 1, **kw)]
        u = {"gamma": self.gamma, "C": C}
        if self.fuse_gain:
            chains.append(_reduce.ArgReduction(
                dev, "min", SELECT_SECOND, dict(self.data.inputs, SEL=self.res, **src), nt,
                self.res, 2, payload=self.G[k], fanin=self.fanin, strict_scan=True,
                first_uniforms={"C": C, "gamma": self.gamma}))
        elif self.working_set == "second-order":
            if not self.split:
                chains.append(dev.prepare(OBJECTIVE, {"OUT": self.obj, "KI": self.krow},
                                          inputs=dict(self.data.inputs, RES=self.res, **src),
                                          uniforms=u))
            else:
                chains.append(dev.prepare(OBJECTIVE_D2, self.d2,
                                          inputs=dict(self.data.inputs, RES=self.res)))
                chains.append(dev.prepare(OBJECTIVE_FROM_D2, self.obj,
                                          inputs=dict(src, RES=self.res, D=self.d2), uniforms=u))
            chains.append(_reduce.ArgReduction(
                dev, "min", _reduce.ARG_FIRST[(True, False)], {"V": self.obj}, nt, self.res, 2,
                payload=self.G[k], fanin=self.fanin, strict_scan=True))
        elif self.device_step and self.ksrc == 2:
            # first-order device step: the distances to i give K_ij
            chains.append(dev.prepare(OBJECTIVE_D2, self.d2,
                                      inputs=dict(self.data.inputs, RES=self.res)))
        return chains

    def _updates(self):
        """Per parity k: passes reading G[k], A[k] and writing G[1-k], A[1-k]."""
        dev = self.dev
        out = []
        if self.split:
            dh, dl = self._keep(self.data.vector()), self._keep(self.data.vector())
            if self.device_step:
                d2 = dev.prepare(PAIR_D2_STEP, [dh, dl], inputs=dict(self.data.inputs,
                                                                     RES=self.res),
                                 defines={"SECOND_ORDER": int(self.working_set ==
                                                              "second-order")})
            else:
                d2 = dev.prepare(RBF_PAIR_D2, [dh, dl], inputs=self.data.inputs)
        step_u = {"gamma": self.gamma, "tol": self.tol, "C": float(np.float32(self.C)),
                  "max_iter": float(min(self.max_iter, _MAX_COUNT)),
                  "state_texel": self.state_texel}
        step_d = {"SECOND_ORDER": int(self.working_set == "second-order")}
        ksrc_in = {0: {}, 1: {"KI": self.krow}, 2: {"D": self.d2}}[self.ksrc]
        for k in (0, 1):
            vec = {"G": self.G[k], "A": self.A[k], "Y": self.Y}
            outs = [self.G[1 - k], self.A[1 - k]]
            u = {"gamma": self.gamma}
            if self.device_step:
                ins = dict(vec, RES=self.res, **ksrc_in)
                if not self.split:
                    out.append([dev.prepare(UPDATE_STEP[self.ksrc], outs,
                                            inputs=dict(self.data.inputs, **ins),
                                            uniforms=step_u, defines=step_d)])
                else:
                    out.append([d2, dev.prepare(UPDATE_STEP_FROM_D2, outs,
                                                inputs=dict(ins, DH=dh, DL=dl),
                                                uniforms=step_u, defines=step_d)])
            elif not self.split:
                out.append([dev.prepare(UPDATE, outs, inputs=dict(self.data.inputs, **vec),
                                        uniforms=u)])
            else:
                out.append([d2, dev.prepare(UPDATE_FROM_D2, outs,
                                            inputs=dict(vec, DH=dh, DL=dl), uniforms=u)])
        return out

    def solve(self):
        dev = self.dev
        sel = []
        with dev.phase("svm/init"):
            dev.fill(self.G[0], -1.0)
            dev.fill(self.A[0], 0.0)     # alphas, and the device step's state (0, 0, 0, 0)
        try:
            sel.append(self._chains(0))
            sel.append(self._chains(1))
            upd = self._updates()
            if self.device_step:
                cur = self._solve_device(sel, upd)
                self.alpha = self.A[cur].get()[:self.n].astype(np.float64)
            else:
                cur = self._solve_host(sel, upd)
            G = self.G[cur].get()[:self.n].astype(np.float64)
            self.G_final = G
            self.rho = _rho(self.alpha, G, self.y, self.C)
            self.objective = 0.5 * float(self.alpha @ (G - 1.0))
        finally:  # release the chains on every path (errors included)
            for chs in sel:
                for ch in chs:
                    if hasattr(ch, "release"):
                        ch.release()
        return self

    def _state(self, a) -> np.ndarray:
        """The device step's state texel (iterations, flag, gap, 0) of alpha vector ``a``."""
        x, y, _ = a.layout.texel_of(0, 4 * self.state_texel)
        self.dev.activate()
        # the device's framebuffer cache: keyed by the texture, dropped when it is deleted (a
        # cache of our own keyed by id(a) could outlive a and hand its id to another array)
        fbo = self.dev._framebuffer([a])
        return np.frombuffer(fbo.read(viewport=(x, y, 1, 1), components=4, dtype="f4"),
                             np.float32)[:4]

    def _solve_device(self, sel, upd) -> int:
        """Iterations with the step on the device; the state is read every k iterations."""
        dev = self.dev
        k = self.readback_every
        # one iteration: the selection passes, then the update passes, per parity
        seq = [[p for ch in sel[c] for p in (ch.passes if hasattr(ch, "passes") else [ch])]
               for c in (0, 1)]
        upd = [list(u) for u in upd]
        cnt = dev.counter
        outer = cnt.label
        cur = 0
        try:
            while True:
                for _ in range(k):
                    # the counter's phase label set directly (no context manager per pass
                    # group: the issue loop is the cost of an iteration on a fast GPU)
                    cnt.label = "svm/select"
                    for p in seq[cur]:
                        p.run()
                    cnt.label = "svm/update"
                    for p in upd[cur]:
                        p.run()
                    cur = 1 - cur
                cnt.label = outer
                st = self._state(self.A[cur]).astype(np.float64)
                flag = int(st[1])
                if flag:
                    break
        finally:
            cnt.label = outer
        self.n_iter = int(st[0])
        self.gap = float(st[2])
        if flag == 3:
            raise FloatingPointError("SMO: NaN in the gradient (check the data and gamma)")
        self.converged = flag == 1
        return cur

    def _solve_host(self, sel, upd) -> int:
        """Iterations with the step on the host (one 3-texel readback per iteration)."""
        dev = self.dev
        C, n, y = self.C, self.n, self.y
        Xh = self.data.host.astype(np.float64)
        alpha = np.zeros(n)
        cur = 0
        it = 0
        gap = np.inf
        self.converged = False
        while True:
            with dev.phase("svm/select"):
                for ch in sel[cur]:
                    ch.run()
            r = self.res.get().reshape(3, 4).astype(np.float64)
            gmax, gmax2 = r[0, 0], r[1, 0]
            gap = gmax + gmax2
            if np.isnan(gap):
                raise FloatingPointError("SMO: NaN in the gradient (check the data and "
                                         "gamma)")
            if gap < self.tol:
                self.converged = True
                break
            i, Gi = int(r[0, 1]), r[0, 2]
            if self.working_set == "second-order":
                if r[2, 1] >= _reduce.MAX_INDEX:
                    self.converged = True
                    break
                j, Gj = int(r[2, 1]), r[2, 2]
            else:
                j, Gj = int(r[1, 1]), r[1, 2]
            if it >= self.max_iter:
                break
            diff = Xh[i] - Xh[j]
            Kij = float(np.exp(-self.gamma * diff.dot(diff)))
            ai, aj = alpha[i], alpha[j]
            ni, nj = _two_variable_step(ai, aj, y[i], y[j], Gi, Gj, Kij, C)
            alpha[i], alpha[j] = ni, nj
            u = dict(h=i, l=j, ch=float(y[i] * (ni - ai)), cl=float(y[j] * (nj - aj)),
                     a_h=float(ni), a_l=float(nj))
            with dev.phase("svm/update"):
                for p in upd[cur]:
                    p.run(**{k: v for k, v in u.items() if k in p.kernel.uniforms})
            cur = 1 - cur
            it += 1
        self.n_iter = it
        self.gap = gap
        self.alpha = alpha
        return cur

    def release(self):
        for a in self._arrays:
            a.release()
        self._arrays = []
        self.data.release()


def _two_variable_step(ai, aj, yi, yj, Gi, Gj, Kij, C):
    """libsvm's analytic solution of the two-variable subproblem (RBF: K_ii = K_jj = 1)."""
    Ci = Cj = C
    if yi != yj:
        quad = 2.0 + 2.0 * (-Kij)
        quad = quad if quad > 0 else TAU
        delta = (-Gi - Gj) / quad
        d = ai - aj
        ai += delta
        aj += delta
        if d > 0:
            if aj < 0:
                aj, ai = 0.0, d
        else:
            if ai < 0:
                ai, aj = 0.0, -d
        if d > Ci - Cj:
            if ai > Ci:
                ai, aj = Ci, Ci - d
        else:
            if aj > Cj:
                aj, ai = Cj, Cj + d
    else:
        quad = 2.0 - 2.0 * Kij
        quad = quad if quad > 0 else TAU
        delta = (Gi - Gj) / quad
        s = ai + aj
        ai -= delta
        aj += delta
        if s > Ci:
            if ai > Ci:
                ai, aj = Ci, s - Ci
        else:
            if aj < 0:
                aj, ai = 0.0, s
        if s > Cj:
            if aj > Cj:
                aj, ai = Cj, s - Cj
        else:
            if ai < 0:
                ai, aj = 0.0, s
    return ai, aj


def _rho(alpha, G, y, C):
    """libsvm's bias: mean of y G over free alphas, else the middle of the feasible range."""
    yG = y * G
    upper = alpha >= C
    lower = alpha <= 0
    free = ~upper & ~lower
    if free.any():
        return float(yG[free].mean())
    ub_set = (upper & (y < 0)) | (lower & (y > 0))
    lb_set = (upper & (y > 0)) | (lower & (y < 0))
    ub = yG[ub_set].min() if ub_set.any() else np.inf
    lb = yG[lb_set].max() if lb_set.any() else -np.inf
    return float((ub + lb) / 2)


# ---- what float32 can hold: checked on the host before any device work ----------------------
_F32_MAX = float(np.finfo(np.float32).max)
#: float32's smallest normal number: a GPU may flush anything smaller to 0
_F32_TINY = float(np.finfo(np.float32).tiny)
#: exp(-t) is 0 in float32 for t past this (exp(-104) < 2^-149, the smallest subnormal)
_EXP_ZERO = 104.0
#: most error the flushing of tiny squared distances may add to a kernel value
#: (gamma x n_features x _F32_TINY): about the float32 rounding of the kernel itself
_UNDERFLOW_TOL = 2.0 ** -20


def _scale_hint(gamma_name):
    return ("scale X (with gamma='scale' the kernel does not change when X is scaled)"
            if gamma_name is None else f"scale X, or {gamma_name} with it")


def check_rbf_range(X, gamma: float, gamma_name: str | None = None) -> None:
    """Refuse data ``X`` (float64 host array) and ``gamma`` whose RBF kernel the device,
    computing ``exp(-gamma sum_k (x_k - y_k)^2)`` in float32, cannot evaluate: values beyond
    float32's range; squared distances past float32's largest value (they overflow to inf)
    unless gamma makes every such pair's kernel 0 anyway (gamma x 3.4e38 >= 104); gamma
    itself outside float32's normal range where it matters (a GPU flushes subnormal numbers
    to 0); and squared distances below float32's smallest normal number (flushed to 0) where
    gamma weighs them (gamma x n_features x 1.2e-38 > 2^-20). ``gamma_name``: the parameter
    that set gamma (None: gamma="scale", derived from X's variance, so that scaling X leaves
    the kernel unchanged). Bounds from the data in
    O(n_samples n_features): the largest squared distance is at most the sum over features
    of their squared ranges. Raises ValueError naming X (and the gamma parameter)."""
    hi = X.max(axis=0).astype(np.float64)
    lo = X.min(axis=0).astype(np.float64)
    n_feat = X.shape[1]
    big = float(max(hi.max(), -lo.min()))
    if big > _F32_MAX:
        raise ValueError(f"X: values up to {big:.3g} are beyond float32's range "
                         f"(+-{_F32_MAX:.4g}); the device holds X in float32")
    span = hi - lo
    top = float(span.max())
    d2_max = top * top * float(((span / top) ** 2).sum()) if top > 0 else 0.0
    fit = math.sqrt(_F32_MAX / n_feat) / 2
    if d2_max >= _F32_MAX and gamma * _F32_MAX < _EXP_ZERO:
        raise ValueError(
            f"X: squared distances between samples reach {d2_max:.3g}, beyond float32's "
            f"largest value {_F32_MAX:.4g}: the device's RBF kernel would overflow (inf, then "
            f"NaN) where gamma = {gamma:.3g} still gives pairs a weight. With {n_feat} "
            f"feature(s) every squared distance fits float32 when |X| <= {fit:.3g} "
            f"(sqrt(3.4e38 / n_features) / 2); {_scale_hint(gamma_name)}")
    if gamma_name is None:
        _check_underflow(gamma, n_feat, big, gamma_name)
    if gamma > _F32_MAX:
        who = f"{gamma_name}={gamma:.3g}" if gamma_name else \
            f"gamma = {gamma:.3g} (from X's variance {1.0 / (gamma * n_feat):.3g})"
        raise ValueError(f"X: {who} is beyond float32's range ({_F32_MAX:.4g}); the "
                         f"device's kernel would be NaN. {_scale_hint(gamma_name)}")
    if gamma < _F32_TINY and gamma * d2_max > _UNDERFLOW_TOL:
        who = f"{gamma_name}={gamma:.3g}" if gamma_name else \
            f"gamma = {gamma:.3g} (from X's variance {1.0 / (gamma * n_feat):.3g})"
        raise ValueError(f"X: {who} is below float32's smallest normal number "
                         f"{_F32_TINY:.3g}, which a GPU flushes to 0 (every kernel value "
                         f"1), while the squared distances of X reach {d2_max:.3g}; "
                         f"{_scale_hint(gamma_name)}")
    _check_underflow(gamma, n_feat, big, gamma_name)


def _check_underflow(gamma, n_feat, big, gamma_name):
    if gamma * n_feat * _F32_TINY > _UNDERFLOW_TOL:
        most = _UNDERFLOW_TOL / (n_feat * _F32_TINY)
        who = f"{gamma_name}={gamma:.3g}" if gamma_name else \
            f"gamma = {gamma:.3g} (from X's variance {1.0 / (gamma * n_feat):.3g})"
        raise ValueError(
            f"X: squared distances below float32's smallest normal number "
            f"{_F32_TINY:.3g} (|X| is at most {big:.3g} here) are flushed to 0 on the device, "
            f"while {who} weighs them: the kernel's exponent gamma x d^2 could be off by up "
            f"to {gamma * n_feat * _F32_TINY:.3g}. gamma must be at most {most:.3g} "
            f"(2^-20 / (n_features x 1.2e-38)) for X in float32; {_scale_hint(gamma_name)}")


def check_fits(dev, n_points: int, n_features: int) -> None:
    """Refuse, before any allocation, a binary problem of ``n_points`` training points whose
    device arrays (the data in two layouts, the per-point vectors) would not fit ``dev``'s
    texture limit; ValueError naming X."""
    mx = dev.max_texture_size
    npad = _padded(n_points)
    try:
        for order in ("col", "row"):
            Layout(npad, int(n_features), True, order, mx)
        if _rbf.VECTOR_WRAP is not None:
            Layout.wrapped_vector(npad, _rbf.VECTOR_WRAP, mx)
        else:
            Layout(1, npad, True, "row", mx)
    except TooLargeError:
        texels = npad * ceil_div(int(n_features), 4)
        raise ValueError(
            f"X: {n_points} samples x {n_features} features do not fit this device: one "
            f"binary problem's training data (its points padded to {npad}) take {texels} "
            f"texels per copy, more than the {mx} x {mx} = {mx * mx} texels of one texture "
            f"(the device's max_texture_size {mx}); use fewer samples or features") from None



class SVC(ClassifierMixin, BaseEstimator):
    """C-support vector classifier with an RBF kernel, trained by SMO on the device.

    A scikit-learn estimator (``clone``, pipelines, ``GridSearchCV``, ``cross_val_score``).
    Parameters follow ``sklearn.svm.SVC``: ``C`` (> 0), ``kernel`` ("rbf" only), ``gamma``
    ("scale" = 1 / (n_features * X.var()), "auto" = 1 / n_features, or a positive float),
    ``tol`` (duality-gap stopping tolerance), ``max_iter`` (-1: libsvm's cap,
    max(10^7, 100 n)), ``decision_function_shape`` ("ovr" or "ovo"). ``working_set``:
    "second-order" (libsvm's default) or "first-order" (maximal violating pair).
    ``device``: a :class:`~shadergpgpu.engine.device.Device` (default: the process-wide one).
    ``fanin``: reduction fan-in; ``fused_select``: run the I_up and I_low selections as one
    two-result reduction (half the selection passes). ``readback_every``: k > 1 (default
    :data:`READBACK_EVERY`) solves the two-variable step on the device and reads the solver's
    state only every k iterations (at most k - 1 no-op iterations past the stop); 1 solves the
    step on the host from one small readback per iteration (the earlier path).

    Training data are float32 on the device (float64 input is converted); predictions are
    computed on the host in float64 from the support vectors. ``y`` must be class labels:
    continuous targets are refused (``Unknown label type``).

    Fitted attributes: ``classes_``, ``n_features_in_`` (and ``feature_names_in_``),
    ``support_``, ``support_vectors_``, ``n_support_``, ``dual_coef_``, ``intercept_``,
    ``n_iter_``, ``dual_objective_``, ``fit_time_``, ``n_passes_``.
    """

    def __init__(self, C=1.0, kernel="rbf", gamma="scale", tol=1e-3, max_iter=-1,
                 working_set="second-order", decision_function_shape="ovr", device=None,
                 fanin=None, fused_select=True, readback_every=READBACK_EVERY):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.tol = tol
        self.max_iter = max_iter
        self.working_set = working_set
        self.decision_function_shape = decision_function_shape
        self.device = device
        self.fanin = fanin
        self.fused_select = fused_select
        self.readback_every = readback_every

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        tags.input_tags.allow_nan = False
        return tags

    # ---- validation ------------------------------------------------------------------------
    def _check_params(self, X):
        val.choice(self.kernel, "kernel", ("rbf",))
        val.real(self.C, "C", lo=0.0, closed="neither")
        val.real(self.tol, "tol", lo=0.0, closed="neither")
        val.choice(self.working_set, "working_set", ("first-order", "second-order"))
        val.choice(self.decision_function_shape, "decision_function_shape", ("ovr", "ovo"))
        if self.max_iter != -1:
            val.integer(self.max_iter, "max_iter", lo=1)
        if self.fanin is not None:
            _reduce._check_fanin(self.fanin)
        val.integer(self.readback_every, "readback_every", lo=1)
        if isinstance(self.gamma, str):
            val.choice(self.gamma, "gamma", ("scale", "auto"))
            if self.gamma == "scale":
                var = float(np.asarray(X, np.float64).var())
                return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
            return 1.0 / X.shape[1]
        return val.real(self.gamma, "gamma", lo=0.0, closed="neither")

    def fit(self, X, y):
        """Train one binary SMO problem per pair of classes (one-vs-one)."""
        X, y = validate_data(self, X, y, dtype=[np.float64, np.float32], ensure_min_samples=2)
        check_classification_targets(y)
        classes, yi = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"y has a single class ({classes[0]!r}); a classifier needs two "
                             "or more classes")
        if len(X) >= _reduce.MAX_INDEX:
            raise ValueError(f"X has {len(X)} points; at most {_reduce.MAX_INDEX - 1} "
                             "(float32 indices)")
        # sizes first, from the shapes alone: nothing is allocated for a problem the device
        # cannot hold (the largest one-vs-one problem: the two largest classes)
        dev = val.pick_device(self.device, [])
        counts = np.sort(np.bincount(yi))
        check_fits(dev, int(counts[-1] + counts[-2]), X.shape[1])
        gamma = self._check_params(X)
        check_rbf_range(X, gamma, None if (isinstance(self.gamma, str) and
                                          self.gamma == "scale") else "gamma")
        X = X.astype(np.float32)
        self.classes_ = classes
        self._gamma = gamma
        nc = len(classes)
        t0 = time.perf_counter()
        counter0 = dev.counter.total
        per_pair = []
        for a in range(nc):
            for b in range(a + 1, nc):
                idx = np.flatnonzero((yi == a) | (yi == b))
                yy = np.where(yi[idx] == a, 1.0, -1.0)
                n = len(idx)
                max_iter = self.max_iter if self.max_iter != -1 else max(10_000_000, 100 * n)
                prob = BinarySMO(dev, X[idx], yy, self.C, gamma, self.tol, max_iter,
                                 self.working_set, self.fanin, self.fused_select,
                                 self.readback_every)
                try:
                    prob.solve()
                finally:
                    prob.release()
                if not prob.converged:
                    warnings.warn(f"SMO stopped at max_iter={max_iter} before the duality gap "
                                  f"fell below tol (gap {prob.gap:.3g})", RuntimeWarning)
                per_pair.append((a, b, idx, prob))
        self.fit_time_ = time.perf_counter() - t0
        self.n_passes_ = dev.counter.total - counter0
        self._assemble(X, yi, per_pair)
        return self

    def _assemble(self, X, yi, per_pair):
        nc = len(self.classes_)
        sv_mask = np.zeros(len(X), bool)
        for a, b, idx, p in per_pair:
            sv_mask[idx[p.alpha > 0]] = True
        # support vectors grouped by class, ascending index within a class (libsvm order)
        support = np.concatenate([np.flatnonzero(sv_mask & (yi == c)) for c in range(nc)])
        pos = {int(s): k for k, s in enumerate(support)}
        coef = np.zeros((nc - 1, len(support)))
        intercept = np.zeros(len(per_pair))
        for p_i, (a, b, idx, p) in enumerate(per_pair):
            c = p.alpha * p.y
            for t in np.flatnonzero(p.alpha > 0):
                s = pos[int(idx[t])]
                row = b - 1 if yi[idx[t]] == a else a
                coef[row, s] = c[t]
            intercept[p_i] = -p.rho
        self.support_ = support.astype(np.int32)
        self.support_vectors_ = X[support].astype(np.float64)
        self.n_support_ = np.array([np.sum(yi[support] == c) for c in range(nc)], np.int32)
        self.n_iter_ = np.array([p.n_iter for *_, p in per_pair], np.int32)
        self.dual_objective_ = np.array([p.objective for *_, p in per_pair])
        self._dual_coef_ovo = coef
        self._intercept_ovo = intercept
        if nc == 2:  # scikit-learn's sign convention: positive decision -> classes_[1]
            self.dual_coef_ = -coef
            self.intercept_ = -intercept
        else:
            self.dual_coef_ = coef
            self.intercept_ = intercept
        return self

    # ---- prediction (host, float64) -------------------------------------------------------
    def _check_fitted(self, X):
        check_is_fitted(self, "support_")
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        big = float(max(X.max(), -X.min()))
        if big > _F32_MAX:
            raise ValueError(f"X: values up to {big:.3g} are beyond float32's range "
                             f"(+-{_F32_MAX:.4g}); the model was trained on float32 data")
        return X.astype(np.float32).astype(np.float64)

    def _ovo(self, X):
        """libsvm's pairwise decision values, (n, n_pairs); positive -> the first class."""
        nc = len(self.classes_)
        starts = np.concatenate([[0], np.cumsum(self.n_support_)])
        out = np.empty((len(X), nc * (nc - 1) // 2))
        # both sides moved by the support vectors' centre: rbf_matrix_host's |a|^2 + |b|^2 -
        # 2 a.b then cancels relative to the data's spread, not to its offset (data at 1e4
        # with a spread of 1e-3 lost ~5% of every squared distance in float64 otherwise)
        sv = self.support_vectors_
        centre = sv.mean(axis=0) if len(sv) else np.zeros(X.shape[1])
        sv = sv - centre
        for lo in range(0, len(X), 2048):
            K = rbf_matrix_host(X[lo:lo + 2048] - centre, sv, self._gamma)
            p = 0
            for a in range(nc):
                sa = slice(starts[a], starts[a + 1])
                for b in range(a + 1, nc):
                    sb = slice(starts[b], starts[b + 1])
                    out[lo:lo + 2048, p] = (K[:, sa] @ self._dual_coef_ovo[b - 1, sa] +
                                            K[:, sb] @ self._dual_coef_ovo[a, sb] +
                                            self._intercept_ovo[p])
                    p += 1
        return out

    def decision_function(self, X):
        """Decision values: (n,) for two classes (positive -> ``classes_[1]``), else (n,
        n_classes) ("ovr", libsvm's vote-based transform) or (n, n_pairs) ("ovo").

        Accuracy: computed on the host in float64 from ``support_vectors_`` (the float32
        training data), ``dual_coef_``, ``intercept_`` and gamma, both sides centred on the
        support vectors' mean first, so f(x) = sum_s c_s exp(-gamma |x - x_s|^2) + b is the
        fitted model's to float64 rounding: |f - f64| <= (n_SV + n_features + 4) 2^-53
        (sum |c_s| (1 + gamma d2_max) + |b|). X is rounded to float32 as the training data
        were; X beyond float32's range is refused (ValueError naming X).

        The model itself is the float32 solver's (u = 2^-24). Each kernel value it uses,
        exp(-gamma d^2) with d^2 summed in float32 over the features, is within
        (n_features + 6) u of the exact one (t e^-t <= 1/e bounds the propagated error of
        d^2), and ``fit`` refuses the data and gammas where float32 could not hold the
        squared distances (:func:`check_rbf_range`). The gradient G is updated in float32
        once per iteration, so after ``n_iter_`` iterations ``intercept_`` (libsvm's rule on
        G) is within about (n_iter_ + 1) u (max |G| + 2 C (n_features + 8) + n_SV C) of the
        same rule on float64 G = Q alpha - 1 for the fitted alphas; the stop (duality gap <
        tol) is tested on that float32 G. ``tests/test_algorithm_guards.py`` checks both.
        """
        X = self._check_fitted(X)
        dec = self._ovo(X)
        nc = len(self.classes_)
        if nc == 2:
            return -dec[:, 0]
        if self.decision_function_shape == "ovo":
            return dec
        votes = np.zeros((len(X), nc))
        conf = np.zeros((len(X), nc))
        p = 0
        for a in range(nc):
            for b in range(a + 1, nc):
                win_a = dec[:, p] > 0
                votes[win_a, a] += 1
                votes[~win_a, b] += 1
                conf[:, a] += dec[:, p]
                conf[:, b] -= dec[:, p]
                p += 1
        return votes + conf / (3 * (np.abs(conf) + 1))

    def predict(self, X):
        """Class labels by one-vs-one voting (libsvm's rule)."""
        X = self._check_fitted(X)
        dec = self._ovo(X)
        nc = len(self.classes_)
        votes = np.zeros((len(X), nc), np.int64)
        p = 0
        for a in range(nc):
            for b in range(a + 1, nc):
                win_a = dec[:, p] > 0
                votes[win_a, a] += 1
                votes[~win_a, b] += 1
                p += 1
        return self.classes_[np.argmax(votes, axis=1)]
