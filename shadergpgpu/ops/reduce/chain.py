"""The chain of render passes every reduction runs, and the textures its levels write.

:class:`Chain` prepares one pass per level (first kernel over the caller's inputs, next kernel
over the previous level's outputs, the final level into a result texel); the partial-result
vectors are wrapped at ``ReduceTuning.level_wrap`` texels per row (the device's, read when a
chain is prepared); :class:`Placeholder` stands in for an input until a cached chain is bound
to one.
"""
from __future__ import annotations

from ...engine.arrays import DeviceArray
from ...engine.layout import Layout
from ..tuning import ReduceTuning


def vector_layout(dev, texels: int) -> Layout:
    """A packed 1 x (4 * texels) vector, one RGBA texel per partial result, wrapped at the
    device's ``ReduceTuning.level_wrap`` texels per texture row."""
    wrap = dev.tuning(ReduceTuning).level_wrap
    return Layout.wrapped_vector(4 * int(texels), wrap, dev.max_texture_size)


def result_array(dev, slots: int = 1) -> DeviceArray:
    """A small packed vector of ``slots`` texels that reductions write their results into."""
    return dev.alloc(vector_layout(dev, slots), (4 * int(slots),))


def slot_rect(res: DeviceArray, slot: int, width: int = 1) -> tuple:
    x, y, _ = res.layout.texel_of(0, 4 * int(slot))
    x2, y2, _ = res.layout.texel_of(0, 4 * (int(slot) + width - 1))
    if y2 != y:
        raise ValueError("result slots of one reduction must lie in one texture row")
    return (x, y, width, 1)


def dummy_array(dev) -> DeviceArray:
    """A 1-texel array bound where a kernel declares an input that this call does not read."""
    # kept by the device itself: a cached chain bound to an evictable resource would be left
    # pointing at a released array when the resource cache drops it
    return dev.placeholder()


class Placeholder:
    """Stands in for an input array until a chain is bound to one of this layout."""

    def __init__(self, layout):
        self.layout = layout
        self.released = False

    def bind(self, unit):
        raise ValueError("this reduction has no input bound yet; call bind(array) first")


_Placeholder = Placeholder


# ---- the chain ----------------------------------------------------------------------------------
class Chain:
    """Prepared passes of one reduction and the intermediate textures they own.

    ``levels(first, nxt, ...)`` builds the passes: the first level runs ``first`` over the
    caller's inputs, every further level runs ``nxt`` over the previous level's outputs; each
    is a dict ``{False: kernel, True: final kernel}`` (the final level writes the result).
    """

    def __init__(self, dev):
        self.device = dev
        self.passes = []
        self._owned: list[DeviceArray] = []

    def _build(self, levels, first, nxt, inputs, result, rect_of, uniforms, defines,
               out_names, next_inputs, out_layout):
        dev = self.device
        kern, ins = first, dict(inputs)
        try:
            for level, (n, m) in enumerate(levels):
                final = m == 1
                k = kern[final]
                if final:
                    outs = {k.outputs[0]: result}
                    rect, sl = rect_of()
                else:
                    lay = out_layout(m)
                    outs = {name: dev.alloc(lay) for name in out_names}
                    self._owned += list(outs.values())
                    rect, sl = None, 0
                u = dict(uniforms(level), stride=m, slot=sl, n_src=n)
                u = {key: v for key, v in u.items() if key in k.uniforms}
                d = {key: v for key, v in defines(level, final).items() if key in k.defines}
                extra = {key: a for key, a in ins.items() if key in k.inputs}
                self.passes.append(dev.prepare(k, outs, inputs=extra, uniforms=u, defines=d,
                                               rect=rect))
                if not final:
                    kern, ins = nxt, next_inputs(outs)
        except BaseException:
            self.release()
            raise

    def run(self) -> None:
        for p in self.passes:
            p.run()

    def refresh(self) -> None:
        """Re-resolve every pass's framebuffer. A chain kept between calls does this first:
        the device's framebuffer cache is bounded and may have released the ones it held."""
        for p in self.passes:
            p.bind()

    def release(self) -> None:
        for a in self._owned:
            a.release()
        self._owned.clear()
        self.passes = []

    @property
    def n_passes(self) -> int:
        return len(self.passes)


_Chain = Chain
