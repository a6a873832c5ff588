"""The fused schedule on uniform blocks: the weights, the operand every fragment of a draw reads
alike, come from uniform-block windows (the constant cache) instead of texel fetches.

The recompute path (:func:`~.geometry.ubo_recompute`: one hidden layer over at most three
inputs, at most four outputs, e.g. 2-1024-1) stores neither the hidden activations nor their
errors, which would be the whole step's traffic (2-1024-1, N = 16,384: 67 MB each way through
the fragment path). Per step:

* forward (``rc_forward.frag``): per output texel, a loop over the hidden units computes each
  activation from the inputs and the first weights and adds it into the output's sum, both
  weight matrices read from uniform blocks at one address per loop step for the whole draw;
  then the output and its error: one pass;
* update (``rc_gradient.frag``): per hidden unit and chunk of training vectors, the activation
  made again, its error from the output errors, the gradients of both layers' weights of that
  unit summed over the chunk: one pass (the flops of the forward layer twice, no bytes);
* apply (``rc_apply.frag``): one pass per layer adds the chunks' sums and takes the step;
  then the new weights are copied into the next step's uniform blocks (a buffer copy on the
  device, no pass).

:func:`build` prepares both weight parities; :class:`BlockMirror` is a weight texture's copy
in a uniform block, refreshed after each update (``BackpropNet._refresh``).

Other networks keep the fused schedule's passes, except that a forward layer's tiled product
(:func:`~.geometry.ubo_forward_plan`) reads its weights from uniform-block windows, one draw per
window (:func:`forward_passes`): every fragment of a block of target rows reads one address
per K-quad, where the texture path fetches R texels.
"""
from __future__ import annotations

import numpy as np

from ...engine.blocks import BlockArray, BlockLayout
from ...engine.layout import Layout
from . import geometry
from .geometry import grid_width, quad_count, ubo_chunk_texels, ubo_targets, limits
from .kernels import (ACTIVATE_UBO, FORWARD_UBO, RECOMPUTE_APPLY, RECOMPUTE_FORWARD,
                      RECOMPUTE_GRADIENT)


class BlockMirror:
    """A column-packed weight texture's texels, in texture order, in a buffer read through a
    uniform-block window of ``geometry.UBO_BLOCK_BYTES`` (zero past the texels; ``vec4s``: the
    buffer's length, at least one window): texel (j, q) is vec4 number j Q + q."""

    def __init__(self, dev, W, vec4s: int | None = None):
        window = geometry.UBO_BLOCK_BYTES // 16
        vec4s = max(window, int(vec4s or 0))
        self.W = W
        self.block = BlockArray(dev, BlockLayout(window), data=np.zeros((vec4s, 4), np.float32))
        self.refresh()

    def refresh(self) -> None:
        self.block.write_from_texture(self.W)

    def release(self) -> None:
        self.block.release()


def defines(L) -> dict:
    """The recompute kernels' defines for layer sizes ``L``: rows of X read (threshold row
    included), outputs; the Newton lanes of the sigmoids are added per pass."""
    return {"IN_ROWS": int(L[0]) + 1, "OUTS": int(L[2])}


def build(net) -> None:
    """The recompute path's passes for ``net`` (a :class:`BackpropNet` with one hidden layer):
    ``net._steps`` as :func:`shadergpgpu.algorithms.backprop.fused.build` makes them, and the
    uniform-block mirrors of both parities' weights in ``net._refresh``."""
    dev, L, A, D, p = net.dev, net.sizes, net.A, net.D, net.packed
    lim = limits(device=dev)
    gw = grid_width(net.N, p)
    chunk = ubo_chunk_texels(L, gw, lim.loop_cap, lim.tuning)
    nchunk = -(-gw // chunk)
    part = Layout(nchunk, 4 * (L[1] + 1), True, "row", dev.max_texture_size)
    net.P = [[dev.alloc(part), dev.alloc(part)]]
    net._arrays += net.P[0]
    net._mirrors = [[None] * 2, [None] * 2]          # no buffer mirrors on this path
    net._refresh = [[BlockMirror(dev, w) for w in ws] for ws in net.W]
    for ms in net._refresh:
        net._arrays += ms
    nq = -(-(L[1] + 1) // 4)
    base = defines(L)
    t = lim.tuning
    fwd_def = dict(base, SIG_NEWTON=t.ubo_newton_forward)
    grad_def = dict(base, SIG_NEWTON=t.ubo_newton_gradient, STRIDED=int(t.ubo_strided))
    net._steps = []
    for par in (0, 1):
        W, Wn, B = net.W[par], net.W[1 - par], net._refresh[par]
        fwd = dev.prepare(RECOMPUTE_FORWARD[p], {"OUT": A[2], "DELTA": D[2]},
                          inputs={"X": A[0], "T": net.T, "WB1": B[0].block, "WB2": B[1].block},
                          uniforms={"nh": L[1], "nq": nq}, defines=fwd_def)
        grad = dev.prepare(RECOMPUTE_GRADIENT[p], net.P[0],
                           inputs={"X": A[0], "DO": D[2], "W1": W[0], "W2": W[1]},
                           uniforms={"chunk": chunk}, defines=grad_def)
        app = [dev.prepare(RECOMPUTE_APPLY[m + 1], Wn[m], inputs={"W": W[m], "P": net.P[0][m]},
                           uniforms={"eta": net.lr}) for m in range(2)]
        net._steps.append([("forward", [(fwd, None, None)]),
                           ("update", [(grad, None, None)]),
                           ("apply", [(q, None, None) for q in app])])


def forward_mirror(dev, W, plan, n_in: int) -> BlockMirror:
    """The uniform-block copy of weights W for :func:`forward_passes` (``plan``:
    :func:`~.geometry.ubo_forward_plan`'s (R, windows, hw)): long enough for every window."""
    R, nw, hw = plan
    return BlockMirror(dev, W,
                       (nw - 1) * R * hw * quad_count(n_in) + geometry.UBO_BLOCK_BYTES // 16)


class _Sweep:
    """A prepared pass drawn once per window: the rows of window w, the block moved to it."""

    def __init__(self, p, rects, offsets, block):
        self.p, self.rects, self.offsets, self.block = p, rects, offsets, block

    def run(self) -> None:
        self.p.sweep(self.rects, each=lambda i: self.block.select(self.offsets[i]))


def forward_passes(dev, packed, mirror, plan, A, out, T=None, D=None, keep=None) -> list:
    """The passes computing layer ``out`` = f(W^T A) (and, with targets T, the output error D)
    with the weights from ``mirror`` (:func:`forward_mirror`): the tiled product into R targets,
    drawn once per window, then one pass gathering them and applying f."""
    R, nw, hw = plan
    lay, rpt = ubo_targets(nw * hw, out.shape[1], packed, dev.max_texture_size)
    Z = [dev.alloc(lay) for _ in range(R)]
    if keep is not None:
        keep.extend(Z)
    geo = {"hw": hw, "rpt": rpt}
    prod = dev.prepare(FORWARD_UBO[R][packed], Z, inputs={"WB": mirror.block, "A": A},
                       uniforms=geo)
    if nw > 1:
        rects = [(0, w * hw * rpt, lay.tex_w, hw * rpt) for w in range(nw)]
        offsets = [w * R * hw * quad_count(A.shape[0]) for w in range(nw)]
        prod = _Sweep(prod, rects, offsets, mirror.block)
    last = T is not None
    outs = {"OUT": out, "DELTA": D} if last else out
    ins = {f"P{t}": z for t, z in enumerate(Z)}
    if last:
        ins["T"] = T
    return [prod, dev.prepare(ACTIVATE_UBO[last][R][packed], outs, inputs=ins, uniforms=geo)]
