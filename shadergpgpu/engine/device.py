"""The device: one GL context with its capabilities, texture pool, shader library and counter.

    >>> import numpy as np, shadergpgpu as sg
    >>> dev = sg.Device()                       # headless EGL
    >>> x = dev.array(np.arange(10.0))
    >>> y = dev.empty_like(x)
    >>> sg.builtin.SAXPY(y, X=x, Y=x, alpha=2.0)
    1
    >>> y.get()[:4]                              # 3 * arange(10)
    array([0., 3., 6., 9.], dtype=float32)

Kernels are declared once (:class:`~shadergpgpu.engine.kernels.Kernel`) and run with
:meth:`Device.run` / :meth:`Device.prepare` (or by calling the kernel). Compiled programs,
framebuffers and idle textures are bounded caches (least recently used first out), so memory
does not grow with the number of distinct shapes.

:meth:`Device.run` turns a kernel call into draws: it checks the call against the device's
limits (render targets, texture units, float blending, feedback loops), binds the framebuffer
and viewport of the outputs, cuts split loops into slices within the loop cap, accumulates by
hardware blending or by ping-pong passes where float blending is missing, and reports each pass
to the device's listeners (:mod:`.observe`).
"""
from __future__ import annotations

from contextlib import contextmanager

import os
import threading
import time
import weakref

import moderngl
import numpy as np

from . import context as _context
from . import profiles as _profiles
from . import sanitizer as _sanitizer
from .arrays import DeviceArray, TexturePool, as_float32, texels, upload
from .builtin import COMBINE, COPY, FILL
from .cache import LRU, CacheBounds
from .call_cache import QUICK_LAYOUTS, CallSignature, QuickCall, arrays_live
from .errors import CapabilityError
from .kernels import Kernel, check_uniform, uniform_declarations
from .lifetime import CONTEXT, Token, free_context, trim_caches
from .limits import Limits
from .layout import Layout, layout_for
from .counter import PassCounter
from .observe import Observable
from .passes import Compiled, Pass, blend_mode
from .programs import ShaderLibrary
from .scope import PingPong, Scope
from .transfer import PboPool, read_rect
from .tuning import Tunable, Tuning
from .glraw import GLRaw

# Loop iterations one fragment may run before the renderer stops the loop. Mesa's llvmpipe
# (gallivm) ends every loop after 65,535 iterations (nested loops count together) without an
# error; the NVIDIA driver has no such cap (very long draws are capped by the algorithms instead).
SOFTWARE_LOOP_CAP = 65_535


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


class Device(Observable, Tunable):
    """A GL context prepared for GPGPU work.

    Parameters
    ----------
    backend : {"egl", "glfw", "glfw-visible", "standalone"} or None, default=None
        The context's backend; None: env ``SHADERGPGPU_BACKEND``, else "egl" (headless). The
        glfw backends open a window (its size and title: the
        :class:`~shadergpgpu.frontends.window.Viewer`'s).
    device_index : int or None, default=None
        EGL device to use on machines with several GPUs (env ``SHADERGPGPU_EGL_DEVICE``).
    profile : str, path or Profile, default=None
        A device profile (name, JSON path or :class:`~shadergpgpu.engine.profiles.Profile`;
        None: env ``SHADERGPGPU_PROFILE``, else ``native``): the device behaves as that GPU (its
        texture size, render targets, float blending, loop cap, texture units, buffer textures).
    limits : Limits or None, default=None
        :class:`~shadergpgpu.engine.limits.Limits`: texture size and loop cap below the
        driver's (None: none).
    caches : CacheBounds or None, default=None
        :class:`~shadergpgpu.engine.cache.CacheBounds`: compiled kernels, framebuffers,
        per-operation state and idle texture memory kept (None: ``CacheBounds()``).
    tuning : Tuning or iterable of Tuning, default=()
        :class:`~shadergpgpu.engine.tuning.Tuning` values (the engine's
        :class:`~shadergpgpu.engine.tuning.EngineTuning`, an algorithm's): what calls on this
        device use instead of the defaults for its kind (:meth:`tune`, :meth:`tuned`).
    timing : bool, default=False
        Record the device time of every pass, per phase and kernel: timer queries read when
        the counter is next read on a GPU; the wall time between waits around each draw on a
        software renderer (whose timer queries do not see its rasterizer threads).
    shader_root : str, path or None, default=None
        A folder of the user's shaders, searched before the package's ``shaders/``.
    debug : bool or None, default=None
        Debug mode (None: env ``SHADERGPGPU_DEBUG``, read here): every kernel's reads are
        checked against its arrays' bounds and its outputs for NaN/Inf that no input holds, with
        a :class:`~shadergpgpu.engine.errors.KernelDebugError` naming the kernel, the array and
        the first bad index (:mod:`~shadergpgpu.engine.sanitizer`; slow: a check pass and
        read-backs per pass). Off, nothing changes: same sources, same per-pass path.
    api : {"gl", "gles"} or None, default=None
        "gl": desktop OpenGL 3.3 core; "gles": a native OpenGL ES 3.0+ context through EGL,
        running the kernels' GLSL ES sources (:mod:`~shadergpgpu.engine.gles`); None: env
        ``SHADERGPGPU_API``, else "gl".

    Raises
    ------
    CapabilityError
        A context or profile without what the library needs (float32 render targets, ...).

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> dev = sg.Device()                             # headless EGL
    >>> x = dev.array(np.arange(4.0))
    >>> float(sg.sum(x).get()[0])
    6.0
    >>> small = sg.Device(limits=sg.Limits(max_texture_size=256))
    >>> small.max_texture_size
    256
    >>> dev.release(); small.release()
    """

    def __init__(self, backend: str | None = None, device_index: int | None = None, *,
                 profile=None, limits: Limits | None = None, caches: CacheBounds | None = None,
                 tuning=(), timing: bool = False, shader_root=None, debug: bool | None = None,
                 api: str | None = None):
        limits = _check_group(limits, Limits, "limits")
        caches = _check_group(caches, CacheBounds, "caches")
        self._tunings, self._resolved = {}, {}
        for t in (tuning,) if isinstance(tuning, Tuning) else tuple(tuning or ()):
            self.tune(t)
        max_texture_size, loop_cap = limits.max_texture_size, limits.loop_cap
        cache_size, pool_bytes = caches.programs, caches.pool_bytes
        self.ctx, backend, self.window = _context.create_gl(backend, device_index, api)
        self._token = Token()
        self._thread = threading.current_thread()
        self._orphans: list = []  # textures of arrays released in other threads
        # what could leave a prepared pass pointing at something gone (an array released, a
        # framebuffer or compiled kernel dropped, trim) moves the epoch; passes check on change
        self._epoch = 0
        self._written = ()   # textures the last draw wrote (the counter's dependent passes)
        self._fbo_epoch = 0  # moves only when a framebuffer is dropped (part of the epoch)
        # a device dropped without release() frees its context when collected
        self._finalizer = weakref.finalize(self, free_context, self.ctx, self.window,
                                           self._token)
        CONTEXT.current = None
        self.activate()
        self.caps = _context.probe(self.ctx, backend)
        _context.check(self.caps)
        if profile is None:
            profile = os.environ.get("SHADERGPGPU_PROFILE") or "native"
        self.profile = _profiles.load(profile)
        lim = self.profile.limits
        if lim.get("float32_render") is False:
            raise CapabilityError(f"profile {self.profile.name!r} has no float32 render "
                                  "targets; the library needs them (it never falls back to "
                                  "16-bit or 8-bit textures)")
        limit = self.caps.max_texture_size
        if lim.get("max_texture_size"):
            limit = min(limit, lim["max_texture_size"])
        if max_texture_size is not None:
            limit = min(limit, int(max_texture_size))
        self.max_texture_size = limit
        if loop_cap is None:
            loop_cap = SOFTWARE_LOOP_CAP if self.is_software else None
        caps = [c for c in (loop_cap, lim.get("loop_cap")) if c is not None]
        self.loop_cap = int(min(caps)) if caps else None
        if self.is_software:
            _context.tune_malloc_for_software()     # llvmpipe's per-draw memory (see context.py)
        if pool_bytes is None:
            pool_bytes = (64 << 20) if self.is_software else (1 << 30)
        self.pool = TexturePool(self.ctx, pool_bytes)
        self.pool.on_delete = self._forget_texture
        # pixel buffer objects for readbacks (transfer.py)
        self._pbos = PboPool(self.ctx, caches.pbo_idle_bytes)
        self.shaders = ShaderLibrary(self.ctx, shader_root)   # GLSL ES on an ES context
        if debug is None:
            debug = _sanitizer.env_debug()
        self.sanitizer = _sanitizer.Sanitizer(self) if debug else None
        self.counter = PassCounter()
        self.timing = bool(timing) and self.caps.timer_queries
        self.tracer = None  # an open sg.trace(...) records what this device does
        self._flush_fn = None
        self._placeholder = None
        self._compiled = LRU(cache_size, self._evict_compiled)
        self._bodies = LRU(cache_size)
        self._fbos = LRU(caches.framebuffers, self._evict_fbo)
        self._resources = LRU(caches.resources, self._evict_resource)
        # call signatures of Device.run already validated (Device.run): no GL objects, only
        # what the checks decided; bounded like the compiled kernels it points at
        self._calls: dict = {}
        self._quick: dict = {}   # their fast paths, by kernel and argument names (call_cache.py)
        self.cache_size = int(cache_size)
        self._blend = None
        self.ctx.disable(moderngl.BLEND)
        self.ctx.blend_func = moderngl.ONE, moderngl.ONE

    @property
    def debug(self) -> bool:
        """Whether the device runs in debug mode (see the ``debug`` parameter)."""
        return self.sanitizer is not None

    @property
    def is_software(self) -> bool:
        """True on Mesa's CPU renderers (llvmpipe, softpipe)."""
        r = self.caps.renderer.lower()
        return "llvmpipe" in r or "softpipe" in r or "swrast" in r

    @property
    def plans_for_software(self) -> bool:
        """Whether kernels chosen for speed are the software renderer's: the renderer's kind,
        unless the profile is one ``shadergpgpu calibrate`` measured (its ``kind``): counting
        here under a GPU's profile then runs the kernels that GPU runs."""
        kind = self.profile.kind
        return kind == "software" if kind else self.is_software

    def activate(self) -> None:
        """Make this device's GL context current (several devices may live in one process).
        Every entry into GL calls it; a released device refuses with a clear error."""
        token = self._token
        if CONTEXT.current is not token:
            if not token.alive:
                raise RuntimeError("this Device has been released; create a new one "
                                   "(shadergpgpu.Device()) for further work")
            if threading.current_thread() is not self._thread:
                raise RuntimeError(
                    f"this Device belongs to thread {self._thread.name!r} and is used from "
                    f"thread {threading.current_thread().name!r}: a GL context is current in "
                    "one thread at a time. Use each device from the thread that created it: "
                    "shadergpgpu.get_device() (and every call without device=) gives each "
                    "thread its own device, or create a Device in the thread")
            if self.window is not None:
                import glfw
                glfw.make_context_current(self.window)
            else:
                self.ctx.mglo.__enter__()
            CONTEXT.current = token

    def _check_alive(self) -> None:
        if not self._token.alive:
            raise RuntimeError("this Device has been released; create a new one "
                               "(shadergpgpu.Device()) for further work")

    @property
    def released(self) -> bool:
        """True once :meth:`release` ran (or the device was collected)."""
        return not self._token.alive

    def invalidate_state(self) -> None:
        """Forget the GL state the device tracks (call after drawing with raw GL/moderngl)."""
        self.activate()
        self.ctx.disable(moderngl.BLEND)
        self._blend = None

    # ---- arrays -----------------------------------------------------------------------
    def layout(self, shape, packed: bool = True, order: str = "row") -> Layout:
        """The :class:`Layout` an array of ``shape`` gets on this device."""
        return layout_for(shape, packed, order, self.max_texture_size)

    def alloc(self, layout: Layout, shape=None) -> DeviceArray:
        """An uninitialised array of ``layout`` (``shape``: what ``get()`` returns; default the
        layout's rows x cols)."""
        if layout.max_size > self.max_texture_size:
            raise ValueError(f"layout wraps at {layout.max_size} texels, more than this "
                             f"device's texture size {self.max_texture_size}")
        self.activate()
        if self._orphans:
            orphans, self._orphans = self._orphans, []
            for tex in orphans:
                self.pool.give(tex)
        shape = (layout.rows, layout.cols) if shape is None else _shape_tuple(shape)
        pool = self.pool
        made = pool.created
        tex = pool.take(layout.tex_size)
        self.report("alloc" if pool.created == made else "texture")
        a = DeviceArray(self, layout, shape, tex)
        if self._capture is not None:   # an open capture owns what its block allocates
            self._capture.made(a)
        return a

    def empty(self, shape, packed: bool = True, order: str = "row") -> DeviceArray:
        """Uninitialised array (a recycled texture may hold old values)."""
        shape = _shape_tuple(shape)
        return self.alloc(self.layout(shape, packed, order), shape)

    def empty_like(self, a: DeviceArray) -> DeviceArray:
        """An uninitialised array of ``a``'s layout and shape."""
        return self.alloc(a.layout, a.shape)

    def zeros(self, shape, packed: bool = True, order: str = "row") -> DeviceArray:
        """An array of zeros (:meth:`empty`, then one fill pass)."""
        a = self.empty(shape, packed, order)
        self.fill(a, 0.0)
        return a

    def array(self, x, packed: bool = True, order: str = "row", name: str = "array") -> DeviceArray:
        """Upload a numpy array (any real dtype, converted to float32): 1-D or 2-D.

        Parameters
        ----------
        x : array_like
            A non-empty 1-D or 2-D real array.
        packed : bool, default=True
            Four values per texel (False: one value per texel, in the red channel).
        order : {"row", "col"}, default="row"
            Whether a texel holds consecutive values of a row or of a column.
        name : str, default="array"
            Names the array in errors.

        Returns
        -------
        DeviceArray
            A new array of ``x``'s shape (the caller releases it, or a :meth:`scope` does).

        Raises
        ------
        ValueError
            An empty array, one of more than 2 dimensions (:meth:`image` takes (H, W, C)),
            finite values beyond float32's range.
        TypeError
            A complex, object or string array.

        Examples
        --------
        >>> import numpy as np, shadergpgpu as sg
        >>> dev = sg.Device()
        >>> a = dev.array(np.arange(6.0).reshape(2, 3), order="col")
        >>> a.shape, a.get()
        ((2, 3), array([[0., 1., 2.],
               [3., 4., 5.]], dtype=float32))
        """
        a = as_float32(x, name)
        if a.ndim not in (1, 2):
            raise ValueError(f"{name}: device arrays are 1-D or 2-D, got shape {a.shape} "
                             "(use Device.image for (H, W, C) images)")
        if a.size == 0:
            raise ValueError(f"{name}: cannot place an empty array of shape {a.shape} on the "
                             "device")
        out = self.alloc(self.layout(a.shape, packed, order), a.shape)
        upload(out, texels(a, out.layout))
        return out

    def image(self, x, name: str = "image") -> DeviceArray:
        """Upload an (H, W) or (H, W, C<=4) image: one pixel per texel, channels in RGBA."""
        a = as_float32(x, name)
        if a.ndim == 2:
            a = a[:, :, None]
        if a.ndim != 3 or a.shape[2] > 4 or a.shape[2] < 1 or a.shape[0] < 1 or a.shape[1] < 1:
            raise ValueError(f"{name}: expected an (H, W) or (H, W, C) image with 1..4 "
                             f"channels, got shape {np.shape(x)}")
        out = self.empty_image(a.shape)
        upload(out, texels(a, out.layout))
        return out

    def empty_image(self, shape) -> DeviceArray:
        """An uninitialised (H, W, C) image, one pixel per texel (:meth:`image`'s layout)."""
        h, w, c = _shape_tuple(shape)
        return self.alloc(Layout(h, 4 * w, True, "row", self.max_texture_size), (h, w, c))

    def fill(self, a: DeviceArray, value: float) -> None:
        """Set every texel of ``a`` (padding included) to ``value`` in one pass."""
        self.run(FILL, a, uniforms={"value": float(value)})

    @contextmanager
    def scope(self):
        """Temporaries owned by a block: ``with dev.scope() as s: t = s.empty(...)``; every array
        made through ``s`` is released when the block ends (``s.keep(a)`` exempts one)."""
        s = Scope(self)
        try:
            yield s
        finally:
            s.release()

    def pingpong(self, shape=None, packed: bool = True, order: str = "row", layout=None):
        """A :class:`PingPong` pair of arrays of one layout (read ``front``, write ``back``)."""
        lay = layout if layout is not None else self.layout(_shape_tuple(shape), packed, order)
        return PingPong(self.alloc(lay, shape), self.alloc(lay, shape))

    def resource(self, key, factory):
        """Per-device state an operation keeps between calls (bounded, least recently used
        first out; released with ``.release()`` if it has one)."""
        r = self._resources.get(key)
        if r is None:
            self.activate()
            r = factory()
            self._resources[key] = r
        return r

    def placeholder(self) -> DeviceArray:
        """A 1x1 array the device keeps until it is released (through :meth:`trim` too): what a
        cached pass binds to an input it does not read, so that no cache eviction can leave
        the pass bound to a released array."""
        p = self._placeholder
        if p is None or p.released:
            p = self._placeholder = self.array(np.zeros((1, 1)))  # uploaded: no pass drawn
        return p

    # ---- running kernels: Device.run, its checks and its draws --------------------------------
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
            # a plain call: one lookup on the kernel and the names (call_cache.py); the outputs
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
        if memo is None or self.sanitizer is not None or not arrays_live(self, inputs, outs):
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
        memo = CallSignature(self, kernel, layouts, defs, slices,
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
        return self.profile.limits.get("buffer_textures") is not False and \
            self.caps.buffer_textures

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
        if mode is None or mode == split.combine or len(cuts) == 1:
            with self._holding(c):
                return self._slices(c, fbo, arrs, viewport, mode, frags, rebind, cuts, split)
        with self.scope() as s:
            temps = [s.alloc(a.layout, a.shape) for a in arrs]
            drawn = self._issue_slices(c, self._framebuffer(temps), temps, viewport, None,
                                       frags, rebind, cuts, split)
            for a, t in zip(arrs, temps):
                drawn += self.run(COPY, a, inputs={"X": t}, rect=viewport, accumulate=mode)
        rebind()
        return drawn

    def _slices(self, c: Compiled, fbo, arrs, viewport, mode, frags: int, rebind, cuts,
                split) -> int:
        """The slices of a split loop, the first drawn with ``mode``, the others combining by
        the split's rule."""
        nb, ne = f"{split.name}_begin", f"{split.name}_end"
        drawn = 0
        for i, (lo, hi) in enumerate(cuts):
            c.put(nb, lo)
            c.put(ne, hi)
            seen = self._fbo_epoch
            drawn += self._issue(c, fbo, arrs, viewport, mode if i == 0 else split.combine,
                                 frags, rebind)
            if self._fbo_epoch != seen:      # an emulated accumulation's framebuffers may
                fbo = self._framebuffer(arrs)  # have pushed ours out of the cache
        return drawn

    def _issue(self, compiled: Compiled, fbo, arrs, viewport, blend, fragments: int,
               rebind) -> int:
        """Draw once, blending by hardware, or by ping-pong passes where float blending is
        missing: draw into temporaries, combine each output with its temporary into a second
        temporary, copy that back (inside the viewport). Returns the passes drawn."""
        if blend is None or self.float_blending:
            self._draw(compiled, fbo, viewport, blend, fragments)
            return 1
        mode = {"add": 0, "max": 1, "min": 2}[blend]
        rect = viewport
        with self._holding(compiled), self.scope() as s:
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

    # ---- kernels and passes -------------------------------------------------------------
    def phase(self, label: str):
        """Context manager: passes inside are counted under ``label``."""
        return self.counter.phase(label)

    def compiled(self, kernel: Kernel, inputs: dict, outputs: dict, defines: dict) -> Compiled:
        """``kernel`` compiled for the layout kinds of ``inputs``/``outputs`` and ``defines``."""
        ikinds = tuple((n, inputs[n].layout.kind) for n in kernel.inputs)
        okinds = tuple(outputs[n].layout.kind for n in kernel.outputs)
        key = (kernel, tuple(sorted(defines.items())), ikinds, okinds)
        c = self._compiled.get(key)
        if c is None:
            body = self._bodies.get(kernel)
            if body is None:
                body = self.shaders.body(kernel.file, kernel.source, kernel.root, kernel.name)
                kernel.check_source(body.text)
                self._bodies[kernel] = body
            pre = [(f"<input {n}>", inputs[n].layout.glsl_input(n)) for n in kernel.inputs]
            pre += [(f"<output {n}>", outputs[n].layout.glsl_output(n, loc))
                    for loc, n in enumerate(kernel.outputs)]
            pre.append(("<uniforms>", uniform_declarations(kernel)))
            src = self.shaders.assemble(body, defines, pre)
            shared = self.shaders.program(src)
            buffers = {n for n, kind in ikinds if kind[0] == "buffer"}
            c = Compiled(self, kernel, shared, src.text, list(kernel.inputs), buffers)
            if self.sanitizer is not None:
                self.sanitizer.prepare(c, body, defines, inputs, outputs)
            self._compiled[key] = c
        return c

    def _evict_compiled(self, _key, c: Compiled) -> None:
        self._epoch += 1
        if c.busy:              # a draw in progress still uses it (a nested pass of its own
            c.evicted = True    # compiled another program): released when that draw ends
            return
        self._release_compiled(c)

    @contextmanager
    def _holding(self, c: Compiled):
        """Keep ``c`` alive while a draw made of several passes uses it: an emulated
        accumulation or a split loop runs other kernels between its draws, which may push
        ``c`` out of a small program cache."""
        c.busy += 1
        try:
            yield c
        finally:
            c.busy -= 1
            if not c.busy and c.evicted:
                c.evicted = False
                self._release_compiled(c)

    def _release_compiled(self, c: Compiled) -> None:
        c.release()
        self.shaders.forget(c.text)
        if self.sanitizer is not None:
            self.sanitizer.forget(c)

    def _evict_fbo(self, _key, fbo) -> None:
        self._epoch += 1
        self._fbo_epoch += 1
        fbo.release()

    def _evict_resource(self, _key, r) -> None:
        self._epoch += 1
        _release_resource(r)

    def _forget_texture(self, tex) -> None:
        """Drop cached framebuffers that attach ``tex`` (it is about to be deleted, in this
        device's context: made current here, since an array may be released while another
        device is current)."""
        self.activate()
        glo = tex.glo
        if self.tracer is not None:
            self.tracer.forget(tex)
        for key in [k for k in self._fbos.keys() if glo in k]:
            self._epoch += 1
            self._fbo_epoch += 1
            self._fbos.pop(key).release()

    def read_rect(self, a: DeviceArray, rect) -> np.ndarray:
        """The raw texels (RGBA float32, row by row) of ``a``'s texture inside ``rect`` = (x, y,
        w, h), read back now: for the host's small decisions (a state texel)."""
        return read_rect(self, a, rect)

    def _set_tracer(self, tracer) -> None:
        """Start (a :class:`~shadergpgpu.engine.trace.Trace`) or stop (None) recording."""
        self.activate()
        self.tracer = tracer

    def trim(self) -> int:
        """Release every cache the device holds: the operations' per-device state (e.g. the
        blur's recipes and their work arrays), compiled kernels and their programs,
        framebuffers, and the pool's idle textures. Returns how many textures were deleted.

        Arrays the user holds stay valid; prepared passes compile again on their next run.
        Afterwards :meth:`memory` reports only the user's live arrays."""
        return trim_caches(self)

    def memory(self) -> dict:
        """The device's own accounting of what it holds now: bytes of live arrays (the user's and
        the caches'), idle pool textures, the per-device operation state (``resources``), and
        the counts of compiled kernels, programs and framebuffers."""
        res = 0
        for r in self._resources.values():
            res += int(getattr(r, "nbytes", 0) or 0)
        return {"live_bytes": self.pool.live_bytes, "idle_bytes": self.pool.idle_bytes,
                "live_arrays": self.pool.live, "resource_bytes": res,
                "resources": len(self._resources), "compiled": len(self._compiled),
                "programs": len(self.shaders), "framebuffers": len(self._fbos)}

    def finish(self) -> None:
        """Wait until the GPU has finished every pass issued so far."""
        self.activate()
        self.report("finish")
        self.ctx.finish()
        self._written = ()

    def flush(self) -> None:
        """Hand the passes issued so far to the GPU now, without waiting (glFlush).

        A driver may keep commands until the caller waits for a result, so that the GPU starts
        only once the host has issued every pass and the host time adds to the GPU time;
        multipass algorithms flush as they go. No-op while timing."""
        if self.timing:
            return
        if CONTEXT.current is not self._token:
            self.activate()
        f = self._flush_fn
        if f is None:
            f = self._flush_fn = GLRaw.get().glFlush
        f()

    @property
    def n_programs(self) -> int:
        """Programs compiled and held now (bounded by ``cache_size``)."""
        return len(self.shaders)

    def release(self) -> None:
        """Release every GL object this device made and the context itself (idempotent; a
        device dropped without it is released when collected)."""
        if not self._token.alive:
            return
        self.activate()
        try:
            self._resources.clear()
            self._fbos.clear()
            self._compiled.clear()
            self._pbos.release()
            self.pool.trim()
        finally:
            self._finalizer()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __deepcopy__(self, memo):
        # A device is a handle on a GL context: estimators that are cloned share it.
        return self

    def __reduce__(self):
        raise TypeError("a Device holds a GL context and cannot be pickled; create one in "
                        "each process (shadergpgpu.distributed does this per worker)")

    def __repr__(self):
        return f"Device({self.caps.renderer!r}, backend={self.caps.backend!r})"


def _release_resource(r) -> None:
    rel = getattr(r, "release", None)
    if rel is not None:
        rel()


def _check_group(value, cls, name):
    if value is None:
        return cls()
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be a {cls.__name__}, got {type(value).__name__}")
    return value


def _shape_tuple(shape) -> tuple:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


_defaults = threading.local()


def get_device(**kwargs) -> Device:
    """This thread's default device, created on its first use in the thread (kwargs apply then
    only): calls without ``device=`` from several threads each run on their own GL context.

    Parameters
    ----------
    **kwargs
        :class:`Device`'s parameters, used when the device is created.

    Returns
    -------
    Device

    Examples
    --------
    >>> import shadergpgpu as sg
    >>> sg.get_device() is sg.get_device()
    True
    """
    d = getattr(_defaults, "device", None)
    if d is None or d.released:
        d = _defaults.device = Device(**kwargs)
    return d
