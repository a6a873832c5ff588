"""``fit_mlp``: data-parallel full-batch backpropagation, the training vectors in row shards.

The driver behind ``MLP`` / ``MLPClassifier`` ``.fit(X, y, client=)``: each shard holds a
``BackpropNet`` on its rows (:class:`~shadergpgpu.distributed.shards.Shards`); every step
broadcasts the weights and sums the shards' changes.
"""
from __future__ import annotations

import numpy as np

from .shards import Shards


# ---- data-parallel backpropagation -----------------------------------------------------------
def _mlp_setup(params, dev, shard):
    """Shard state: a BackpropNet on this worker's training vectors."""
    from ..algorithms.backprop import BackpropNet
    return BackpropNet(dev, params["sizes"], shard["X"], shard["T"], lr=params["lr"],
                       schedule=params["schedule"], packed=params["packed"])


def _mlp_step(dev, net, weights, want_loss: bool, want_passes: bool):
    """One full-batch step on this shard from the broadcast ``weights``: returns the weight
    change of the shard (``-lr * its gradient``, as float64 differences of the float32
    weights), the loss of its forward pass (if asked) and the passes drawn (if asked)."""
    net.set_weights(weights)
    before = dict(dev.counter.passes) if want_passes else None
    net.step()
    passes = None
    if want_passes:
        passes = {k: v - before.get(k, 0) for k, v in dev.counter.passes.items()
                  if v != before.get(k, 0)}
    loss = net.loss() if want_loss else None
    new = net.weights()
    return [n - np.asarray(w, np.float64) for n, w in zip(new, weights)], loss, passes


def fit_mlp(params, X, T, client=None, n_shards=None):
    """Data-parallel full-batch training of the paper's network on X (N, MI) and targets T
    (N, MO) in [0, 1]: the training vectors are split in row shards over the workers (each
    shard's BackpropNet stays on its worker's device), every step broadcasts the weights,
    each shard takes one step from them on its device and returns its weight change, and the
    client sums the changes (the gradient of the summed error is the sum of the shards'
    gradients).

    params : dict of ``sizes`` (layer widths), ``weights`` (the starting (L_m + 1, L_{m+1})
        matrices, threshold row 0), ``lr``, ``steps`` and ``packed``.
    Returns (weights, loss per step, passes of the first step, shards)."""
    import functools
    X = np.asarray(X, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    # the weights as the devices hold them (float32), updated in float64 and rounded once per
    # step: one shard reproduces the single-device run exactly
    W = [np.asarray(w, np.float32) for w in params["weights"]]
    setup = {"sizes": list(params["sizes"]), "lr": float(params["lr"]), "schedule": "paper",
             "packed": bool(params["packed"])}
    loss_curve, passes = [], {}
    with Shards(client, {"X": X, "T": T}, functools.partial(_mlp_setup, setup),
                n_shards=n_shards) as sh:
        for s in range(int(params["steps"])):
            out = sh.map(_mlp_step, W, True, s == 0)
            W = [(np.asarray(w, np.float64) + sum(o[0][m] for o in out)).astype(np.float32)
                 for m, w in enumerate(W)]
            if s == 0:
                passes = out[0][2] or {}
            loss_curve.append(float(sum(o[1] for o in out)))
        n_shards = sh.n_shards
    return [w.astype(np.float64) for w in W], loss_curve, passes, n_shards
