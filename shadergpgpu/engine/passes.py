"""Render passes: compiled kernels and prepared (reusable) passes.

Every kernel run is one render pass: bind input textures, set uniforms, attach 1..8 output
textures to a framebuffer, set the viewport (whole output or a sub-rectangle) and the blend
mode, draw one triangle covering the viewport. The pass counter (``counter.py``) records each
pass under the current phase label (``with device.phase("forward"): ...``).
"""
from __future__ import annotations

import math

from .counter import STALE
from .lifetime import CONTEXT
from .glraw import set_sampler_unit
from .kernels import check_uniform

BLEND_MODES = (None, "add", "max", "min")
#: uniform values a prepared pass writes as they are and may skip when the program holds the
#: very object: immutable ones (anything else goes through the checked path, held as a tuple)
_PLAIN = (float, int, bool, tuple)


def blend_mode(blend) -> str | None:
    if blend is True:
        return "add"
    if blend is False or blend is None:
        return None
    if blend not in BLEND_MODES:
        raise ValueError(f"blend must be False, True/'add', 'max' or 'min', got {blend!r}")
    return blend


_NONE = object()


class Compiled:
    """A kernel compiled for one (defines, input and output layout kinds): the shared program
    (:class:`~shadergpgpu.engine.programs.SharedProgram`), a vertex array, the texture units of
    the inputs and the program's uniform handles.

    The uniform values the program holds and the pass that set them live in the shared program
    (``state``), not here: kernels with the same final source draw with one GL program."""

    def __init__(self, device, kernel, shared, text: str, input_names, buffer_inputs=()):
        self.kernel = kernel
        self.state = shared
        self.program = program = shared.program
        self.text = text
        self.alive = True
        self.busy = 0                 # draws in progress with it (nested passes may evict it)
        self.evicted = False          # left the cache while busy: released when the draw ends
        self.units = [(n, u) for u, n in enumerate(input_names)]
        self.output_names = tuple(kernel.outputs)
        self.vao = device.ctx.vertex_array(program, [])
        self.draw_key = (None,)       # the pass counter's key of its draws (label, name, path)
        self._handles: dict = {}
        for name, unit in self.units:
            sampler = f"sg_{name}"
            if name in buffer_inputs:
                set_sampler_unit(program, sampler, unit)
            elif sampler in program:
                program[sampler].value = unit

    def handle(self, name: str):
        """moderngl Uniform for ``name``; None when the driver optimised it out."""
        h = self._handles.get(name, False)
        if h is False:
            h = self.program[name] if name in self.program else None
            self._handles[name] = h
        return h

    def put(self, name: str, value) -> None:
        """Set uniform ``name`` unless the program already holds ``value``."""
        held = self.state.held
        old = held.get(name, _NONE)
        if old is value or (old == value and (type(value) is int or _same(old, value))):
            return
        h = self.handle(name)
        if h is not None:
            h.value = value
        held[name] = value

    def release(self) -> None:
        self.alive = False
        if self.state.owner is not None:
            self.state.owner = None
        self.vao.release()


class Pass:
    """A prepared render pass: compiled kernel, framebuffer and bindings resolved once.

    ``run(**uniforms)`` draws with as little Python work per call as the raw moderngl calls
    need; ``bind(name=array)`` swaps an input or output for one of the same layout (ping-pong).
    A kernel with a split loop runs one pass per slice. Made by
    :meth:`shadergpgpu.engine.device.Device.prepare` or :meth:`Kernel.prepare`.

    A pass never draws with anything stale. The device counts every event that could leave a
    pass pointing at something gone (an array released, a framebuffer or compiled kernel dropped
    by its cache, :meth:`Device.trim <shadergpgpu.engine.device.Device.trim>`); when the count
    moved since the pass last checked, the next draw checks again: a released input or output
    is refused with an error naming it, a dropped program or framebuffer is made again.
    """

    def __init__(self, device, kernel, inputs: dict, outputs: dict, uniforms: dict,
                 defines: dict | None, blend, rect):
        self.device = device
        self.kernel = kernel
        self.inputs = dict(inputs)
        self.outputs = dict(outputs)
        self.blend = blend_mode(blend)
        self.rect = rect
        vals, self.defines = kernel.check_call(self.inputs, self.outputs, uniforms, defines,
                                               partial=True)
        self.values: dict = dict(vals)
        self._checks = kernel.loop is not None or kernel.split is not None
        self._complete = False
        self._epoch = -1
        self._refresh()

    # ---- state ---------------------------------------------------------------------------------
    def _refresh(self):
        dev = self.device
        self.compiled = dev.compiled(self.kernel, self.inputs, self.outputs, self.defines)
        c = self.compiled
        self._state = c.state
        for n, a in list(self.inputs.items()) + list(self.outputs.items()):
            self.values[f"sg_{n}_shape"] = a.layout.shape_uniform
        self._tables()
        self._fbo = dev._framebuffer(self._outs)
        self._fbo_epoch = dev._fbo_epoch
        self._viewport, self._fragments = dev._viewport(self._outs, self.rect)
        self._render = c.vao.mglo.render  # the draw without moderngl's wrapper (no scope)
        self._plan()
        c.state.owner = None
        self._epoch = dev._epoch

    def _tables(self):
        """What the draws use, from ``inputs``/``outputs`` (no GL work)."""
        c = self.compiled
        self._binds = [(_binder(self.inputs[n]), u) for n, u in c.units]
        self._outs = [self.outputs[n] for n in c.output_names]
        # for the counter's dependent passes: what the draws read and write
        self._reads = tuple(_resource(a) for a in self.inputs.values())
        self._writes = tuple(a.texture for a in self._outs)
        self._arrays = [(role, n, a) for role, t in (("input", self.inputs),
                                                    ("output", self.outputs))
                        for n, a in t.items()]

    def _check_live(self):
        """Called when the device's epoch moved: refuse released arrays, rebuild what a cache
        dropped (compiled kernel, framebuffer)."""
        dev = self.device
        dev._check_alive()
        for role, n, a in self._arrays:
            if a.released:
                raise ValueError(
                    f"{self.kernel.name}: {role} {n!r} of this prepared pass has been "
                    f"released; bind a live array first (pass.bind({n}=...))")
        if not self.compiled.alive:  # the compiled-kernel cache dropped it: compile again
            self._refresh()
            return
        if self._fbo_epoch != dev._fbo_epoch:  # a framebuffer was dropped: fetch ours again
            self._fbo = dev._framebuffer(self._outs)
            self._fbo_epoch = dev._fbo_epoch
        self._epoch = dev._epoch

    def _plan(self):
        """Resolve the uniform handles and, for loop kernels, the slices within the cap (no fast
        path in debug mode: every draw goes through the device's checks)."""
        c = self.compiled
        k = self.kernel
        self._u = {n: c.handle(n) for n in self.values}
        self._cuts = []
        self._tally = STALE   # the fast path's count of draws (folded when the counter is read)
        self._plan_reads = None
        if self._checks and all(n in self.values for n in k.uniforms):
            from .call_cache import UniformReads
            user = UniformReads({n: v for n, v in self.values.items() if n in k.uniforms})
            self._cuts = k.slices(self._layouts(), user, self.defines, self.device.loop_cap)
            # the uniforms the loop and split functions read: only a new value of one of them
            # plans again (set())
            self._plan_reads = frozenset(user.read)
        self._plain = not self._cuts and self._viewport is None and not self.device.debug

    def set(self, **uniforms) -> "Pass":
        """Set uniform values that stay until changed."""
        vals, _ = self.kernel.check_call(self.inputs, self.outputs, uniforms, self.defines,
                                         partial=True)
        dev = self.device
        if CONTEXT.current is not dev._token:
            dev.activate()  # a rebuild below makes GL objects: in this device's context
        if dev._epoch != self._epoch:
            self._check_live()
        for n in uniforms:
            self.values[n] = vals[n]
        reads = self._plan_reads
        if reads is not None and reads.isdisjoint(uniforms):
            # the plan does not depend on these values: only handles of new names
            u = self._u
            for n in uniforms:
                if n not in u:
                    u[n] = self.compiled.handle(n)
        elif self._checks:
            self._plan()
        else:
            for n in uniforms:
                self._u[n] = self.compiled.handle(n)
        self._state.owner = None
        return self

    def bind(self, **arrays) -> "Pass":
        """Replace inputs/outputs by arrays of the same layout (e.g. swap ping-pong buffers)."""
        dev = self.device
        dev.activate()
        for k, a in arrays.items():
            table = self.inputs if k in self.inputs else self.outputs if k in self.outputs else None
            if table is None:
                raise KeyError(f"this pass has no input or output named {k!r}")
            if getattr(a, "layout", None) != table[k].layout:
                raise ValueError(f"{k}: new array's layout differs from the prepared one")
            if getattr(a, "released", False):
                raise ValueError(f"{k}: the new array has been released")
            if getattr(a, "device", dev) is not dev:
                raise ValueError(f"{k}: the new array lives on another device")
        new_in = {k: a for k, a in arrays.items() if k in self.inputs}
        new_out = {k: a for k, a in arrays.items() if k not in self.inputs}
        dev._check_no_feedback({**self.inputs, **new_in}, {**self.outputs, **new_out})
        self.inputs.update(new_in)
        self.outputs.update(new_out)
        self._tables()
        # checked and resolved at the next draw (an array bound earlier may have been released
        # meanwhile: the draw refuses it then, so ping-pong code may release and re-bind in any
        # order); the pass keeps no reference to an array it no longer uses
        if new_out:
            self._fbo_epoch = -1
        self._epoch = -1
        return self

    def _rebind(self):
        for use, unit in self._binds:
            use(unit)

    def _missing(self):
        missing = [n for n in self.kernel.uniforms if n not in self.values]
        if missing:
            raise ValueError(f"{self.kernel.name}: missing uniform(s) {missing} "
                             "(give them to prepare(), set() or run())")

    def _restore(self):
        if self.device._epoch != self._epoch:
            self._check_live()
        c = self.compiled
        if not self._complete:  # every declared uniform has a value (they are never removed)
            self._missing()
            self._complete = True
        # passes sharing a program (e.g. the two parities of a training step) hand it back and
        # forth: only the values that are not the very objects it holds go through put()
        held = self._state.held
        put = c.put
        for n, v in self.values.items():
            if held.get(n, _NONE) is not v:
                put(n, v)
        self._state.owner = self

    # ---- drawing -----------------------------------------------------------------------------
    def run(self, **uniforms) -> None:
        # The hot path of every iterative algorithm: this repeats Device._draw inline, with the
        # per-pass state resolved in advance, to stay close to raw moderngl's cost per pass.
        dev = self.device
        if CONTEXT.current is not dev._token:
            dev.activate()
        if dev._epoch != self._epoch:
            self._check_live()
        st = self._state
        if uniforms:
            if self._checks and not self._outside_plan(uniforms):
                # a value the plan reads (the loop's cuts): plan again
                self.set(**uniforms)
            else:
                u = self._u
                values = self.values
                mine = st.owner is self
                held = st.held
                for name, v in uniforms.items():
                    h = u.get(name, _NONE)
                    if h is _NONE or type(v) not in _PLAIN:
                        # an unknown name, or a value that may change in place (a list, an
                        # array): checked and held as a tuple
                        self.set(**{name: v})
                        mine = False
                        continue
                    values[name] = v
                    # written unless the program holds this very value already
                    if mine and h is not None and held.get(name, _NONE) is not v:
                        h.value = v
                        held[name] = v
        if st.owner is not self:  # another pass or run() used this program since: restore ours
            self._restore()
        for use, unit in self._binds:
            use(unit)
        cnt = dev.counter
        if dev._written is not self._writes:   # another target than the previous draw's
            self._switched(cnt)
        if self._plain and self.blend is dev._blend and not dev.timing and dev.tracer is None:
            self._fbo.use()
            self._render(4, 3, 0, -1)
            t = self._tally
            if t.label is not cnt.label or t.gen is not cnt._gen:
                t = self._tally = cnt.tally(self.kernel.name, "prepared", self._fragments)
            t.n += 1
            if dev._observers:
                self._report()
                dev._emit_pass(self.kernel.name, self._fragments, len(self._outs), self.blend,
                               "prepared")
            return
        c = self.compiled
        if dev._observers:
            self._report()
        if self._cuts:
            dev._issue_slices(c, self._fbo, self._outs, self._viewport, self.blend,
                              self._fragments, self._rebind, self._cuts, self.kernel.split)
            return
        dev._issue(c, self._fbo, self._outs, self._viewport, self.blend, self._fragments,
                   self._rebind)

    __call__ = run

    def _layouts(self) -> dict:
        return {n: a.layout for n, a in list(self.inputs.items()) + list(self.outputs.items())}

    def _report(self, size=None, count: int = 1, values=None, fragments=None) -> None:
        """Hand one call (``count`` alike) to the device's listeners."""
        k = self.kernel
        vals = self.values if values is None else values
        if size is None and self.rect is not None:
            size = tuple(self.rect)[2:]
        self.device._emit_call(k, self._layouts(), {n: v for n, v in vals.items()
                                                    if n in k.uniforms},
                               self.defines, self._fragments if fragments is None else fragments,
                               size, count)

    def _outside_plan(self, uniforms) -> bool:
        """Whether new ``uniforms`` of a loop or split kernel leave its plan as it is (none of
        them read by its loop or split functions) and are plain numbers of their
        declared types: then they are written as on the fast path, with no new plan."""
        reads = self._plan_reads
        if reads is None or not reads.isdisjoint(uniforms):
            return False
        types = self.kernel.uniforms
        for n, v in uniforms.items():
            spec = types.get(n)
            if spec is None:
                return False
            tv, t = type(v), spec[0]
            if not ((tv is float and t == "float") or
                    (tv is int and t == "int" and -2147483648 <= v <= 2147483647)):
                return False
        return True

    def _switched(self, cnt) -> None:
        """Count a draw into another target than the previous draw's, and a dependent pass
        when it reads what that draw wrote."""
        dev = self.device
        written = dev._written
        label = cnt.label
        cnt.switches[label] += 1
        for r in self._reads:
            if r in written:      # reads what the previous draw wrote: a dependent pass
                cnt.dependent[label, self.kernel.name] += 1
                break
        dev._written = self._writes

    @property
    def passes_per_run(self) -> int:
        """Render passes one :meth:`run` draws (more than 1 when a split loop is cut; an
        accumulating draw costs :meth:`Device.accumulate_passes` where the device has no float
        blending)."""
        acc, k, n = self.device.accumulate_passes, len(self._outs), len(self._cuts)
        if n <= 1:
            return acc(k, self.blend)
        combine = self.kernel.split.combine
        if self.blend is None or self.blend == combine:
            return acc(k, self.blend) + (n - 1) * acc(k, combine)
        # the slices into temporaries, then one accumulating copy per output (_issue_slices)
        return 1 + (n - 1) * acc(k, combine) + k * acc(1, self.blend)

    def repeat(self, name: str, values) -> int:
        """Run the pass once per value of uniform ``name`` (e.g. a loop index); returns the count.

        Same result as ``for v in values: self.run(**{name: v})``, and each draw is still one
        counted render pass, but inputs, framebuffer, viewport and blend mode are bound once and
        each further pass costs one uniform write and one draw (for long multipass loops such as
        one accumulating pass per training vector). With ``timing=True`` it runs pass by pass.
        """
        values = list(values)
        if not values:
            return 0
        if name not in self.kernel.uniforms:
            raise ValueError(f"{self.kernel.name}: unknown uniform {name!r}")
        self.run(**{name: values[0]})
        h = self.compiled.handle(name)
        dev = self.device
        fast = self._plain and (self.blend is None or dev.float_blending)
        if dev.timing or dev.tracer is not None or h is None or len(values) == 1 or \
                self._checks or not fast:
            # sub-rectangles, split loops and emulated accumulation need the full path
            for v in values[1:]:
                self.run(**{name: v})
            return len(values)
        t = self.kernel.uniforms[name][0]
        rest = values[1:]
        kinds = set(map(type, rest))
        if t == "int" and kinds == {int} and -2**31 <= min(rest) and max(rest) < 2**31:
            checked = rest                      # plain ints in range: nothing to convert
        elif t == "float" and kinds <= {float}:
            checked = rest
        else:
            checked = [check_uniform(self.kernel.name, name, t, v) for v in rest]
        render = self.compiled.vao.render
        for v in checked:
            h.value = v
            render(4, vertices=3)
        self.values[name] = checked[-1]
        self._state.held[name] = checked[-1]
        self.device.counter.record(self._fragments, count=len(values) - 1,
                                   kernel=self.kernel.name, path="repeat")
        if dev._observers:      # each value's call: its uniforms may decide what it does
            vals = dict(self.values)
            for v in checked:
                vals[name] = v
                self._report(values=vals)
            dev._emit_pass(self.kernel.name, self._fragments, len(self._outs), self.blend,
                           "repeat", count=len(checked))
        return len(values)

    def sweep(self, rects, each=None) -> int:
        """Draw the pass once per rect ``(x, y, w, h)`` of the outputs; returns the passes drawn.

        Each draw is a counted render pass over that sub-rectangle (blended, or accumulated by
        ping-pong passes, as the pass's ``blend``/``accumulate`` says). ``each(i)``, when given,
        runs before draw ``i`` and the inputs are bound again after it: e.g. to move a
        uniform-block input's window (:meth:`BlockArray.select
        <shadergpgpu.engine.blocks.BlockArray.select>`) so that every fragment of one draw reads
        one address. Uniforms stay as set; a pass with a split loop cannot sweep.
        """
        if self._cuts:
            raise ValueError(f"{self.kernel.name}: a pass with a split loop cannot sweep rects")
        dev = self.device
        dev.activate()
        if dev._epoch != self._epoch:
            self._check_live()
        if self._state.owner is not self:
            self._restore()
        c = self.compiled
        outs, fbo, blend, binds = self._outs, self._fbo, self.blend, self._binds
        drawn = 0
        with dev._holding(c):                # other kernels between the draws may evict it
            for i, rect in enumerate(rects):
                if each is not None:
                    each(i)
                for use, unit in binds:
                    use(unit)
                viewport, frags = dev._viewport(outs, rect)
                if dev._observers:
                    self._report(None if viewport is None else viewport[2:], fragments=frags)
                seen = dev._fbo_epoch
                drawn += dev._issue(c, fbo, outs, viewport, blend, frags, self._rebind)
                if self._state.owner is not self:  # an emulated accumulation ran other kernels
                    self._restore()
                if dev._fbo_epoch != seen:  # ... and its framebuffers may have pushed ours out
                    fbo = self._fbo = dev._framebuffer(outs)
                    self._fbo_epoch = dev._fbo_epoch
        return drawn


def _resource(a):
    """The GL object a pass input reads (texture, or buffer of a buffer / block input)."""
    t = getattr(a, "texture", None)
    return t if t is not None else getattr(a, "buffer", None)


def _same(old, new) -> bool:
    """For ``old == new``: whether a uniform holding ``old`` already holds ``new``, i.e. no
    zero differs in sign (-0.0 == 0.0 in Python, but 1 / u differs in the shader)."""
    t = type(new)
    if t is float:
        return new != 0.0 or math.copysign(1.0, new) == math.copysign(1.0, old)
    if t is tuple:
        if 0.0 not in new:  # C-level scan: no zero, nothing to tell apart
            return True
        return all(type(b) is not float or _same(a, b) for a, b in zip(old, new))
    return True


def _binder(arr):
    """The cheapest callable that binds ``arr`` to a texture unit."""
    tex = getattr(arr, "texture", None)
    return tex.use if tex is not None and type(arr).__name__ == "DeviceArray" else arr.bind
