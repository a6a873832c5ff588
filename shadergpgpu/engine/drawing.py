"""Drawing render passes: what :meth:`Device.run` and :meth:`Device.prepare` do with a kernel.

:class:`Drawing` is the part of :class:`~shadergpgpu.engine.device.Device` that turns a kernel
call into draws: checking the call against the device's limits (render targets, texture units,
float blending, feedback loops), the framebuffer and viewport of the outputs, split loops cut
into slices within the loop cap, accumulation by hardware blending or by ping-pong passes where
float blending is missing, and the draw itself with the pass counter. The device's state (its
context, caches, pool, counter) is set up in ``device.py``; this mixin only uses it.
"""
from __future__ import annotations

import time

import moderngl

from . import sanitizer as _sanitizer
from .arrays import DeviceArray
from .calls import QUICK_LAYOUTS, QuickCall, _live, _Signature
from .kernels import Kernel, check_uniform
from .observe import Observable
from .lifetime import CONTEXT
from .passes import Compiled, Pass, blend_mode

_BLEND_EQ = {"add": moderngl.FUNC_ADD, "max": moderngl.MAX, "min": moderngl.MIN}

_OUT_NAMES = tuple(f"OUT{k}" for k in range(16))
_EMPTY: dict = {}


def _output_table(outputs) -> dict:
    if isinstance(outputs, DeviceArray):
        return {"OUT": outputs}
    if isinstance(outputs, dict):
        return dict(outputs)
    outputs = list(outputs)
    if len(outputs) <= len(_OUT_NAMES):
        return dict(zip(_OUT_NAMES, outputs))
    return {f"OUT{k}": a for k, a in enumerate(outputs)}


def _combine_mode(blend, accumulate):
    b, a = blend_mode(blend), blend_mode(accumulate)
    if b is not None and a is not None:
        raise ValueError("give blend= or accumulate=, not both")
    return b if b is not None else a



class Drawing(Observable):
    """Mixin of :class:`~shadergpgpu.engine.device.Device`: running kernels as render passes
    (reported to the device's listeners, :mod:`.observe`)."""

    #: the capture open on the device (:mod:`.capture`): it records run's calls
    _capture = None

    def run(self, kernel: Kernel, outputs, inputs: dict | None = None,
            uniforms: dict | None = None, defines: dict | None = None, blend=False, rect=None,
            slices: int | None = None, accumulate=None) -> int:
        """Run ``kernel`` writing ``outputs``; returns the number of passes drawn.

        outputs : DeviceArray (named OUT), list (OUT0..OUTk) or dict name -> DeviceArray; 1..8.
        inputs : dict name -> DeviceArray or BufferArray.
        uniforms : dict name -> value (every declared uniform without a default is required).
        defines : overrides of the kernel's declared defines.
        blend : False, True/"add" (dst += src), "max" or "min" by hardware float blending
            (refused where the device or profile has none).
        accumulate : like ``blend`` ("add", "max", "min"), by blending where the device can and
            by ping-pong passes where it cannot (see :meth:`accumulate_passes`).
        rect : (x, y, w, h) sub-rectangle of the output texture to shade; default all of it.
        slices : for a kernel with a split loop, at least this many passes (more when the loop
            cap needs them).
        """
        if self._capture is not None:
            return self._capture.run(kernel, outputs, inputs, uniforms, defines, blend, rect,
                                     slices, accumulate)
        if CONTEXT.current is not self._token:
            self.activate()
        qkey = None
        if blend is False and rect is None and slices is None and accumulate is None and \
                not defines and (inputs is None or type(inputs) is dict) and \
                (uniforms is None or type(uniforms) is dict):
            # a plain call: one lookup on the kernel and the names (calls.py); the outputs
            # as one array (named OUT: 0) or a list of k arrays (OUT0.., k)
            ins = _EMPTY if inputs is None else inputs
            to = type(outputs)
            if to is DeviceArray:
                qkey = (kernel, 0, *ins, None, *(uniforms or ()))
                outputs_t = (outputs,)
            elif (to is list or to is tuple) and 0 < len(outputs) <= len(_OUT_NAMES):
                qkey = (kernel, len(outputs), *ins, None, *(uniforms or ()))
                outputs_t = outputs
            if qkey is not None:
                for q in self._quick.get(qkey, ()):     # one per set of layouts, newest first
                    if q.call(self, outputs_t, ins, uniforms or _EMPTY):
                        return 1
        cnt = self.counter
        cnt._events[cnt.label, "run"] += 1
        inputs = dict(inputs) if inputs else {}
        outs = _output_table(outputs)
        uniforms = uniforms or {}
        # What validation depends on, but for the arrays' identity and the uniform values: a
        # call of a signature seen before skips the checks that the signature decides.
        try:
            sig = (kernel, blend, accumulate, None if rect is None else tuple(rect), slices,
                   tuple(defines.items()) if defines else (), tuple(uniforms),
                   *[(n, type(a), a.layout) for n, a in inputs.items()], None,
                   *[(n, type(a), a.layout) for n, a in outs.items()])
            memo = self._calls.get(sig)
        except (TypeError, AttributeError):  # unhashable or not arrays: the checks say why
            sig = memo = None
        if memo is None or self.sanitizer is not None or not _live(self, inputs, outs):
            drawn = self._run_checked(kernel, inputs, outs, uniforms, defines, blend, rect,
                                      slices, accumulate, sig)
            if qkey is not None and self.sanitizer is None:
                self._remember_quick(qkey, sig, outs, inputs)
            return drawn
        if qkey is not None:
            self._remember_quick(qkey, sig, outs, inputs)
        vals = dict(memo.defaults)
        types = memo.types
        for k, v in uniforms.items():
            t = types[k]
            tv = type(v)
            if (tv is float and t == "float") or \
                    (tv is int and t == "int" and -2147483648 <= v <= 2147483647):
                vals[k] = v
            else:
                vals[k] = check_uniform(kernel.name, k, t, v)
        cuts = memo.plan(vals)
        if self._observers:
            self._emit_call(kernel, memo.layouts, vals, memo.defs, memo.frags, memo.size)
        c = memo.compiled
        if not c.alive:  # dropped by the compiled-kernel cache: compile again
            c = memo.compiled = self.compiled(kernel, inputs, outs, memo.defs)
        put = c.put
        for name, v in vals.items():
            put(name, v)
        st = c.state
        if st.owner is not memo:  # the shape uniforms: held since this signature's last call
            for name, v in memo.shapes:
                put(name, v)
            st.owner = memo
        arrs = [outs[n] for n in memo.out_names]
        self._note_dependent(kernel, inputs, arrs)
        mode = memo.mode
        if cuts or (mode is not None and not self.float_blending):
            return self._draw_call(c, inputs, arrs, memo.viewport, memo.frags, mode, cuts,
                                   kernel.split, None)
        # one plain draw: bind, the framebuffer this signature used last (while the cache
        # kept it), draw
        for name, unit in c.units:
            inputs[name].bind(unit)
        fbo = memo.fbo
        if fbo is None or memo.fbo_epoch != self._fbo_epoch or \
                any(a.texture is not t for a, t in zip(arrs, memo.fbo_textures)):
            fbo = memo.fbo = self._framebuffer(arrs)
            memo.fbo_textures = [a.texture for a in arrs]
            memo.fbo_epoch = self._fbo_epoch
        self._draw(c, fbo, memo.viewport, mode, memo.frags)
        return 1

    def _remember_quick(self, qkey, sig, outs: dict, inputs: dict) -> None:
        """Keep the fast path of a plain call whose signature the checks passed."""
        if qkey[0].split is not None or any(type(a) is not DeviceArray for a in inputs.values()):
            return      # cut across passes, or inputs other than device arrays: full path
        memo = self._calls.get(sig)
        if memo is None or tuple(outs) != memo.out_names:
            return
        q = QuickCall(memo, tuple(a.layout for a in outs.values()),
                      tuple(a.layout for a in inputs.values()))
        quick = self._quick
        had = quick.get(qkey)
        if had is None and len(quick) >= self.cache_size:
            del quick[next(iter(quick))]    # bounded, oldest out
        # the same names with other layouts (e.g. the levels of a reduction) keep theirs
        quick[qkey] = [q] + [o for o in had or () if not q.same_layouts(o)][:QUICK_LAYOUTS - 1]

    def _run_checked(self, kernel, inputs, outs, uniforms, defines, blend, rect, slices,
                     accumulate, sig) -> int:
        """:meth:`run` with every check; remembers what the signature ``sig`` decided."""
        self.activate()
        mode = _combine_mode(blend, accumulate)
        self._validate(kernel, inputs, outs, blend_mode(blend))
        vals, defs = kernel.check_call(inputs, outs, uniforms, defines)
        layouts = {n: a.layout for n, a in list(inputs.items()) + list(outs.items())}
        arrs = [outs[n] for n in kernel.outputs]
        viewport, frags = self._viewport(arrs, rect)
        memo = _Signature(self, kernel, layouts, defs, slices,
                          None if viewport is None else viewport[2:])
        cuts = memo.plan(vals)
        if self._observers:
            self._emit_call(kernel, layouts, dict(vals), defs, frags, memo.size)
        c = self.compiled(kernel, inputs, outs, defs)
        for n, a in layouts.items():
            vals[f"sg_{n}_shape"] = a.shape_uniform
        for name, v in vals.items():
            c.put(name, v)
        c.state.owner = None
        self._note_dependent(kernel, inputs, arrs)
        watch = None if self.sanitizer is None else \
            self.sanitizer.watch(kernel, inputs, outs, vals, mode, viewport)
        if sig is not None and self.sanitizer is None:
            memo.finish(c, uniforms, layouts, viewport, frags, mode)
            calls = self._calls
            if len(calls) >= self.cache_size:  # bounded, oldest out (a hit costs no reorder)
                del calls[next(iter(calls))]
            calls[sig] = memo
        return self._draw_call(c, inputs, arrs, viewport, frags, mode, cuts, kernel.split,
                               watch)

    def _draw_call(self, c, inputs, arrs, viewport, frags, mode, cuts, split, watch):
        def bind():
            for name, unit in c.units:
                inputs[name].bind(unit)

        bind()
        fbo = self._framebuffer(arrs)
        if not cuts:
            drawn = self._issue(c, fbo, arrs, viewport, mode, frags, bind)
        else:
            drawn = self._issue_slices(c, fbo, arrs, viewport, mode, frags, bind, cuts, split)
        if watch is not None:
            watch.check()
        return drawn

    def prepare(self, kernel: Kernel, outputs, inputs: dict | None = None,
                uniforms: dict | None = None, defines: dict | None = None, blend=False,
                rect=None, accumulate=None) -> Pass:
        """A reusable :class:`~shadergpgpu.engine.passes.Pass` (same arguments as :meth:`run`;
        uniforms may be given later, to :meth:`Pass.set` or :meth:`Pass.run`)."""
        self.activate()
        inputs = dict(inputs or {})
        outs = _output_table(outputs)
        mode = _combine_mode(blend, accumulate)
        self._validate(kernel, inputs, outs, blend_mode(blend))
        cls = Pass if self.sanitizer is None else _sanitizer.DebugPass
        return cls(self, kernel, inputs, outs, uniforms or {}, defines, mode, rect)

    def passes_for(self, kernel: Kernel, inputs: dict, outputs, uniforms=None, defines=None,
                   slices: int = 1) -> int:
        """Passes :meth:`run` would draw for this call (for pass plans), without drawing."""
        outs = _output_table(outputs)
        vals, defs = kernel.check_call(dict(inputs), outs, uniforms or {}, defines,
                                       partial=True)
        layouts = {n: a.layout for n, a in list(inputs.items()) + list(outs.items())}
        return max(1, len(kernel.slices(layouts, vals, defs, self.loop_cap, slices)))


    @property
    def max_outputs(self) -> int:
        """Render targets one pass may write (the profile's draw buffers, at most 8)."""
        n = min(8, self.caps.max_draw_buffers)
        p = self.profile.limits.get("max_draw_buffers")
        return min(n, p) if p else n

    @property
    def float_blending(self) -> bool:
        """Whether passes may blend into float32 targets (device and profile)."""
        return bool(self.caps.float_blending) and \
            self.profile.limits.get("float32_blend") is not False

    @property
    def max_inputs(self) -> int:
        n = self.caps.max_texture_image_units or 16
        p = self.profile.limits.get("max_texture_units")
        return min(n, p) if p else n

    @property
    def buffer_textures(self) -> bool:
        return self.profile.limits.get("buffer_textures") is not False

    def accumulate_passes(self, n_outputs: int, blend) -> int:
        """Passes one accumulating (``blend``) pass costs on this device: 1 with float blending,
        else 1 + 2 per output (draw into temporaries, combine, copy back)."""
        if blend_mode(blend) is None or self.float_blending:
            return 1
        return 1 + 2 * n_outputs

    def _validate(self, kernel, inputs: dict, outs: dict, blend=None) -> None:
        if not isinstance(kernel, Kernel):
            raise TypeError(f"expected a Kernel, got {type(kernel).__name__} {kernel!r} "
                            "(declare shaders with shadergpgpu.Kernel(file, inputs=..., "
                            "uniforms=...))")
        if not 1 <= len(outs) <= self.max_outputs:
            where = "" if self.profile.is_native else f" under profile {self.profile.name!r}"
            raise ValueError(f"{kernel.name}: a pass writes 1 to {self.max_outputs} outputs"
                             f"{where}, got {len(outs)}")
        if len(inputs) > self.max_inputs:
            raise ValueError(f"{kernel.name}: {len(inputs)} inputs, more than the "
                             f"{self.max_inputs} texture units of this device/profile")
        if not self.buffer_textures and any(
                getattr(getattr(a, "layout", None), "kind", ("",))[0] == "buffer"
                for a in inputs.values()):
            raise ValueError(f"{kernel.name}: profile {self.profile.name!r} has no buffer "
                             "textures (samplerBuffer); pass texture arrays")
        if blend not in (None, False) and not self.float_blending and blend != "emulate":
            raise ValueError(f"{kernel.name}: a blended pass needs float32 blending, which "
                             f"{'profile ' + repr(self.profile.name) if not self.profile.is_native else 'this device'}"
                             " lacks; accumulate with accumulate=True (ping-pong passes) instead")
        size = None
        for n, a in outs.items():
            if not isinstance(a, DeviceArray):
                raise TypeError(f"output {n!r} must be a DeviceArray, got {type(a).__name__}")
            if a.released:
                raise ValueError(f"output {n!r} has been released")
            if a.device is not self:
                raise ValueError(f"output {n!r} lives on another device")
            if size is None:
                size = a.layout.tex_size
            elif a.layout.tex_size != size:
                raise ValueError("all outputs of one pass must have the same texture size "
                                 f"({n!r} is {a.layout.tex_size}, the first is {size})")
        for n, a in inputs.items():
            if getattr(a, "released", False):
                raise ValueError(f"input {n!r} has been released")
            if getattr(a, "device", self) is not self:
                raise ValueError(f"input {n!r} lives on another device")
        self._check_no_feedback(inputs, outs)

    @staticmethod
    def _check_no_feedback(inputs: dict, outs: dict) -> None:
        out_ids = {id(a) for a in outs.values()}
        for n, a in inputs.items():
            if id(a) in out_ids:
                raise ValueError(f"array {n!r} is both an input and an output of one pass; "
                                 "use a second array (ping-pong)")


    def _framebuffer(self, arrs):
        key = tuple(a.texture.glo for a in arrs)
        fbo = self._fbos.get(key)
        if fbo is None:
            fbo = self.ctx.framebuffer(color_attachments=[a.texture for a in arrs])
            self._fbos[key] = fbo
        return fbo

    @staticmethod
    def _viewport(arrs, rect):
        w, h = arrs[0].layout.tex_size
        if rect is None:
            return None, w * h
        x, y, rw, rh = (int(v) for v in rect)
        if x < 0 or y < 0 or rw < 1 or rh < 1 or x + rw > w or y + rh > h:
            raise ValueError(f"rect {tuple(rect)} is not inside the {w}x{h} output texture")
        return (x, y, rw, rh), rw * rh

    def _issue_slices(self, c: Compiled, fbo, arrs, viewport, mode, frags: int, rebind, cuts,
                      split) -> int:
        """Draw a split loop's slices: the slices of one output combine by the split's own rule
        (``split.combine``, normally "add"); the pass's blend then applies once. When the two
        differ (e.g. ``blend="min"`` on a summing loop) the slices go into temporaries that are
        blended into the outputs in one pass each."""
        nb, ne = f"{split.name}_begin", f"{split.name}_end"
        if mode is None or mode == split.combine or len(cuts) == 1:
            drawn = 0
            for i, (lo, hi) in enumerate(cuts):
                c.put(nb, lo)
                c.put(ne, hi)
                seen = self._fbo_epoch
                drawn += self._issue(c, fbo, arrs, viewport,
                                     mode if i == 0 else split.combine, frags, rebind)
                if self._fbo_epoch != seen:  # an emulated accumulation's framebuffers may
                    fbo = self._framebuffer(arrs)  # have pushed ours out of the cache
            return drawn
        from .builtin import COPY
        with self.scope() as s:
            temps = [s.alloc(a.layout, a.shape) for a in arrs]
            drawn = self._issue_slices(c, self._framebuffer(temps), temps, viewport, None,
                                       frags, rebind, cuts, split)
            for a, t in zip(arrs, temps):
                drawn += self.run(COPY, a, inputs={"X": t}, rect=viewport, accumulate=mode)
        rebind()
        return drawn

    def _issue(self, compiled: Compiled, fbo, arrs, viewport, blend, fragments: int,
               rebind) -> int:
        """Draw once, blending by hardware, or by ping-pong passes where float blending is
        missing: draw into temporaries, combine each output with its temporary into a second
        temporary, copy that back (inside the viewport). Returns the passes drawn."""
        if blend is None or self.float_blending:
            self._draw(compiled, fbo, viewport, blend, fragments)
            return 1
        from .builtin import COMBINE, COPY
        mode = {"add": 0, "max": 1, "min": 2}[blend]
        rect = viewport
        with self.scope() as s:
            temps = [s.alloc(a.layout, a.shape) for a in arrs]
            self._draw(compiled, self._framebuffer(temps), viewport, None, fragments)
            for a, t in zip(arrs, temps):
                both = s.alloc(a.layout, a.shape)
                self.run(COMBINE, both, inputs={"A": a, "B": t}, defines={"MODE": mode},
                         rect=rect)
                self.run(COPY, a, inputs={"X": both}, rect=rect)
        rebind()
        return 1 + 2 * len(arrs)

    def _note_dependent(self, kernel, inputs: dict, outs: list) -> None:
        """Count a switch of render target and a dependent pass (one reading what the previous
        draw wrote: a renderer cannot overlap the two). On every
        draw: kept to a few identity tests where the target stays."""
        written = self._written
        if len(outs) == 1:
            t = outs[0].texture
            if len(written) == 1 and written[0] is t:
                return
            now = (t,)
        else:
            now = tuple([a.texture for a in outs])
            if now == written:
                return
        self._written = now
        c = self.counter
        label = c.label
        c.switches[label] += 1
        if written:
            for a in inputs.values():
                t = getattr(a, "texture", None)
                if t is not None and t in written:
                    c.dependent[label, kernel.name] += 1
                    return

    def _timed_render(self, compiled: Compiled, fragments: int) -> None:
        """Draw and record it with its device time: a timer query on a GPU, read when the
        counter is next read (waiting for each would idle the GPU between draws, and an idle
        GPU lowers its clocks: the times would be those of a slower device); on a software
        renderer, whose timer queries do not cover the rasterizer threads, the wall time from
        an idle renderer to the draw's end (finish before and after)."""
        c = self.counter
        name = compiled.kernel.name
        if self.is_software:
            self.ctx.finish()
            t0 = time.perf_counter_ns()
            compiled.vao.render(moderngl.TRIANGLES, 3)
            self.ctx.finish()
            c.record(fragments, time.perf_counter_ns() - t0, kernel=name)
            return
        q = self.ctx.query(time=True)
        with q:
            compiled.vao.render(moderngl.TRIANGLES, 3)
        c.record(fragments, 0, kernel=name)
        c.pending.append((q, c.label, name))
        if len(c.pending) >= 4096:
            c.settle()

    def _draw(self, compiled: Compiled, fbo, viewport, blend, fragments: int) -> None:
        """Issue the draw. ``viewport`` is None for the whole output, else a sub-rectangle."""
        ctx = self.ctx
        if self.sanitizer is not None:  # debug mode: the check pass first (it may raise)
            self.sanitizer.check_reads(compiled, fbo, viewport)
        if self.tracer is not None:  # an open sg.trace records the draw from the GL state
            self.tracer.draw(compiled, fbo, viewport, blend)
        fbo.use()  # also sets the framebuffer's full viewport
        if blend is not self._blend:
            if blend is None:
                ctx.disable(moderngl.BLEND)
            else:
                ctx.enable(moderngl.BLEND)
                ctx.blend_equation = _BLEND_EQ[blend]
            self._blend = blend
        if viewport is not None:
            ctx.viewport = viewport
        if self.timing:
            self._timed_render(compiled, fragments)
        else:
            compiled.vao.render(moderngl.TRIANGLES, 3)
            c = self.counter
            label = c.label
            c._passes[label] += 1
            c._fragments[label] += fragments
            key = compiled.draw_key
            if key[0] is not label:
                key = compiled.draw_key = (label, compiled.kernel.name, "draw")
            c._kpasses[key] += 1
        if self._observers:
            self._emit_pass(compiled.kernel.name, fragments, len(fbo.color_attachments), blend,
                            "draw")
        if viewport is not None:
            fbo.viewport = (0, 0) + fbo.size

