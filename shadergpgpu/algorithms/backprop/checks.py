"""Argument checks, the initial weights, and the size check of a whole network.

:func:`net_arrays` lists every device array a network makes, from the shapes alone;
:func:`check_net_fits` refuses (ValueError naming the argument) a network whose arrays would not
fit one texture, before anything is allocated on the host or the device.
"""
from __future__ import annotations

import math

import numpy as np

from ...engine import validation as val
from ...engine.errors import TooLargeError
from ...engine.layout import Layout
from .geometry import grid_width, squarish_layout, tile_rows, update_chunk


# ---- validation --------------------------------------------------------------------------------
def check_sizes(sizes, name="sizes"):
    try:
        sizes = list(sizes)
    except TypeError:
        raise TypeError(f"{name} must be a sequence of layer widths, got {sizes!r}") from None
    if len(sizes) < 2:
        raise ValueError(f"{name} needs at least an input and an output layer, got {sizes!r}")
    return [val.integer(s, f"{name}[{i}]", lo=1) for i, s in enumerate(sizes)]


def check_targets(t, n, name="T"):
    a = val.array(t, name, ndim=(1, 2))
    if a.ndim == 1:
        a = a[:, None]
    if a.shape[0] != n:
        raise ValueError(f"{name}: has {a.shape[0]} rows but X has {n}")
    if a.min() < 0.0 or a.max() > 1.0:
        raise ValueError(f"{name}: targets must lie in [0, 1] for sigmoid outputs "
                         f"(got min {a.min():g}, max {a.max():g})")
    return a


def check_weights(weights, name="weights", sizes=None, n_features=None):
    """A list of K (L_m + 1, L_{m+1}) real matrices that chain (threshold row 0)."""
    if isinstance(weights, np.ndarray) or not isinstance(weights, (list, tuple)):
        raise TypeError(f"{name} must be a list of weight matrices, got "
                        f"{type(weights).__name__}")
    if len(weights) < 1:
        raise ValueError(f"{name} must hold at least one weight matrix")
    out = [val.array(w, f"{name}[{m}]").astype(np.float64) for m, w in enumerate(weights)]
    for m, w in enumerate(out):
        if w.shape[0] < 2:
            raise ValueError(f"{name}[{m}] has shape {w.shape}: it needs a threshold row and at "
                             "least one input row")
        if m + 1 < len(out) and out[m + 1].shape[0] != w.shape[1] + 1:
            raise ValueError(f"{name} do not chain: {name}[{m}] has {w.shape[1]} outputs, so "
                             f"{name}[{m + 1}] needs {w.shape[1] + 1} rows (threshold + inputs), "
                             f"got shape {out[m + 1].shape}")
    if sizes is not None:
        if len(out) != len(sizes) - 1:
            raise ValueError(f"{name}: expected {len(sizes) - 1} matrices, got {len(out)}")
        for m, w in enumerate(out):
            if w.shape != (sizes[m] + 1, sizes[m + 1]):
                raise ValueError(f"{name}[{m}]: expected shape {(sizes[m] + 1, sizes[m + 1])}, "
                                 f"got {w.shape}")
    if n_features is not None and out[0].shape[0] != n_features + 1:
        raise ValueError(f"X has {n_features} features but {name}[0] expects "
                         f"{out[0].shape[0] - 1} (its {out[0].shape[0]} rows are the threshold "
                         "and one per input)")
    return out


def init_weights(sizes, seed=0) -> list:
    """Seeded initial weights: uniform in +-sqrt(6 / (fan_in + 1 + fan_out)), thresholds too."""
    sizes = check_sizes(sizes)
    rng = np.random.default_rng(seed)
    out = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        r = math.sqrt(6.0 / (a + 1 + b))
        out.append(rng.uniform(-r, r, size=(a + 1, b)))
    return out


# ---- sizes: every device array of a network checked from the shapes, before any allocation ------
def net_arrays(lim, sizes, N: int, packed: bool = True, schedule: str = "paper",
               inference: bool = False) -> list:
    """The device arrays a :class:`BackpropNet` of layer widths ``sizes`` over ``N`` training
    vectors makes (``inference``: only those of a forward pass, :func:`device_forward`), as
    ``(description, (rows, cols, packed, order, max_size), layers)`` with ``layers`` the
    indices into ``sizes`` the array's size depends on (-1: N). Shapes only: nothing is
    allocated, no Layout is built."""
    L = [int(v) for v in sizes]
    K = len(L) - 1
    p = bool(packed)
    mx = int(lim.max_texture_size)
    out = [(f"activations of layer {m}", (L[m] + 1, N, p, "row", mx), (m, -1))
           for m in range(K + 1)]
    wl = (False, "row") if schedule == "paper" and not inference else (True, "col")
    out += [(f"weights of layer {m + 1}", (L[m] + 1, L[m + 1], *wl, mx), (m, m + 1))
            for m in range(K)]
    if inference:
        return out
    if schedule == "fused":
        # the output layer (and its errors, targets) wrapped into a squarer texture
        lay = squarish_layout(mx, L[K] + 1, N, p)
        out[K] = (f"activations of layer {K}", (L[K] + 1, N, p, "row", lay.max_size), (K, -1))
        gw = grid_width(N, p)
        nchunk = -(-gw // update_chunk(gw, lim.loop_cap))
        for m in range(K):
            R = tile_rows(lim.max_outputs, L[m + 1])
            lay = squarish_layout(mx, nchunk * -(-L[m + 1] // R), L[m] + 1)
            out.append((f"partial gradients of layer {m + 1}",
                        (lay.rows, lay.cols, True, "row", lay.max_size), (m, m + 1, -1)))
    else:
        out += [(f"weighted sums of layer {m}", (L[m], N, p, "row", mx), (m, -1))
                for m in range(1, K + 1)]
    return out


def check_net_fits(lim, sizes, N: int, packed: bool = True, schedule: str = "paper",
                   names=None, inference: bool = False) -> None:
    """Refuse, from the shapes alone (before anything is allocated on the host or the device),
    a network whose device arrays (:func:`net_arrays`) do not fit one texture of the device
    (``lim``: :func:`limits`). ValueError naming the arguments that set the sizes: ``names``
    maps a layer index (0 .. K) or -1 (the number of training vectors) to the argument's name
    (default ``sizes[m]`` and ``X``)."""
    names = names or {}
    for what, (rows, cols, pk, order, mx), dims in net_arrays(lim, sizes, N, packed, schedule,
                                                             inference):
        try:
            Layout(rows, cols, pk, order, mx)
        except TooLargeError:
            args = [names.get(d, f"sizes[{d}] = {sizes[d]}" if d >= 0 else f"X ({N} samples)")
                    for d in dims]
            texels = rows * -(-cols // 4) if pk else rows * cols
            big = max(dims, key=lambda d: (N if d < 0 else int(sizes[d])))
            raise ValueError(
                f"{args[dims.index(big)]}: too large for this device: the {what} "
                f"({rows} x {cols}{', 4 per texel' if pk else ', one per texel'}: {texels} "
                f"texels, set by {' and '.join(args)}) exceed one texture of "
                f"{lim.max_texture_size} x {lim.max_texture_size} = "
                f"{lim.max_texture_size ** 2} texels (the device's max_texture_size)") from None
