"""The paper schedule's passes (Takizawa et al. 2009): one accumulating pass per row of A
(forward), per upper neuron (error backpropagation) and per training vector or texel of four
(update), plus the output-error and apply passes the paper does not count.

:func:`build` prepares a :class:`BackpropNet`'s whole step for both weight parities.
"""
from __future__ import annotations

from .kernels import ACTIVATE, BACKPROP_ACCUMULATE, FORWARD_ACCUMULATE, OUT_ERROR, UPDATE_ACCUMULATE
from ...engine.builtin import SAXPY


def build(net) -> None:
    """The paper schedule's passes for ``net`` (a :class:`BackpropNet`): a list of (phase,
    [(pass, uniform name or None, values)]) per parity in ``net._steps``."""
    dev, L, K, A, D, p = net.dev, net.sizes, net.K, net.A, net.D, net.packed
    net.Z = [None] + [net._empty((L[m], net.N)) for m in range(1, K + 1)]
    net.dW = [net._empty((L[m] + 1, L[m + 1]), packed=False) for m in range(K)]
    net._steps = []
    for par in (0, 1):
        W, Wn = net.W[par], net.W[1 - par]
        ops = []
        for m in range(K):
            io = {"W": W[m], "A": A[m]}
            first = dev.prepare(FORWARD_ACCUMULATE[p], net.Z[m + 1], inputs=io, uniforms={"i": 0})
            rest = dev.prepare(FORWARD_ACCUMULATE[p], net.Z[m + 1], inputs=io, accumulate="add")
            act = dev.prepare(ACTIVATE[p], A[m + 1], inputs={"Z": net.Z[m + 1]})
            ops.append(("forward", [(first, None, None), (rest, "i", range(1, L[m] + 1)),
                                    (act, None, None)]))
        oe = dev.prepare(OUT_ERROR[p], D[K], inputs={"Y": A[K], "T": net.T})
        ops.append(("output-error", [(oe, None, None)]))
        for m in range(K - 1, -1, -1):
            io = {"D": D[m + 1], "A": A[m]}
            u = {"eta": net.lr}
            first = dev.prepare(UPDATE_ACCUMULATE[p], net.dW[m], inputs=io,
                                uniforms=dict(u, b=0))
            rest = dev.prepare(UPDATE_ACCUMULATE[p], net.dW[m], inputs=io, uniforms=u,
                               accumulate="add")
            ops.append(("update", [(first, None, None),
                                   (rest, "b", range(1, net.grid_w))]))
            if m > 0:
                io = {"W": W[m], "DUP": D[m + 1], "A": A[m]}
                first = dev.prepare(BACKPROP_ACCUMULATE[p], D[m], inputs=io, uniforms={"k": 0})
                rest = dev.prepare(BACKPROP_ACCUMULATE[p], D[m], inputs=io, accumulate="add")
                ops.append(("backprop", [(first, None, None),
                                         (rest, "k", range(1, L[m + 1]))]))
        apply = [(dev.prepare(SAXPY, Wn[m], inputs={"X": net.dW[m], "Y": W[m]},
                              uniforms={"alpha": 1.0}), None, None) for m in range(K)]
        ops.append(("apply", apply))
        net._steps.append(ops)
