"""The fused schedule's passes: loops inside the shaders, register-tiled products.

The forward passes (direct, or the tiled product and the gather applying f), the error
backpropagation, the buffer mirrors of the weights, and :func:`build`, which prepares a
:class:`BackpropNet`'s whole step (forward, backprop, update, apply) for both weight parities.
The forward passes also serve the paper-schedule net's probe and :func:`device_forward`.
"""
from __future__ import annotations

from ...engine.errors import LoopBudgetError
from . import ubo
from .geometry import (bp_rows, fused_delta, fwd_rows, gather_passes, limits, reads_buffer_mirrors,
                       recomputes_first_layer, squarish_layout_of, tile_rows, ubo_forward_plan,
                       ubo_recompute, update_chunk)
from .kernels import (ACTIVATE_FUSED, ACTIVATE_OUTPUT, ACTIVATE_TILE, APPLY_TILE, BACKPROP,
                      BACKPROP_TILE, DELTA_TILE, FORWARD, FORWARD_DIRECT, FORWARD_OUTPUT,
                      FORWARD_SUM, FORWARD_TILE, UPDATE_FUSED_TILE, UPDATE_TILE)
from ...engine.layout import BufferLayout
from ...engine.glraw import BufferArray, max_texture_buffer_size


def _fits(dev, kernel, inputs, outputs, uniforms=None) -> bool:
    """Whether ``kernel`` runs in one pass within the device's loop cap."""
    try:
        dev.passes_for(kernel, inputs, outputs, uniforms)
    except LoopBudgetError:
        return False
    return True


# ---- passes shared by the trainer, the probe and device_forward ------------------------------
def _col_packed(W) -> bool:
    """Weights in the fused schedule's operand layout (column-packed, or its buffer mirror)."""
    lay = W.layout
    return lay.kind[0] == "buffer" or (lay.packed and lay.order == "col")


def _wshape(W) -> tuple:
    """(inputs + 1, neurons) of weights W: a texture or its buffer mirror."""
    lay = W.layout
    return (lay.cols, lay.rows) if lay.kind[0] == "buffer" else tuple(W.shape)


class _Mirror:
    """A buffer copy of a column-packed weight texture (same texels in the same order),
    refreshed on the device after each update: the products' weight operand where buffer
    textures exist (``Device.buffer_textures``)."""

    def __init__(self, dev, W):
        n_in, n_out = W.shape
        self.W = W
        self.buf = BufferArray(dev, BufferLayout(n_out, n_in),
                               dev.ctx.buffer(reserve=W.layout.nbytes))
        self.refresh()

    def refresh(self):
        self.W.device.report("buffer_copy", self.W.layout.nbytes)
        self.W.texture.read_into(self.buf.buffer, alignment=4)

    @staticmethod
    def usable(dev, W) -> bool:
        return reads_buffer_mirrors(dev) and W.layout.n_texels <= _max_buffer(dev)


def _max_buffer(dev) -> int:
    return max_texture_buffer_size(dev)


def _temps(dev, R, shape, packed, keep):
    out = [dev.alloc(dev.layout(shape, packed, "row"), shape) for _ in range(R)]
    if keep is not None:
        keep.extend(out)
    return out


def forward_passes(dev, packed, W, A, out, T=None, D=None, keep=None, below=None) -> list:
    """Prepared passes computing layer ``out`` = f(W^T A) (and, with targets T, the output
    error D).

    Weights column-packed (the fused schedule): a thin layer (R = 1, :func:`fwd_rows`) runs
    the direct kernel, one pass; otherwise the register-tiled product writes Z into R render
    targets (its K-quad loop cut over accumulating passes if it exceeds the loop cap) and one
    pass gathers them and applies f. ``below`` = (X, WL): A is not stored but made from X and
    WL (:func:`recomputes_first_layer`; A is then None). Other weights (a paper-schedule
    net's probe): one fused pass, or the blended partial sums of FORWARD_SUM and one
    activation pass past the cap."""
    last = T is not None
    outs = {"OUT": out, "DELTA": D} if last else out
    extra = {"T": T} if last else {}
    if not _col_packed(W):
        ins = {"W": W, "A": A}
        k1, k2 = ((FORWARD_OUTPUT[packed], ACTIVATE_OUTPUT[packed]) if last
                  else (FORWARD[packed], ACTIVATE_FUSED[packed]))
        if _fits(dev, k1, dict(ins, **extra), outs):
            return [dev.prepare(k1, outs, inputs=dict(ins, **extra))]
        Z = dev.alloc(out.layout)
        if keep is not None:
            keep.append(Z)
        return [dev.prepare(FORWARD_SUM[packed], Z, inputs=ins),
                dev.prepare(k2, outs, inputs=dict(extra, Z=Z))]
    lim = limits(device=dev)
    n_in, n_out = _wshape(W)
    R = fwd_rows(lim, n_in, n_out)
    rc = below is not None
    ins = {"W": W, "X": below[0], "WL": below[1]} if rc else {"W": W, "A": A}
    n = out.shape[1]                     # training vectors
    if R == 1 and _fits(dev, FORWARD_DIRECT[last, rc][packed], dict(ins, **extra), outs):
        return [dev.prepare(FORWARD_DIRECT[last, rc][packed], outs, inputs=dict(ins, **extra))]
    Z = _temps(dev, R, (-(-n_out // R), n), packed, keep)
    first = dev.prepare(FORWARD_TILE[rc][R][packed], Z, inputs=ins)
    gathers = gather_passes(lim, R, n_out, out.layout, last)
    if gathers > 1:         # one pass per target, over the rows it holds (row 0 in the first)
        h = -(-n_out // R)
        ps = [first]
        for t in range(gathers):
            y0, y1 = (0 if t == 0 else 1 + t * h), min(1 + (t + 1) * h, n_out + 1)
            ps.append(dev.prepare(ACTIVATE_TILE[last][1][packed], outs, inputs=dict(extra, P0=Z[t]),
                                  rect=(0, y0, out.layout.tex_w, y1 - y0)))
        return ps
    return [first,
            dev.prepare(ACTIVATE_TILE[last][R][packed], outs,
                        inputs=dict(extra, **{f"P{t}": z for t, z in enumerate(Z)}))]


def _backprop_passes(dev, packed, W, DUP, A, out, keep=None, Wop=None) -> list:
    """Prepared passes computing the errors ``out`` of the layer below W: the direct kernel
    for four or fewer upper neurons, else the register-tiled product into R render targets
    and one pass gathering them times a (1 - a). ``Wop``: W's buffer mirror for the tiled
    product (default W)."""
    lim = limits(device=dev)
    n_low, n_up = _wshape(W)
    R = bp_rows(lim, n_up, n_low)
    if R == 1:
        return [dev.prepare(BACKPROP[packed], out, inputs={"W": W, "DUP": DUP, "A": A})]
    S = _temps(dev, R, (-(-n_low // R), A.shape[1]), packed, keep)
    return [dev.prepare(BACKPROP_TILE[R][packed], S, inputs={"W": W if Wop is None else Wop,
                                                       "DUP": DUP}),
            dev.prepare(DELTA_TILE[R][packed], out,
                        inputs=dict(A=A, **{f"P{t}": x for t, x in enumerate(S)}))]


def build(net) -> None:
    """The fused schedule's passes for ``net`` (a :class:`BackpropNet`): a list of (phase,
    [(pass, uniform name or None, values)]) per parity in ``net._steps``; the recompute path on
    uniform blocks (:mod:`.ubo`) where :func:`~.geometry.ubo_recompute` takes it."""
    dev, L, K, A, D, p = net.dev, net.sizes, net.K, net.A, net.D, net.packed
    lim = limits(device=dev)
    if ubo_recompute(L, lim, net.N, p):
        ubo.build(net)
        return
    chunk = update_chunk(net.grid_w, dev.loop_cap)
    nchunk = -(-net.grid_w // chunk)
    net.P = []
    for m in range(K):
        R = tile_rows(lim.max_outputs, L[m + 1])
        lay = squarish_layout_of(dev, nchunk * -(-L[m + 1] // R), L[m] + 1)
        net.P.append([dev.alloc(lay) for _ in range(R)])
        net._arrays += net.P[-1]
    # buffer mirrors of the weights for the products (refreshed after each update)
    net._mirrors = [[_Mirror(dev, w) if _Mirror.usable(dev, w) else None for w in ws]
                    for ws in net.W]
    for ms in net._mirrors:
        net._arrays += [mi.buf for mi in ms if mi is not None]
    # the inputs never change: a buffer copy of them (packed) for the products
    A0 = A[0]
    if p and reads_buffer_mirrors(dev) and A[0].layout.n_texels <= _max_buffer(dev):
        A0 = BufferArray.from_host(dev, BufferLayout(*A[0].shape), A[0].get())
        net._arrays.append(A0)
    # forward layers whose tiled product reads its weights from uniform blocks, and their
    # block copies per parity (refreshed after each update)
    rc = recomputes_first_layer(L, lim)
    plans = [None if rc and m <= 1 else ubo_forward_plan(lim, L[m] + 1, L[m + 1], net.N, p)
             for m in range(K)]
    net._refresh = [[ubo.forward_mirror(dev, ws[m], plans[m], L[m] + 1)
                     for m in range(K) if plans[m]] for ws in net.W]
    for ms in net._refresh:
        net._arrays += ms
    net._steps = []
    for par in (0, 1):
        W, Wn = net.W[par], net.W[1 - par]
        Wop = [w if mi is None else mi.buf for w, mi in zip(W, net._mirrors[par])]
        blocks = iter(net._refresh[par])
        fwd = []
        for m in range(1 if rc else 0, K):
            last = m == K - 1
            below = (A0, Wop[0]) if rc and m == 1 else None
            out = dict(T=net.T if last else None, D=D[m + 1] if last else None,
                       keep=net._arrays)
            if plans[m]:
                ps = ubo.forward_passes(dev, p, next(blocks), plans[m], A[m], A[m + 1], **out)
            else:
                ps = forward_passes(dev, p, Wop[m], A0 if m == 0 else A[m], A[m + 1],
                                     below=below, **out)
            fwd += [(q, None, None) for q in ps]
        fuse = fused_delta(L, lim)
        bwd = [(q, None, None) for m in range(K - 1, 1 if fuse else 0, -1)
               for q in _backprop_passes(dev, p, W[m], D[m + 1], A[m], D[m],
                                         keep=net._arrays, Wop=Wop[m])]
        part = []
        for m in range(K):
            R = len(net.P[m])
            if m == 0 and rc:
                k, ins = UPDATE_FUSED_TILE[True][R][p], {"A": A0, "DUP": D[2], "WU": W[1],
                                                  "WL": Wop[0]}
            elif m == 0 and fuse:
                k, ins = UPDATE_FUSED_TILE[False][R][p], {"A": A0, "AH": A[1], "DUP": D[2],
                                                   "WU": W[1]}
            elif m == 1 and rc:
                k, ins = UPDATE_TILE[True][R][p], {"D": D[2], "X": A0, "WL": Wop[0]}
            else:
                k, ins = UPDATE_TILE[False][R][p], {"D": D[m + 1],
                                                  "A": A0 if m == 0 else A[m]}
            part.append((dev.prepare(k, net.P[m], inputs=ins, uniforms={"chunk": chunk}),
                         None, None))
        app = [(dev.prepare(APPLY_TILE[len(net.P[m])], Wn[m],
                            inputs=dict(W=W[m], **{f"P{t}": x
                                                   for t, x in enumerate(net.P[m])}),
                            uniforms={"eta": net.lr}), None, None) for m in range(K)]
        ops = [("forward", fwd), ("backprop", bwd), ("update", part), ("apply", app)]
        net._steps.append([o for o in ops if o[1]])
