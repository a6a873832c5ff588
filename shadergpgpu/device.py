"""The device: one GL context with its capabilities, texture pool, shader library and counter.

    >>> import numpy as np, shadergpgpu as sg
    >>> dev = sg.Device()                       # headless EGL
    >>> x = dev.array(np.arange(10.0))
    >>> y = dev.empty_like(x)
    >>> dev.run("engine/saxpy.frag", y, inputs={"X": x, "Y": x}, uniforms={"alpha": 2.0})
    >>> y.get()[:4]                              # 3 * arange(10)
    array([0., 3., 6., 9.], dtype=float32)

Kernels are fragment shaders in ``shaders/``. For each input named ``NAME`` the shader gets
``NAME_texel(gi, gj)``, ``NAME_at(r, c)`` and friends; for each output ``NAME`` it gets
``out vec4 NAME`` and ``NAME_grid()`` (see :mod:`shadergpgpu.layout`). A single output array is
named ``OUT``; a list of outputs ``OUT0 .. OUT7``; a dict names them.
"""
from __future__ import annotations

import re

import numpy as np

from . import context as _context
from .arrays import DeviceArray, TexturePool, _to_logical, as_float32
from .layout import Layout, layout_for
from .passes import Pass, PassCounter, blend_mode, current_device as _current
from .programs import ShaderLibrary

_UNIFORM_DECL = re.compile(r"\buniform\s+\w+\s+(\w+)")
_BLEND_EQ = {"add": 0x8006, "max": 0x8008, "min": 0x8007}


class Kernel:
    """A compiled program for one (shader, defines, input layouts, output layouts)."""

    def __init__(self, device, program, source_text: str, input_names, output_names):
        self.program = program
        self.source_text = source_text
        self.units = [(n, u) for u, n in enumerate(input_names)]
        self.output_names = tuple(output_names)
        self.vao = device.ctx.vertex_array(program, [])
        self._declared = set(_UNIFORM_DECL.findall(source_text))
        self._uniforms: dict = {}
        self.owner = None  # the Pass whose uniform values the program holds now
        for name, unit in self.units:
            if name in program:
                program[name].value = unit

    def uniform(self, name: str):
        """moderngl Uniform for ``name``; None when declared but optimised out by the driver."""
        u = self._uniforms.get(name, False)
        if u is False:
            if name in self.program:
                u = self.program[name]
            elif name in self._declared:
                u = None
            else:
                raise ValueError(f"the shader declares no uniform named {name!r}")
            self._uniforms[name] = u
        return u


def _output_table(outputs) -> dict:
    if isinstance(outputs, DeviceArray):
        return {"OUT": outputs}
    if isinstance(outputs, dict):
        return dict(outputs)
    outputs = list(outputs)
    return {f"OUT{k}": a for k, a in enumerate(outputs)}


class Device:
    """A GL context prepared for GPGPU work.

    Parameters
    ----------
    backend : "egl" (default), "glfw", "glfw-visible" or "standalone"; or env SHADERGPGPU_BACKEND.
    device_index : EGL device to use on machines with several GPUs (env SHADERGPGPU_EGL_DEVICE).
    max_texture_size : cap below the driver's MAX_TEXTURE_SIZE (arrays wrap past it).
    timing : record GPU time of every pass with timer queries (costs a sync per pass).
    """

    def __init__(self, backend: str | None = None, device_index: int | None = None,
                 max_texture_size: int | None = None, timing: bool = False,
                 window_size=(512, 512), title: str = "shadergpgpu", shader_root=None):
        self.ctx, backend, self.window = _context.create_gl(backend, device_index,
                                                            window_size, title)
        _current[0] = None
        self.activate()
        self.caps = _context.probe(self.ctx, backend)
        _context.check(self.caps)
        limit = self.caps.max_texture_size
        if max_texture_size is not None:
            if max_texture_size < 1:
                raise ValueError("max_texture_size must be positive")
            limit = min(limit, int(max_texture_size))
        self.max_texture_size = limit
        self.pool = TexturePool(self.ctx)
        self.pool.on_delete = self._forget_texture
        self.shaders = ShaderLibrary(self.ctx, shader_root)
        self.counter = PassCounter()
        self.timing = bool(timing) and self.caps.timer_queries
        self._kernels: dict = {}
        self._fbos: dict = {}
        self._blend = None
        self.ctx.disable(1)  # moderngl.BLEND: off until a pass asks for it
        import moderngl
        self._mgl = moderngl
        self.ctx.blend_func = moderngl.ONE, moderngl.ONE

    def activate(self) -> None:
        """Make this device's GL context current (several devices may live in one process)."""
        if _current[0] is not self:
            if self.window is not None:
                import glfw
                glfw.make_context_current(self.window)
            else:
                self.ctx.mglo.__enter__()
            _current[0] = self

    # ---- arrays -----------------------------------------------------------------------
    def layout(self, shape, packed: bool = True, order: str = "row") -> Layout:
        return layout_for(shape, packed, order, self.max_texture_size)

    def _new(self, shape, layout: Layout) -> DeviceArray:
        self.activate()
        return DeviceArray(self, layout, shape, self.pool.take(layout.tex_size))

    def empty(self, shape, packed: bool = True, order: str = "row") -> DeviceArray:
        """Uninitialised array (a recycled texture may hold old values)."""
        shape = _shape_tuple(shape)
        return self._new(shape, self.layout(shape, packed, order))

    def empty_like(self, a: DeviceArray) -> DeviceArray:
        return self._new(a.shape, a.layout)

    def zeros(self, shape, packed: bool = True, order: str = "row") -> DeviceArray:
        a = self.empty(shape, packed, order)
        self.fill(a, 0.0)
        return a

    def array(self, x, packed: bool = True, order: str = "row", name: str = "array") -> DeviceArray:
        """Upload a numpy array (any real dtype, converted to float32): 1-D or 2-D."""
        a = as_float32(x, name)
        if a.ndim not in (1, 2):
            raise ValueError(f"{name}: device arrays are 1-D or 2-D, got shape {a.shape} "
                             "(use Device.image for (H, W, C) images)")
        out = self._new(a.shape, self.layout(a.shape, packed, order))
        out.texture.write(out.layout.pack_array(_to_logical(a, out.layout)))
        return out

    def image(self, x, name: str = "image") -> DeviceArray:
        """Upload an (H, W) or (H, W, C<=4) image: one pixel per texel, channels in RGBA."""
        a = as_float32(x, name)
        if a.ndim == 2:
            a = a[:, :, None]
        if a.ndim != 3 or a.shape[2] > 4 or a.shape[2] < 1 or a.shape[0] < 1 or a.shape[1] < 1:
            raise ValueError(f"{name}: expected an (H, W) or (H, W, C) image with 1..4 "
                             f"channels, got shape {np.shape(x)}")
        h, w, _ = a.shape
        out = self._new(a.shape, Layout(h, 4 * w, True, "row", self.max_texture_size))
        out.texture.write(out.layout.pack_array(_to_logical(a, out.layout)))
        return out

    def empty_image(self, shape) -> DeviceArray:
        h, w, c = _shape_tuple(shape)
        return self._new((h, w, c), Layout(h, 4 * w, True, "row", self.max_texture_size))

    def fill(self, a: DeviceArray, value: float) -> None:
        """Set every texel of ``a`` (padding included) to ``value`` in one pass."""
        self.run("engine/fill.frag", a, uniforms={"value": float(value)})

    # ---- passes -----------------------------------------------------------------------
    def phase(self, label: str):
        """Context manager: passes inside are counted under ``label``."""
        return self.counter.phase(label)

    def kernel(self, shader: str, inputs: dict, outputs: dict, defines=None) -> Kernel:
        """Compiled kernel for ``shader`` specialised to the inputs' and outputs' layouts."""
        dkey = tuple(sorted((defines or {}).items()))
        ikey = tuple((n, a.signature) for n, a in inputs.items())
        okey = tuple((n, a.layout) for n, a in outputs.items())
        key = (shader, dkey, ikey, okey)
        k = self._kernels.get(key)
        if k is None:
            pre = [(f"<input {n}>", a.glsl_input(n)) for n, a in inputs.items()]
            pre += [(f"<output {n}>", a.layout.glsl_output(n, loc))
                    for loc, (n, a) in enumerate(outputs.items())]
            src = self.shaders.assemble(shader, defines, pre)
            prog = self.shaders.program(src)
            k = Kernel(self, prog, src.text, list(inputs), list(outputs))
            self._kernels[key] = k
        return k

    def run(self, shader: str, outputs, inputs: dict | None = None, uniforms: dict | None = None,
            defines: dict | None = None, blend=False, rect=None) -> None:
        """Run one render pass of ``shader`` writing ``outputs``.

        outputs : DeviceArray (named OUT), list (OUT0..OUTk) or dict name -> DeviceArray; 1..8.
        inputs : dict name -> DeviceArray (or any object with glsl_input/bind/signature).
        uniforms : dict name -> value (float, int, tuple).
        blend : False, True/"add" (accumulate: dst += src), "max" or "min".
        rect : (x, y, w, h) sub-rectangle of the output texture to shade; default all of it.
        """
        self.activate()
        inputs = inputs or {}
        outs = _output_table(outputs)
        self._validate(inputs, outs)
        k = self.kernel(shader, inputs, outs, defines)
        for name, unit in k.units:
            inputs[name].bind(unit)
        if uniforms:
            for name, v in uniforms.items():
                u = k.uniform(name)
                if u is not None:
                    u.value = v
        k.owner = None
        arrs = list(outs.values())
        viewport, frags = self._viewport(arrs, rect)
        self._draw(k, self._framebuffer(arrs), viewport, blend_mode(blend), frags)

    def prepare(self, shader: str, outputs, inputs: dict | None = None,
                uniforms: dict | None = None, defines: dict | None = None, blend=False,
                rect=None) -> Pass:
        """A reusable :class:`~shadergpgpu.passes.Pass` (same arguments as :meth:`run`)."""
        self.activate()
        inputs = inputs or {}
        outs = _output_table(outputs)
        self._validate(inputs, outs)
        k = self.kernel(shader, inputs, outs, defines)
        return Pass(self, k, inputs, outs, uniforms or {}, blend, rect)

    # ---- internals --------------------------------------------------------------------
    def _validate(self, inputs: dict, outs: dict) -> None:
        if not 1 <= len(outs) <= min(8, self.caps.max_draw_buffers):
            raise ValueError(f"a pass writes 1 to {min(8, self.caps.max_draw_buffers)} "
                             f"outputs, got {len(outs)}")
        size = None
        for n, a in outs.items():
            if not isinstance(a, DeviceArray):
                raise TypeError(f"output {n!r} must be a DeviceArray, got {type(a).__name__}")
            if a.released:
                raise ValueError(f"output {n!r} has been released")
            if size is None:
                size = a.layout.tex_size
            elif a.layout.tex_size != size:
                raise ValueError("all outputs of one pass must have the same texture size "
                                 f"({n!r} is {a.layout.tex_size}, the first is {size})")
        for n, a in inputs.items():
            if isinstance(a, DeviceArray) and a.released:
                raise ValueError(f"input {n!r} has been released")
        self._check_no_feedback(inputs, outs)

    @staticmethod
    def _check_no_feedback(inputs: dict, outs: dict) -> None:
        out_ids = {id(a) for a in outs.values()}
        for n, a in inputs.items():
            if id(a) in out_ids:
                raise ValueError(f"array {n!r} is both an input and an output of one pass; "
                                 "use a second array (ping-pong)")

    def _forget_texture(self, tex) -> None:
        """Drop cached framebuffers that attach ``tex`` (it is about to be deleted)."""
        glo = tex.glo
        for key in [k for k in self._fbos if glo in k]:
            self._fbos.pop(key).release()

    def trim(self) -> int:
        """Delete the pool's idle textures (and framebuffers on them); returns how many."""
        self.activate()
        return self.pool.trim()

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

    def _draw(self, kernel: Kernel, fbo, viewport, blend, fragments: int) -> None:
        """Issue the draw. ``viewport`` is None for the whole output, else a sub-rectangle."""
        ctx = self.ctx
        fbo.use()  # also sets the framebuffer's full viewport
        if blend is not self._blend:
            if blend is None:
                ctx.disable(1)  # moderngl.BLEND
            else:
                ctx.enable(1)  # moderngl.BLEND
                ctx.blend_equation = _BLEND_EQ[blend]
            self._blend = blend
        if viewport is not None:
            ctx.viewport = viewport
        if self.timing:
            q = ctx.query(time=True)
            with q:
                kernel.vao.render(4, 3)
            self.counter.record(fragments, q.elapsed)
        else:
            kernel.vao.render(4, 3)
            c = self.counter
            label = c.label
            c.passes[label] += 1
            c.fragments[label] += fragments
        if viewport is not None:
            fbo.viewport = (0, 0) + fbo.size

    def finish(self) -> None:
        """Wait until the GPU has finished every pass issued so far."""
        self.activate()
        self.ctx.finish()

    def release(self) -> None:
        """Release every GL object this device made and the context itself."""
        self.activate()
        for f in self._fbos.values():
            f.release()
        self._fbos.clear()
        for k in self._kernels.values():
            k.vao.release()
        self._kernels.clear()
        self.pool.trim()
        try:
            self.ctx.release()
        finally:
            _current[0] = None
            if self.window is not None:
                import glfw
                glfw.destroy_window(self.window)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __deepcopy__(self, memo):
        # A device is a handle on a GL context: estimators that are cloned share it.
        return self

    def __repr__(self):
        return f"Device({self.caps.renderer!r}, backend={self.caps.backend!r})"


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


_default = None


def get_device(**kwargs) -> Device:
    """The process-wide default device, created on first use (kwargs apply then only)."""
    global _default
    if _default is None:
        _default = Device(**kwargs)
    return _default
