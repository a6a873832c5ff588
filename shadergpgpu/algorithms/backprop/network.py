"""The network on the device: :class:`BackpropNet` (weights, activations, errors and targets in
textures, trained step by step), :class:`Probe` (forward passes over fixed inputs, for displays)
and :func:`device_forward` (outputs of given weights). The schedules' passes are prepared by
:mod:`.paper` and :mod:`.fused`.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import validation as val
from . import fused, paper
from .geometry import squarish_layout_of, limits
from .checks import check_sizes, check_targets, check_weights, check_net_fits, init_weights
from .fused import forward_passes
from .kernels import LOSS

#: the two schedules of a learning step: the paper's passes, or the fused kernels
SCHEDULES = ("paper", "fused")


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
        self.sizes = L = check_sizes(sizes)
        self.schedule = val.choice(schedule, "schedule", SCHEDULES)
        self._api_event = f"api:backprop-{self.schedule}"
        self.packed = p = bool(packed)
        self.lr = val.real(lr, "lr", lo=0.0, closed="neither")
        X = val.array(X, "X").astype(np.float64)
        if X.shape[1] != L[0]:
            raise ValueError(f"X: expected {L[0]} columns (sizes[0]), got shape {X.shape}")
        T = check_targets(T, X.shape[0], "T")
        if T.shape[1] != L[-1]:
            raise ValueError(f"T: expected {L[-1]} output columns, got {T.shape[1]}")
        self.N = N = X.shape[0]
        self.K = K = len(L) - 1
        # every device array checked from the shapes before anything is made (an impossible
        # layer width is refused at once, not after initialising gigabytes of weights)
        check_net_fits(limits(device=dev), L, N, p, self.schedule)
        if weights is None:
            weights = init_weights(L, seed)
        weights = check_weights(weights, "weights", sizes=L)
        self._arrays = []
        self.A = [self._array(np.vstack([np.ones((1, N)), X.T]))]
        self.A += [self._empty((L[m] + 1, N)) for m in range(1, K)]
        self.D = [None] + [self._empty((L[m] + 1, N)) for m in range(1, K)]
        # the output layer: a thin strip of texels (few outputs, many training vectors) is
        # wrapped into a squarer texture for the fused schedule, whose kernels loop per fragment
        out_lay = (squarish_layout_of(dev, L[K] + 1, N, p) if self.schedule == "fused"
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
        # the schedules: a list of (phase, [(pass, uniform name or None, values)]) per parity
        if self.schedule == "paper":
            paper.build(self)
        else:
            fused.build(self)

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

    # -- training
    def step(self, n: int = 1) -> None:
        """Issue ``n`` learning steps (no readback, no wait)."""
        phase = self.dev.phase
        # the call's host work, reported per schedule (their Python differs)
        self.dev.report(self._api_event)
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
            self._refresh_copies()
            self.steps_done += 1

    def _refresh_copies(self) -> None:
        """Bring the current weights' copies (buffer mirrors, uniform blocks) up to date."""
        for mi in getattr(self, "_mirrors", [[], []])[self.parity]:
            if mi is not None:
                mi.refresh()
        for mi in getattr(self, "_refresh", [[], []])[self.parity]:
            mi.refresh()

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
        weights = check_weights(weights, "weights", sizes=self.sizes)
        for a, w in zip(self.W[self.parity], weights):
            a.set(w)
        self._refresh_copies()

    def outputs(self) -> np.ndarray:
        """Network outputs (N, MO) of the last forward pass."""
        return self.A[-1].get()[1:].T.astype(np.float64)

    def probe(self, X) -> "Probe":
        """Outputs of the current weights for other inputs X, kept on the device (displays)."""
        return Probe(self, X)

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
                         for q in forward_passes(dev, net.packed, net.W[par][m], self.A[m],
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
    weights = check_weights(weights, "weights", n_features=X.shape[1])
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
                for q in forward_passes(dev, packed, W, A, nxt, keep=made):
                    q.run()
                A = nxt
        out = A.get()[1:].T.astype(np.float64)
        for a in made:
            a.release()
    return out
