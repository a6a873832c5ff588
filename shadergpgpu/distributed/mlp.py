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


def fit_mlp(est, X, T, client=None, n_shards=None):
    """Data-parallel full-batch training of ``est`` (an ``MLP`` / ``MLPClassifier``) on X
    (N, MI) and targets T (N, MO) in [0, 1]: the training vectors are split in row shards over
    the workers (each shard's BackpropNet stays on its worker's device), every step broadcasts
    the weights, each shard takes one step from them on its device and returns its weight
    change, and the client sums the changes (the gradient of the summed error is the sum of
    the shards' gradients). Sets the fitted attributes as ``fit`` does; the ``callback``
    receives ``None`` for the network (there is no single device net)."""
    from ..algorithms import backprop as bp
    hidden = est._check_params()
    X = np.asarray(X, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    sizes = [X.shape[1], *hidden, T.shape[1]]
    # the weights as the devices hold them (float32), updated in float64 and rounded once per
    # step: one shard reproduces the single-device run exactly
    W = [np.asarray(w, np.float32) for w in bp.init_weights(sizes, est.seed)]
    params = {"sizes": sizes, "lr": float(est.lr), "schedule": est.schedule,
              "packed": bool(est.packed)}
    import functools
    loss_curve, loss_steps, passes = [], [], {}
    steps, every = int(est.steps), int(est.loss_every)
    done = 0
    with Shards(client, {"X": X, "T": T}, functools.partial(_mlp_setup, params),
                n_shards=n_shards) as sh:
        for s in range(steps):
            want_loss = bool((every and s % every == 0) or s == steps - 1)
            out = sh.map(_mlp_step, W, want_loss, s == 0)
            W = [(np.asarray(w, np.float64) + sum(o[0][m] for o in out)).astype(np.float32)
                 for m, w in enumerate(W)]
            done = s + 1
            if s == 0:
                passes = out[0][2] or {}
            if want_loss:
                loss = float(sum(o[1] for o in out))
                loss_curve.append(loss)
                loss_steps.append(s)
                if est.callback is not None and est.callback(s, loss, None) is False:
                    break
        n_shards = sh.n_shards
    weights = [w.astype(np.float64) for w in W]
    est._set_fitted(weights, sizes, loss_curve, loss_steps, done, passes)
    est.n_shards_ = n_shards
    return est
