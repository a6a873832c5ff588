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

``"fused"``: the modern way on the same engine, loops inside the shaders, the products
register-tiled like SGEMM's 8x4 micro-tile (the step shared through
``shaders/ops/product/tile.glsl``): a fragment computes R (1, 4 or 8, within the device's
render targets; :func:`tile_rows`) rows x 4 columns through R render targets, reusing each
fetched texel R or 4 times. The weights live column-packed (4 consecutive inputs of a neuron
per texel: the operand layout of the forward product). Per weight layer:

* forward: one direct pass (fewer than 8 inputs, or R = 1: the loop computes and applies f),
  or the tiled product of W^T A into R targets and one pass gathering them and applying f
  (the output layer's gather also writes the output error, two render targets);
* error backpropagation: one direct pass (four or fewer upper neurons), or the tiled product
  of W D' into R targets and one pass gathering them times a (1 - a);
* update: one tiled pass of partial gradient sums over chunks of training vectors, written in
  the weights' layout, and one pass adding them and applying the step.

Two passes are saved where the data allow: the first hidden layer's errors feed only the first
gradient, so with at most four neurons above it they are made inside that gradient (no
backprop pass into it); and a first hidden layer over at most three inputs (the paper's
networks) is not stored at all: the output layer's forward product and both gradients make its
activations again from the inputs (one fetch per row, as reading it would cost). So a step takes
4K - 3 to 6K - 2 passes (K >= 2; 5 for the paper's 2-64-1, 10 for 64-256-10), independent
of N (on uniform blocks, below: 4 for the paper's 2-64-1; 64-256-10 one more for its first
layer's second weight window).

On uniform blocks (a native device with 64 KiB windows: ``BackpropTuning.ubo``, :mod:`.ubo`),
the operand every fragment of a draw reads alike, the weights, comes from uniform-block windows (the
constant cache) instead of texel fetches. A network of one hidden layer over at most three
inputs and at most four outputs (the paper's 2-64-1, 2-1024-1) takes the recompute path: one
pass propagates forward through both layers, making each hidden activation in registers from
the inputs and the first weights and adding it into the output (both weight matrices read from
blocks at one address per loop step), and writes the output error; a second walks the training
vectors per hidden unit, making its activation again and adding the gradients of both layers;
one apply pass per layer: 4 passes, and neither the hidden activations nor their errors are
stored (2-1024-1, N = 16,384: they would be 67 MB each way through the fragment path; recomputed,
the flops of the hidden layer double and its bytes vanish). Other networks keep the passes
above, their forward products reading the weights from blocks
(``BackpropTuning.ubo_forward``: one draw per 64 KiB window, so a layer of more weights takes one more pass per window). The legacy and
mobile profiles (16 KiB windows or none) and a software rasteriser keep the texture path.

Where buffer textures exist, a software rasteriser reads the weights and the inputs through
buffer copies (refreshed after each update), which it fetches faster; a GPU reads the textures
themselves, the refresh costing it more than it saves (:class:`BackpropTuning` holds the
choices, per device kind; docs/performance.md has the figures).

Loop budget: every kernel with a loop declares it (``loop=`` or a ``Split``), so a layer wider
than the device's loop cap (llvmpipe stops a fragment's loops after 65,535 iterations) is never
silently truncated. The tiled products, apply and loss loops are linear in their sum and are cut
by the engine over accumulating passes; a direct forward layer whose inputs exceed the cap runs
as the tiled product (R = 1) cut the same way, then the gather pass applying f.
:func:`shadergpgpu.analysis.plans.backprop.fused_phases` gives the exact count.

Device profiles (``Device(profile=...)``, e.g. the paper's GeForce 7800 GTX): both schedules
adapt instead of failing. Accumulation goes through ``accumulate="add"``, which the engine turns
into ping-pong passes (draw into a temporary, combine, copy back: 1 + 2 per output) where the
device has no float32 blending; tiles use at most the profile's draw buffers; loops are cut at
its loop cap; arrays wrap at its texture size. The pass plans (:mod:`shadergpgpu.analysis.plans.backprop`)
take ``profile=`` (or ``device=``), so the plan equals the counter under every profile.

Where things live (the public names are re-exported here, so ``backprop.MLP``,
``backprop.BackpropNet`` ... keep working):

* ``kernels.py``: the kernels of both schedules, declared once (``shaders/algorithms/backprop/``).
* ``geometry.py``: what the schedules adapt to (:func:`limits`), the choices made from it
  (:func:`tile_rows`, :func:`update_chunk`, squarish temporaries, the device's
  :class:`BackpropTuning`) and the passes of split kernels.
* ``tuning.py``: :class:`BackpropTuning`, the fused schedule's choices (set them on the
  device: ``dev.tune(BackpropTuning, ubo=False)``; a net keeps those it was built with).
* ``checks.py``: argument checks, :func:`init_weights`, :func:`net_arrays` and
  :func:`check_net_fits` (every device array checked from the shapes before any allocation).
* ``paper.py``: the paper schedule's passes (prepares a net's step).
* ``fused.py``: the fused schedule's passes (forward, backprop, buffer mirrors; prepares a net's
  step).
* ``ubo.py``: the fused schedule on uniform blocks: the recompute path's passes, the windowed
  forward products and the weights' block copies (:class:`~.ubo.BlockMirror`).
* ``network.py``: :class:`BackpropNet` (the network on the device), :class:`Probe`,
  :func:`device_forward`; ``SCHEDULES``.
* ``reference.py``: the float64 numpy reference (:func:`numpy_forward`, :func:`numpy_step`,
  :class:`NumpyMLP`).
* ``minibatch.py``: :class:`MinibatchTrainer`, scikit-learn's stochastic training (mini-batches
  gathered from the resident data, softmax / logistic / identity outputs, SGD and Adam) in
  ``3 K`` passes a batch (``shaders/algorithms/backprop/mb_*.frag``).
* ``estimator.py``: the scikit-learn estimators :class:`MLPClassifier` and
  :class:`MLPRegressor` (alias :class:`MLP`): scikit-learn's own, trained on the device by
  :mod:`.minibatch` (``schedule="fused"``) or by the paper's :class:`BackpropNet`
  (``schedule="paper"``; with a Dask ``client`` they find the data-parallel driver through
  :mod:`shadergpgpu.engine.runners`).
"""
from __future__ import annotations

# every submodule imported: the kernels are declared on import
from . import (checks, estimator, fused, geometry, kernels, minibatch, network, paper, paper_fit,
               reference, tuning, ubo)
from .geometry import FRAGMENT_COST, FUSE_MAX_UP, limits, tile_rows, update_chunk
from .checks import check_net_fits, init_weights, net_arrays
from .estimator import MLP, MLPClassifier, MLPRegressor
from .minibatch import MinibatchTrainer
from .kernels import GRID_VIEW, TILE_ROWS
from .network import SCHEDULES, BackpropNet, Probe, device_forward
from .reference import NumpyMLP, numpy_forward, numpy_step
from .tuning import BackpropTuning

__all__ = ["BackpropNet", "BackpropTuning", "FRAGMENT_COST", "FUSE_MAX_UP", "GRID_VIEW", "MLP",
           "MLPClassifier", "MLPRegressor", "MinibatchTrainer", "NumpyMLP",
           "Probe", "SCHEDULES", "TILE_ROWS", "geometry", "check_net_fits", "checks",
           "device_forward", "estimator", "fused", "init_weights",
           "kernels", "limits", "minibatch", "net_arrays", "network", "numpy_forward",
           "numpy_step", "paper", "paper_fit", "reference", "tile_rows", "tuning", "ubo",
           "update_chunk"]
