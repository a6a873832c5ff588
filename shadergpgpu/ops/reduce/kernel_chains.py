"""The prepared chains a ReductionKernel call runs: whole array (:class:`FlatChain`), along an
axis (:class:`AxisChain`), and the cached pair of chain and scratch result (:class:`Plain`);
GLSL errors in a kernel's expressions are reported with the expressions."""
from __future__ import annotations

from ...engine.errors import ShaderCompileError
from ...engine.layout import Layout
from .chain import Chain, Placeholder, slot_rect, vector_layout
from .levels import level_sizes


def _compile_error(rk, e):
    return ShaderCompileError(
        f"{rk.name}: GLSL rejected the reduction's expressions (map_expr {rk.map_expr!r}, "
        f"reduce_expr {rk.reduce_expr!r}, post_map_expr {rk.post_map_expr!r}):\n{e}")


class Plain:
    """A cached chain of one ReductionKernel variant; inputs and result bound per call."""

    def __init__(self, rk, dev, order, mode, lays, fanin):
        self.rk, self.order = rk, order
        first, nxt = rk.kernels(tuple(order), mode)
        self.idle = {n: Placeholder(lay) for n, lay in zip(order, lays)}
        lay0 = lays[0]
        if isinstance(mode, tuple):
            self.scratch = dev.alloc(Layout(1, 1, True, "row", dev.max_texture_size), (1,))
            vkey = (tuple(order), mode)
            known = rk._vec4.get(vkey)
            for vec4 in ((True, False) if known is None else (known,)):
                try:
                    self.chain = FlatChain(dev, first, nxt, self.idle, lay0.n_texels,
                                           self.scratch, 0, fanin, rk, vec4)
                except ShaderCompileError:
                    if vec4 and known is None:
                        continue        # the expressions need the lane-by-lane form
                    self.scratch.release()
                    raise
                rk._vec4[vkey] = vec4
                break
        else:
            n_out = lay0.rows if mode == 1 else lay0.cols
            length = lay0.cols if mode == 1 else lay0.rows
            self.scratch = dev.alloc(Layout(1, n_out, True, "row", dev.max_texture_size))
            self.chain = AxisChain(dev, first, nxt, self.idle, n_out, length, self.scratch,
                                   fanin, rk)

    def run(self, arrays, scalars, out):
        ch = self.chain
        ps = ch.passes
        try:
            ch.refresh()
            ps[-1].bind(OUT=out)
            ps[0].bind(**{n: arrays[n] for n in self.order})
            scal = {k: v for k, v in scalars.items()}
            for p in ps:
                u = {k: v for k, v in scal.items() if k in p.kernel.uniforms}
                if u:
                    p.set(**u)
            ch.run()
        finally:  # keep no caller's array bound while cached
            ps[0].bind(**self.idle)
            ps[-1].bind(OUT=self.scratch)

    def release(self):
        self.chain.release()
        self.scratch.release()


def _prepare_guard(rk, build):
    try:
        return build()
    except ShaderCompileError as e:
        raise _compile_error(rk, e) from None


class FlatChain(Chain):
    """A whole-array reduction (first, next kernels of a ReductionKernel) into ``result``'s
    texel ``slot`` (component x)."""

    def __init__(self, dev, first, nxt, inputs, n_texels, result, slot, fanin, rk,
                 vec4: bool = True):
        super().__init__(dev)
        self.result, self.slot, self.fanin = result, int(slot), fanin

        def build():
            # the final level also folds the four lanes and applies the post-map (FINAL)
            self._build(level_sizes(n_texels, fanin), {False: first, True: first},
                        {False: nxt, True: nxt}, inputs, result,
                        lambda: (slot_rect(result, slot), int(slot)),
                        lambda level: {},
                        lambda level, final: {"FANIN": fanin, "FINAL": int(final),
                                              "VEC4": int(vec4)},
                        ("OUT",), lambda outs: {"V": outs["OUT"]},
                        lambda m: vector_layout(dev, m))
        _prepare_guard(rk, build)


class AxisChain(Chain):
    """A reduction along one axis: ``n_out`` results, each over ``length`` elements."""

    def __init__(self, dev, first, nxt, inputs, n_out, length, result, fanin, rk):
        super().__init__(dev)
        self.result, self.fanin = result, fanin
        mx = dev.max_texture_size

        def build():
            self._build(level_sizes(length, fanin), {False: first, True: first},
                        {False: nxt, True: nxt}, inputs, result, lambda: (None, 0),
                        lambda level: {},
                        lambda level, final: {"FANIN": fanin, "FINAL": int(final)},
                        ("OUT",), lambda outs: {"V": outs["OUT"]},
                        lambda m: Layout(n_out, m, True, "row", mx))
        _prepare_guard(rk, build)

