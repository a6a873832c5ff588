"""Debug mode: the kernel sanitizer (``Device(debug=True)`` or ``SHADERGPGPU_DEBUG=1``).

Two checks, which raise :class:`~shadergpgpu.engine.errors.KernelDebugError` naming the kernel,
the array and the first bad index:

* **Reads out of range.** Before each draw of a kernel the device draws a *check pass*: the
  same kernel compiled with ``SG_DEBUG`` defined and guarded accessors
  (:func:`~shadergpgpu.engine.layout.debug_guard`: ``X_at``, ``X_get``, ``X_texel`` /
  ``X_coord``, buffer and uniform-block accessors record the first index out of range and clamp
  it, so the check pass cannot read outside an array), with the kernel's outputs turned into
  plain globals and one render target of its own (``shaders/common/debug_head.glsl``,
  ``debug_main.glsl``). The check pass uses the uniforms and texture units of the real pass,
  draws over the same viewport without blending, and its target is read back: any record
  raises before the real pass draws. Reads made by a fragment whose texel is padding in every
  output reach no element and are not reported. Needing one render target, the check works
  with every kernel under every profile (a kernel may use all its draw buffers). The record is
  a float texel: indices are reported exactly up to 2^24.
* **NaN/Inf from finite inputs.** Around each kernel call (:meth:`Device.run
  <shadergpgpu.engine.device.Device.run>`, each run of a prepared pass), when no input array
  (every texel, padding included), no float uniform and, for a blended pass, no element about
  to be blended into holds a NaN or an infinity, the outputs' elements inside the drawn
  rectangle are read back: a non-finite one raises. A kernel whose own text spells an
  infinity as its bit pattern (``uintBitsToFloat(0x7F800000u)`` or ``0xFF800000u``, as the
  library's reductions and selections do for their identities and "no candidate" sentinels)
  may write infinities: only NaN is reported for it.

The real pass keeps its own program: with debug off the device builds exactly the sources it
builds without this module (the check programs live in the sanitizer's own program library,
so program counts and caches are those of a normal device), and with debug on the real pass is
still drawn by the normal program. Debug mode is slow (a second draw and read-backs for every
pass); it is for finding bugs, not for timing.
"""
from __future__ import annotations

import os
import re
import weakref

import moderngl
import numpy as np

from .cache import LRU
from .errors import KernelDebugError, ShaderCompileError
from .kernels import uniform_declarations
from .layout import GUARD_ELEMENT, GUARD_FLAT, GUARD_TEXEL
from .passes import Compiled, Pass
from .programs import ShaderLibrary, Source

_OFF = ("", "0", "false", "no", "off")
# the bit patterns of +inf and -inf: a kernel that spells one writes infinities on purpose
_SPELLS_INF = re.compile(r"\b0x[7F]F800000u?\b", re.I)


def env_debug() -> bool:
    """Whether ``SHADERGPGPU_DEBUG`` asks for debug mode (anything but empty/0/false/no/off)."""
    return os.environ.get("SHADERGPGPU_DEBUG", "").strip().lower() not in _OFF


class _Variant:
    """The check pass of one compiled kernel: its program and the input layout kinds."""

    __slots__ = ("compiled", "kinds")

    def __init__(self, compiled: Compiled, kinds: dict):
        self.compiled = compiled
        self.kinds = kinds


class Sanitizer:
    """The debug checks of one device (made by ``Device(debug=True)``)."""

    def __init__(self, device):
        self.device = device
        self.shaders = ShaderLibrary(device.ctx, device.shaders.user_root)
        common = self.shaders.root / "common"
        self._head = (common / "debug_head.glsl").read_text()
        self._main = common / "debug_main.glsl"
        self._variants: dict = {}           # the device's Compiled -> _Variant
        self._targets = LRU(4, _release_target)  # output texture size -> (texture, framebuffer)
        self._live = LRU(32)                # Layout -> its live lanes in texture shape
        # kernel -> whether its text spells an infinity (then it may write one)
        self._inf_ok = weakref.WeakKeyDictionary()

    # ---- check programs ------------------------------------------------------------------------
    def prepare(self, compiled: Compiled, body: Source, defines: dict, inputs: dict,
                outputs: dict) -> None:
        """Compile the check pass of ``compiled`` (the device just compiled it)."""
        kernel = compiled.kernel
        pre = [("shaders/common/debug_head.glsl", self._head)]
        pre += [(f"<input {n}>", inputs[n].layout.glsl_input(n, k))
                for k, n in enumerate(kernel.inputs)]
        pre += [(f"<output {n}>", outputs[n].layout.glsl_output(n, loc, True))
                for loc, n in enumerate(kernel.outputs)]
        pre.append(("<uniforms>", uniform_declarations(kernel)))
        wrapped = Source()
        wrapped.add("#define main sg_kernel_main", "<debug>")
        wrapped.lines += body.lines
        wrapped.origin += body.origin
        wrapped.add("#undef main", "<debug>")
        live = " || ".join(f"any({n}_lanes())" for n in kernel.outputs)
        wrapped.add(f"#define SG_DEBUG_LIVE ({live})", "<debug>")
        self.shaders.expand(self._main, wrapped, set())
        src = self.shaders.assemble(wrapped, {**defines, "SG_DEBUG": 1}, pre)
        try:
            shared = self.shaders.program(src)
        except ShaderCompileError as e:
            raise ShaderCompileError(f"{kernel.name}: debug mode's check pass (the kernel with "
                                     f"guarded accessors) does not compile:\n{e}") from None
        kinds = {n: inputs[n].layout.kind for n in kernel.inputs}
        buffers = {n for n, kind in kinds.items() if kind[0] == "buffer"}
        check = Compiled(self.device, kernel, shared, src.text, list(kernel.inputs), buffers)
        self._variants[compiled] = _Variant(check, kinds)
        self._inf_ok[kernel] = _SPELLS_INF.search(body.text) is not None

    def forget(self, compiled: Compiled) -> None:
        """The device dropped ``compiled``: drop its check pass."""
        v = self._variants.pop(compiled, None)
        if v is not None:
            v.compiled.release()
            self.shaders.forget(v.compiled.text)

    def trim(self) -> None:
        """Release the check passes' render targets and cached masks."""
        self._targets.clear()
        self._live.clear()

    def source(self, compiled: Compiled) -> str:
        """The check pass's final source of ``compiled`` (for inspection)."""
        return self._variants[compiled].compiled.text

    def _target(self, size):
        t = self._targets.get(size)
        if t is None:
            ctx = self.device.ctx
            tex = ctx.texture(size, 4, dtype="f4")
            t = (tex, ctx.framebuffer(color_attachments=[tex]))
            self._targets[size] = t
        return t

    # ---- reads out of range --------------------------------------------------------------------
    def check_reads(self, compiled: Compiled, fbo, viewport) -> None:
        """Draw the check pass of ``compiled`` (inputs bound, uniforms set, about to draw into
        ``fbo`` over ``viewport``); raise :class:`KernelDebugError` on a read out of range."""
        v = self._variants.get(compiled)
        if v is None:  # pragma: no cover - every kernel of a debug device has one
            return
        check = v.compiled
        for name, value in compiled.state.held.items():
            check.put(name, value)
        check.state.owner = None
        dev = self.device
        ctx = dev.ctx
        size = tuple(fbo.size)
        _, target = self._target(size)
        target.use()
        target.clear(0.0, 0.0, 0.0, 0.0)
        if dev._blend is not None:
            ctx.disable(moderngl.BLEND)
            dev._blend = None
        region = (0, 0) + size if viewport is None else tuple(viewport)
        if viewport is not None:
            ctx.viewport = region
        check.vao.render(moderngl.TRIANGLES, 3)
        if viewport is not None:
            target.viewport = (0, 0) + size
        raw = target.read(viewport=region, components=4, dtype="f4")
        rec = np.frombuffer(raw, dtype=np.float32).reshape(region[3], region[2], 4)
        hits = np.flatnonzero(rec[..., 0] != 0.0)
        if hits.size:
            iy, ix = divmod(int(hits[0]), region[2])
            raise self._read_error(compiled, v, rec[iy, ix], (region[0] + ix, region[1] + iy),
                                   int(hits.size))

    def _read_error(self, compiled, variant, record, xy, count) -> KernelDebugError:
        kernel = compiled.kernel
        k, kind = divmod(int(record[0]) - 1, 4)
        a, b = int(record[1]), int(record[2])
        name = compiled.units[k][0]
        shape = compiled.state.held.get(f"sg_{name}_shape", (0, 0, 0, 0))
        rows, cols, grid_w = int(shape[0]), int(shape[1]), int(shape[2])
        if kind == GUARD_ELEMENT:
            index, at = (a, b), f"(row {a}, col {b}) ({name}_at)"
            size = f"{name} is {rows}x{cols}"
        elif kind == GUARD_FLAT:
            index = a
            at = f"flat index {a} ({name}_get"
            at += f": row {a // cols}, col {a % cols})" if a >= 0 and cols else ")"
            size = f"{name} has {rows * cols} elements ({rows}x{cols})"
        elif kind == GUARD_TEXEL:
            lk = variant.kinds.get(name, ())
            grid_h = cols if len(lk) > 2 and lk[2] == "col" else rows
            index, at = (a, b), f"grid texel ({a}, {b}) ({name}_texel)"
            size = f"{name}'s texel grid is {grid_h}x{grid_w} ({rows}x{cols} elements)"
        else:
            index, at = a, f"vec4 {a} ({name}_vec4)"
            size = f"{name}'s window holds {variant.kinds.get(name, ('', 0))[1]} vec4"
        more = f"; {count} fragments read out of range" if count > 1 else ""
        return KernelDebugError(
            f"{kernel.name}: input {name!r} read out of range at {at}: {size} (first in the "
            f"fragment at output texel x={xy[0]}, y={xy[1]}{more}; outside debug mode such a "
            "read silently returns whatever the texture holds there, usually 0)",
            kernel=kernel.name, array=name, index=index, what="read")

    # ---- NaN / Inf from finite inputs ---------------------------------------------------------
    def watch(self, kernel, inputs: dict, outputs: dict, uniforms: dict, blend, viewport):
        """Before a call of ``kernel``: a :class:`_Watch` whose ``check()`` (after the call)
        raises on NaN/Inf in the outputs, or None when an input may carry them in."""
        for v in uniforms.values():
            if not _finite(v):
                return None
        for a in inputs.values():
            data = _contents(a)
            if data is None or not np.isfinite(data).all():
                return None
        before = {}
        if blend is not None:  # blending reads the outputs: their elements are inputs too
            for n, a in outputs.items():
                if a.released:
                    return None
                before[n] = self._nonfinite(a, viewport)
        return _Watch(self, kernel, outputs, viewport, before)

    def _nonfinite(self, a, viewport, nan_only: bool = False) -> np.ndarray:
        """Mask (texture shape) of the elements of ``a`` inside ``viewport`` that are not finite
        (``nan_only``: that are NaN)."""
        lay = a.layout
        data = np.frombuffer(a.texture.read(), dtype=np.float32).reshape(lay.tex_h, lay.tex_w, 4)
        live = self._live.get(lay)
        if live is None:
            live = lay.pack_array(np.ones((lay.rows, lay.cols), dtype=np.float32)) != 0
            self._live[lay] = live
        bad = (np.isnan(data) if nan_only else ~np.isfinite(data)) & live
        if viewport is not None:
            x, y, w, h = viewport
            inside = np.zeros_like(bad)
            inside[y:y + h, x:x + w] = True
            bad &= inside
        return bad


class _Watch:
    """One kernel call's NaN/Inf check (see :meth:`Sanitizer.watch`)."""

    def __init__(self, sanitizer, kernel, outputs, viewport, before):
        self.sanitizer = sanitizer
        self.kernel = kernel
        self.outputs = dict(outputs)
        self.viewport = viewport
        self.before = before

    def check(self) -> None:
        nan_only = self.sanitizer._inf_ok.get(self.kernel, False)
        for n in self.kernel.outputs:
            a = self.outputs[n]
            bad = self.sanitizer._nonfinite(a, self.viewport, nan_only)
            if n in self.before:
                bad &= ~self.before[n]
            if bad.any():
                raise self._error(n, a, bad)

    def _error(self, n, a, bad) -> KernelDebugError:
        lay = a.layout
        flags = lay.unpack_array(bad.astype(np.float32))
        values = np.frombuffer(a.texture.read(), dtype=np.float32)
        values = lay.unpack_array(values)
        if len(a.shape) == 3:  # an image: (H, W, C), one pixel per texel
            h, w, c = a.shape
            flags = flags.reshape(h, w, 4)[..., :c]
            values = values.reshape(h, w, 4)[..., :c]
        else:
            flags = flags.reshape(a.shape)
            values = values.reshape(a.shape)
        where = np.argwhere(flags != 0)
        if not len(where):  # a non-finite channel the array's shape does not show
            return KernelDebugError(
                f"{self.kernel.name}: output {n!r} holds a NaN or Inf in a lane the array's "
                "shape does not show, and no input holds one", kernel=self.kernel.name,
                array=n, what="nonfinite")
        index = tuple(int(i) for i in where[0])
        value = float(values[index])
        count = int((flags != 0).sum())
        more = f" ({count} non-finite elements)" if count > 1 else ""
        return KernelDebugError(
            f"{self.kernel.name}: output {n!r} is {value} at index {index}{more}, but no input "
            "holds a NaN or Inf: the kernel made it (e.g. 0/0, sqrt or log of a negative "
            "number, inf - inf, overflow)", kernel=self.kernel.name, array=n, index=index,
            what="nonfinite")


class DebugPass(Pass):
    """A prepared pass of a debug device: each run is checked for NaN/Inf made by the kernel
    (the reads are checked at every draw; the fast paths are off in debug mode)."""

    def run(self, **uniforms) -> None:
        san = self.device.sanitizer
        self._state.owner = None  # every value is set again: the check pass copies them
        watch = None
        if not any(a.released for a in list(self.inputs.values()) +
                   list(self.outputs.values())):  # else run() refuses it
            watch = san.watch(self.kernel, self.inputs, self.outputs,
                              {**self.values, **uniforms}, self.blend, self._viewport)
        super().run(**uniforms)
        if watch is not None:
            watch.check()

    __call__ = run

    def sweep(self, rects, each=None) -> int:
        san = self.device.sanitizer
        drawn = 0
        for i, rect in enumerate(rects):
            if each is not None:
                each(i)
            viewport, _ = self.device._viewport(self._outs, rect)
            watch = san.watch(self.kernel, self.inputs, self.outputs, self.values,
                              self.blend, viewport)
            drawn += super().sweep([rect])
            if watch is not None:
                watch.check()
        return drawn


def _finite(value) -> bool:
    if isinstance(value, (bool, int, np.integer)):
        return True
    try:
        return bool(np.isfinite(np.asarray(value, dtype=np.float64)).all())
    except (TypeError, ValueError):
        return False


def _contents(a):
    """Every float an input array holds (texture texels with padding, a buffer, a block's
    window), or None when it cannot be read."""
    if getattr(a, "released", False):
        return None
    tex = getattr(a, "texture", None)
    if tex is not None:
        return np.frombuffer(tex.read(), dtype=np.float32)
    buf = getattr(a, "buffer", None)
    if buf is None:
        return None
    if hasattr(a, "offset") and hasattr(a.layout, "vec4s"):  # a uniform-block window
        return np.frombuffer(buf.read(size=a.layout.nbytes, offset=16 * a.offset),
                             dtype=np.float32)
    return np.frombuffer(buf.read(), dtype=np.float32)


def _release_target(_size, target) -> None:
    tex, fbo = target
    fbo.release()
    tex.release()
