"""One binary C-SVC dual problem solved by SMO on the device (:class:`BinarySMO`): the
selection chains, the update passes, and the two iteration loops (the step solved on the device
with a state readback every k iterations, or on the host from a small readback per iteration).
"""
from __future__ import annotations

import numpy as np

from ...ops import reduce as _reduce
from ...ops.rbf import RBF_PAIR_D2, RBFData, over_cap
from .kernels import (OBJECTIVE, OBJECTIVE_D2, OBJECTIVE_FROM_D2, PAIR_D2_STEP, SELECT_LOW,
                      SELECT_PAIR, SELECT_SECOND, SELECT_UP, UPDATE, UPDATE_FROM_D2,
                      UPDATE_STEP, UPDATE_STEP_FROM_D2)
from .libsvm import libsvm_rho, two_variable_step
from .choices import padded_count, walk_fits, gain_fused
from .tuning import SvmTuning

#: iterations between two readbacks of the step state by default (the stopping test)
READBACK_EVERY = 32
#: iteration counts travel as float32 on the device: exact below this
_MAX_COUNT = 2 ** 24 - 1


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
        # DIRECT (selection, objective, update and step kernels): the fragment's own texels of
        # G, A, Y at its pixel and the 1-D vectors' elements at row_texel() (step.glsl),
        # instead of the accessors, which divide by the shape uniforms. The same texels, so
        # the same results (SvmTuning.direct).
        tuning = dev.tuning(SvmTuning)
        self.direct = int(tuning.direct)
        self.fanin = _reduce.fanin_for(dev, fanin)
        npad = padded_count(n)
        self._arrays = []
        self.data = RBFData(dev, X, n_pad=npad)
        self.split = over_cap(dev, self.data.d)
        second = working_set == "second-order"
        # where the device step reads K_ij: the kernel row of i (second-order), a walk over
        # the features of x_i and x_j (first-order), or the distances to i (past the cap)
        self.fuse_gain = not self.split and gain_fused(npad, self.data.d, self.fanin,
                                                         dev.loop_cap, working_set,
                                                         tuning.fuse_gain)
        if self.split or (not second and not walk_fits(self.data.d, dev.loop_cap)):
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
        cpu = {"DIRECT": self.direct}     # the CPU renderer's variant (see __init__)
        kw = dict(payload=self.G[k], fanin=self.fanin, strict_scan=True,
                  first_uniforms={"C": C}, first_defines=cpu)
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
                first_uniforms={"C": C, "gamma": self.gamma}, first_defines=cpu))
        elif self.working_set == "second-order":
            if not self.split:
                chains.append(dev.prepare(OBJECTIVE, {"OUT": self.obj, "KI": self.krow},
                                          inputs=dict(self.data.inputs, RES=self.res, **src),
                                          uniforms=u, defines=cpu))
            else:
                chains.append(dev.prepare(OBJECTIVE_D2, self.d2,
                                          inputs=dict(self.data.inputs, RES=self.res)))
                chains.append(dev.prepare(OBJECTIVE_FROM_D2, self.obj,
                                          inputs=dict(src, RES=self.res, D=self.d2), uniforms=u,
                                          defines=cpu))
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
                                                              "second-order"),
                                          "DIRECT": self.direct})
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
            cpu = {"DIRECT": self.direct}
            if self.device_step:
                ins = dict(vec, RES=self.res, **ksrc_in)
                if not self.split:
                    out.append([dev.prepare(UPDATE_STEP[self.ksrc], outs,
                                            inputs=dict(self.data.inputs, **ins),
                                            uniforms=step_u, defines=dict(step_d, **cpu))])
                else:
                    out.append([d2, dev.prepare(UPDATE_STEP_FROM_D2, outs,
                                                inputs=dict(ins, DH=dh, DL=dl),
                                                uniforms=step_u, defines=dict(step_d, **cpu))])
            elif not self.split:
                out.append([dev.prepare(UPDATE, outs, inputs=dict(self.data.inputs, **vec),
                                        uniforms=u, defines=cpu)])
            else:
                out.append([d2, dev.prepare(UPDATE_FROM_D2, outs,
                                            inputs=dict(vec, DH=dh, DL=dl), uniforms=u,
                                            defines=cpu)])
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
            self.rho = libsvm_rho(self.alpha, G, self.y, self.C)
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
        return self.dev.read_rect(a, (x, y, 1, 1))[:4]

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
            ni, nj = two_variable_step(ai, aj, y[i], y[j], Gi, Gj, Kij, C)
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
