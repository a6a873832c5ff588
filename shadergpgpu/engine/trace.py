"""Record a computation's passes for replay elsewhere (a WebGL2 page): ``with sg.trace() as t``.

While a trace is open on a device, every render pass that device draws is recorded from the GL
state it draws with: the program (as GLSL ES 3.00), the texture bound to each sampler, the
uniform values the program holds, the render targets, the viewport and the blend mode. Every
upload of host data is recorded with its bytes, and every readback with its position in
:attr:`Trace.readbacks`. Reading the state back from GL (not from the library's own
bookkeeping) means a replay draws exactly what the device drew.

A texture the trace meets for the first time as an input, or as an output that the pass only
partly overwrites (a sub-rectangle, blending), is read back once and recorded as an upload in the
bundle's prelude: data made before the trace replays as it was.

What a trace cannot hold, and what happens then (a :class:`TraceError` at record time):

* host data uploaded after a readback inside the trace: the host decided something from the
  device's numbers, and a replay would upload the Python run's numbers instead of its own
  (``trace(host_uploads=True)`` records them anyway, for computations that upload new data
  that does not depend on what they read);
* uniform blocks and buffer textures (WebGL2 has no buffer textures; uniform-block operands are
  a desktop path): trace under the ``webgl2`` profile, which does not use them.

Uniform values are recorded as values: a loop that sets a uniform from a number read back (a
host decision in a uniform) replays the Python run's value. :meth:`Trace.steps` and
:meth:`Trace.section` name recorded blocks: a training loop records one step body, and the
player repeats it (with a period of 2 where buffers ping-pong between steps).

The bundle written by :meth:`Trace.save` is one file, its format defined, written and checked
in :mod:`.bundle` (lengths and CRC-32 checksums of the header and of every data chunk, all
checked before anything is drawn); ``shadergpgpu/web/player.js`` replays it in WebGL2.
"""
from __future__ import annotations

import ctypes
import hashlib
import struct
import sys
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np

# the bundle format lives in .bundle; trace.load, trace.FORMAT ... name the same objects
from .bundle import FORMAT, MAGIC, PREAMBLE, BundleError  # noqa: F401
from .bundle import check_structure, dumps, load, loads  # noqa: F401
from .capture import PassRecord
from .errors import ShaderGPGPUError

GL_TEXTURE0 = 0x84C0
GL_ACTIVE_TEXTURE = 0x84E0
GL_TEXTURE_BINDING_2D = 0x8069
SAMPLER_2D_TYPES = {0x8B5E, 0x8DCA, 0x8DD2}    # sampler2D, isampler2D, usampler2D


class TraceError(ShaderGPGPUError):
    """A computation did something a trace cannot replay (the message says what and why)."""


class Trace:
    """The record of one ``with sg.trace(device)`` block (see the module docstring).

    readbacks : the numpy arrays the host read back inside the block, in order.
    """

    def __init__(self, device, host_uploads: bool = False):
        self.device = device
        self.host_uploads = bool(host_uploads)
        self.readbacks: list[np.ndarray] = []
        self.programs: list[str] = []
        self._program_index: dict[str, int] = {}
        self.textures: list[tuple[int, int]] = []
        self._slots: dict[int, int] = {}            # GL texture name -> texture slot
        self._chunks: list[np.ndarray] = []
        self._chunk_index: dict[bytes, int] = {}
        self.prelude: list = []                      # snapshots of textures made before
        self.ops: list = []
        self._sink = [self.ops]
        self.sections: dict[str, list] = {}
        self._read_seen = False
        self.reads: list[dict] = []
        self.open = False

    # ---- sections --------------------------------------------------------------------------
    @contextmanager
    def section(self, name: str):
        """Record the block as the named section; the main record calls it. A later block of
        the same name that records the same operations calls the same section; one that
        differs becomes ``name~2``, ``name~3``..."""
        body: list = []
        self._sink.append(body)
        try:
            yield self
        finally:
            self._sink.pop()
        key = str(name)
        k = 1
        while key in self.sections and self.sections[key] != body:
            k += 1
            key = f"{name}~{k}"
        self.sections.setdefault(key, body)
        self._emit({"op": "call", "section": key})

    def steps(self, n: int, name: str = "step"):
        """``for i in t.steps(200): net.step()``: each iteration recorded as section ``name``
        (a player repeats it instead of storing 200 copies)."""
        for i in range(int(n)):
            with self.section(name):
                yield i

    # ---- recording (called by the engine) --------------------------------------------------
    def _emit(self, op: dict) -> None:
        self._sink[-1].append(op)

    def _data(self, a: np.ndarray) -> int:
        a = np.ascontiguousarray(a, dtype=np.float32).ravel()
        key = hashlib.sha1(a.tobytes()).digest() + struct.pack("<Q", a.size)
        i = self._chunk_index.get(key)
        if i is None:
            i = self._chunk_index[key] = len(self._chunks)
            self._chunks.append(a.copy())
        return i

    def _slot(self, tex, snapshot: bool) -> int:
        """The slot of ``tex``; on first sight a new slot, its contents recorded if asked (in
        the prelude: nothing in the trace touched it before, so its contents then are its
        contents at the start; a section that meets it first must not upload it again)."""
        s = self._slots.get(tex.glo)
        if s is not None and self.textures[s] == tuple(tex.size):
            return s
        s = self._slots[tex.glo] = len(self.textures)
        self.textures.append(tuple(tex.size))
        if snapshot:
            data = np.frombuffer(tex.read(), dtype=np.float32)
            self.prelude.append({"op": "upload", "tex": s, "data": self._data(data)})
        return s

    def forget(self, tex) -> None:
        """The device deleted ``tex``: its GL name may come back as another texture."""
        self._slots.pop(tex.glo, None)

    def upload(self, tex, data: np.ndarray, array=None) -> None:
        """An upload of host data into ``tex`` (the texture of ``array``)."""
        if self._read_seen and not self.host_uploads:
            call, target = _upload_site(array)
            raise TraceError(
                f"{call} uploaded host data into {target} after reading results back inside "
                "this trace: a host decision between passes cannot be replayed (the replay "
                "would upload this run's numbers, not its own). End the trace before the host "
                "decides, or use sg.trace(host_uploads=True) if the new data does not depend on "
                "what was read.")
        s = self._slot(tex, snapshot=False)
        self._emit({"op": "upload", "tex": s, "data": self._data(data)})

    def read(self, tex, result: np.ndarray, layout=None, shape=None, rect=None) -> None:
        """A readback: ``result`` is what the host got (full texture through ``layout`` and
        ``shape``, or the raw texels of ``rect``)."""
        s = self._slot(tex, snapshot=True)
        info = {"rect": list(rect) if rect is not None else None,
                "layout": None if layout is None else
                {"rows": layout.rows, "cols": layout.cols, "packed": layout.packed,
                 "order": layout.order, "max_size": layout.max_size},
                "shape": None if shape is None else [int(v) for v in shape]}
        self._emit({"op": "read", "tex": s, "rect": info["rect"]})
        self.reads.append(info)
        self.readbacks.append(np.array(result, copy=True))
        self._read_seen = True

    def draw(self, compiled, fbo, viewport, blend) -> None:
        """Record the draw about to be issued with ``compiled`` into ``fbo``: the pass as the
        GL state describes it (:meth:`from_gl`), serialized (:meth:`add`)."""
        self.add(self.from_gl(compiled, fbo, viewport, blend))

    def from_gl(self, compiled, fbo, viewport, blend) -> PassRecord:
        """The :class:`~.capture.PassRecord` of the draw about to be issued with ``compiled``
        into ``fbo``, read back from GL: the texture bound to each sampler and the uniform
        values the program holds."""
        import moderngl
        prog = compiled.program
        name = compiled.kernel.name
        raw = _raw()
        active = ctypes.c_int()
        raw.glGetIntegerv(GL_ACTIVE_TEXTURE, ctypes.byref(active))
        bound_units, uniforms = [], {}
        try:
            for member in prog:
                m = prog[member]
                if isinstance(m, moderngl.UniformBlock):
                    raise TraceError(f"{name}: uniform block {member!r} cannot be traced (trace "
                                     "under the 'webgl2' profile, which does not use them)")
                if not isinstance(m, moderngl.Uniform):
                    continue
                if m.gl_type in SAMPLER_2D_TYPES:
                    unit = int(m.value)
                    raw.glActiveTexture(GL_TEXTURE0 + unit)
                    bound = ctypes.c_int()
                    raw.glGetIntegerv(GL_TEXTURE_BINDING_2D, ctypes.byref(bound))
                    bound_units.append((member, unit, bound.value))
                elif "sampler" in _type_name(m.gl_type):
                    raise TraceError(f"{name}: {member!r} is a buffer texture, which WebGL2 "
                                     "lacks (trace under the 'webgl2' profile)")
                else:
                    v = m.value
                    uniforms[member] = list(v) if isinstance(v, (tuple, list)) else v
        finally:
            raw.glActiveTexture(active.value)
        textures = self.device.pool.by_glo   # GL name -> texture, kept by the pool
        samplers = []
        for member, unit, glo in bound_units:
            tex = textures.get(glo)
            if tex is None:
                raise TraceError(f"{name}: sampler {member!r} reads a texture this device did "
                                 "not make; it cannot be traced")
            samplers.append((member, unit, tex))
        return PassRecord(name, compiled.text, samplers, uniforms,
                          list(fbo.color_attachments), viewport, blend)

    def add(self, rec: PassRecord) -> None:
        """Serialize one pass: its program (as GLSL ES 3.00, once per text), the slot of each
        texture it reads and writes (a texture met first is snapshot, and a target the pass
        only partly overwrites), its uniforms, viewport and blend mode."""
        units = [[member, unit, self._slot(tex, snapshot=True)]
                 for member, unit, tex in rec.samplers]
        full = rec.viewport is None and rec.blend is None
        outs = [self._slot(t, snapshot=not full) for t in rec.targets]
        text = rec.program
        p = self._program_index.get(text)
        if p is None:
            from .export import to_es
            p = self._program_index[text] = len(self.programs)
            self.programs.append(to_es(text))
        self._emit({"op": "draw", "prog": p, "kernel": rec.kernel, "units": units, "out": outs,
                    "viewport": list(rec.viewport) if rec.viewport is not None else None,
                    "blend": rec.blend, "uniforms": rec.uniforms})

    # ---- the bundle ------------------------------------------------------------------------
    def bundle(self) -> tuple[dict, np.ndarray]:
        """(metadata, float32 data) of the record; ``meta["chunks"]`` locates each chunk in the
        data (byte ``offset``, ``bytes``) with its ``crc32``."""
        chunks, off = [], 0
        for c in self._chunks:
            b = np.ascontiguousarray(c, dtype="<f4").tobytes()
            chunks.append({"offset": off, "bytes": len(b), "crc32": zlib.crc32(b)})
            off += len(b)
        data = np.concatenate(self._chunks) if self._chunks else np.zeros(0, np.float32)
        from .programs import shaders_root
        from .export import to_es
        vertex = to_es((shaders_root() / "common" / "fullscreen.vert").read_text())
        blends = _uses_blend(self.ops) or any(_uses_blend(b) for b in self.sections.values())
        meta = {"format": FORMAT, "profile": self.device.profile.name,
                "renderer": self.device.caps.renderer, "vertex": vertex,
                "programs": self.programs, "textures": [list(t) for t in self.textures],
                "chunks": chunks, "prelude": self.prelude, "ops": _compress(self.ops),
                "sections": {k: _compress(v) for k, v in self.sections.items()},
                "reads": self.reads, "float_blend": blends}
        return meta, data

    def save(self, path) -> Path:
        """Write the bundle to ``path`` (one file; :mod:`.bundle` describes it), checked as
        :func:`load` checks it."""
        meta, data = self.bundle()
        raw = dumps(meta, data)
        loads(raw, "the bundle just recorded")  # what is written is what a player accepts
        path = Path(path)
        path.write_bytes(raw)
        return path


def unpack_reads(meta: dict, raws) -> list[np.ndarray]:
    """The browser's raw texels of each read, shaped as the host got them."""
    from .transfer import from_logical
    from .layout import Layout
    out = []
    for info, r in zip(meta["reads"], raws):
        r = np.asarray(r, dtype=np.float32)
        if info["layout"] is None:
            out.append(r)
            continue
        lay = Layout(**info["layout"])
        out.append(from_logical(lay.unpack_array(r), tuple(info["shape"])))
    return out


def _uses_blend(ops) -> bool:
    return any(op.get("op") == "draw" and op.get("blend") for op in ops)


def _compress(ops: list) -> list:
    """Runs of calls repeating with period 1 or 2 become one ``repeat`` op."""
    out, i = [], 0
    while i < len(ops):
        op = ops[i]
        if op.get("op") != "call":
            out.append(op)
            i += 1
            continue
        best = (1, 1)
        for period in (1, 2):
            body = ops[i:i + period]
            if len(body) < period or any(b.get("op") != "call" for b in body):
                continue
            n = 1
            while ops[i + n * period:i + (n + 1) * period] == body:
                n += 1
            if n * period > best[0] * best[1] and n > 1:
                best = (period, n)
        period, n = best
        if n > 1:
            out.append({"op": "repeat", "count": n, "body": ops[i:i + period]})
        else:
            out.append(op)
        i += period * n
    return out


def _upload_site(array) -> tuple[str, str]:
    """(the call that uploads, the array it uploads into), in the words of the code that made
    the call: the first frame outside this package, the library function it called, and the
    caller's names for ``array`` (a local variable, or an attribute of one)."""
    package = str(Path(__file__).resolve().parents[1] / "_")[:-1]   # ".../shadergpgpu/"
    frame, api = sys._getframe(1), None
    while frame is not None and \
            str(Path(frame.f_code.co_filename).resolve()).startswith(package):
        api, frame = frame, frame.f_back
    via = ""
    if api is not None:
        code = api.f_code
        via = f"{api.f_globals.get('__name__', '?')}.{getattr(code, 'co_qualname', code.co_name)}"
    if frame is None:
        call = f"the library call {via}" if via else "a library call"
    else:
        import linecache
        where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        text = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
        call = (repr(text) if text else "the call") + f" at {where}" + \
            (f" (through {via})" if via else "")
    shape = getattr(array, "shape", None)
    names = []
    if frame is not None and array is not None:
        for k, v in frame.f_locals.items():
            if v is array:
                names.append(k)
            elif hasattr(v, "__dict__") and not isinstance(v, type):
                names += [f"{k}.{a}" for a, w in vars(v).items() if w is array]
    if names:
        target = "array " + " = ".join(sorted(names))
    else:
        target = "an array"
    return call, target + (f" of shape {shape}" if shape is not None else "")


def _type_name(gl_type) -> str:
    return {0x8DC2: "samplerBuffer", 0x8DD0: "isamplerBuffer",
            0x8DD8: "usamplerBuffer"}.get(gl_type, "")


def _raw():
    from .glraw import GLRaw
    return GLRaw.get()


@contextmanager
def trace(device=None, host_uploads: bool = False):
    """Record the passes ``device`` (default: this thread's default device) draws in the block.

    ``with sg.trace(dev) as t: ...`` then ``t.save("run.sgtrace")``; ``t.readbacks`` holds what
    the host read back, in order. See the module docstring for what cannot be traced.

    Parameters
    ----------
    device : Device or None, default=None
        The device whose passes are recorded; None: this thread's default device. Trace under
        the ``webgl2`` profile for a bundle that a WebGL2 page replays.
    host_uploads : bool, default=False
        Record host uploads that follow a readback (for computations whose new data does not
        depend on what they read); False refuses them with a :class:`TraceError`.

    Yields
    ------
    Trace
        The record, filled while the block runs.

    Raises
    ------
    TraceError
        The device is already being traced, or the block does something a trace cannot
        replay (the message says what and why).

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> dev = sg.Device(profile="webgl2")
    >>> x = dev.array(np.arange(8.0))
    >>> with sg.trace(dev) as t:
    ...     y = sg.cumsum(x).get()
    >>> t.readbacks[0]
    array([ 0.,  1.,  3.,  6., 10., 15., 21., 28.], dtype=float32)
    """
    if device is None:
        from .device import get_device
        device = get_device()
    if getattr(device, "tracer", None) is not None:
        raise TraceError("this device is already being traced")
    t = Trace(device, host_uploads=host_uploads)
    device._set_tracer(t)
    t.open = True
    try:
        yield t
    finally:
        t.open = False
        device._set_tracer(None)
