"""Raw OpenGL calls that moderngl does not wrap: texture buffer objects (and ``glFlush``), and
the immutable, persistently mapped buffers of fast readbacks (``GLRaw.buffers``).

moderngl has buffers but no buffer textures (``GL_TEXTURE_BUFFER`` / ``samplerBuffer``), the
"plain buffer path" a fragment shader can read with ``texelFetch(samplerBuffer, index)``. This
module reaches the few GL entry points needed through ``ctypes`` and ``eglGetProcAddress`` (or
the GL library itself when EGL is not the backend), for the context current on the thread.

:class:`BufferArray` is a pass input like :class:`~shadergpgpu.engine.arrays.DeviceArray`: it
has ``layout`` and ``bind(unit)``, so kernels declared with ``In(buffer=True)`` take it. Its
index math comes from :class:`shadergpgpu.engine.layout.BufferLayout`.
"""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

from .errors import CapabilityError
from .lifetime import Releasable
from .layout import BufferLayout

GL_TEXTURE0 = 0x84C0
GL_TEXTURE_BUFFER = 0x8C2A
GL_RGBA32F = 0x8814
GL_MAX_TEXTURE_BUFFER_SIZE = 0x8C2B
GL_TEXTURE_BINDING_BUFFER = 0x8C2C

_PROTOS = {
    "glGenTextures": (None, [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]),
    "glDeleteTextures": (None, [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]),
    "glBindTexture": (None, [ctypes.c_uint, ctypes.c_uint]),
    "glActiveTexture": (None, [ctypes.c_uint]),
    "glTexBuffer": (None, [ctypes.c_uint, ctypes.c_uint, ctypes.c_uint]),
    "glGetIntegerv": (None, [ctypes.c_uint, ctypes.POINTER(ctypes.c_int)]),
    "glGetError": (ctypes.c_uint, []),
    "glGetUniformLocation": (ctypes.c_int, [ctypes.c_uint, ctypes.c_char_p]),
    "glUseProgram": (None, [ctypes.c_uint]),
    "glUniform1i": (None, [ctypes.c_int, ctypes.c_int]),
    "glFlush": (None, []),
}
_BUFFER_PROTOS = {
    "glGenBuffers": (None, [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]),
    "glDeleteBuffers": (None, [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]),
    "glBindBuffer": (None, [ctypes.c_uint, ctypes.c_uint]),
    "glBufferStorage": (None, [ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_uint]),
    "glMapBufferRange": (ctypes.c_void_p, [ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_ssize_t,
                                           ctypes.c_uint]),
    "glUnmapBuffer": (ctypes.c_ubyte, [ctypes.c_uint]),
    "glReadPixels": (None, [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint,
                            ctypes.c_uint, ctypes.c_void_p]),
    "glFenceSync": (ctypes.c_void_p, [ctypes.c_uint, ctypes.c_uint]),
    "glClientWaitSync": (ctypes.c_uint, [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint64]),
    "glDeleteSync": (None, [ctypes.c_void_p]),
    "glPixelStorei": (None, [ctypes.c_uint, ctypes.c_int]),
    "glTexSubImage2D": (None, [ctypes.c_uint, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                               ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_uint,
                               ctypes.c_void_p]),
    "glFlush": (None, []),
}


class GLRaw:
    """Function pointers for the GL calls above, resolved once per process."""

    _instance = None

    def __init__(self):
        self._egl = self._gl = None
        self._buffers = None
        get_proc = None
        for name in ("libEGL.so.1", "libEGL.so", ctypes.util.find_library("EGL")):
            if not name:
                continue
            try:
                self._egl = ctypes.CDLL(name)
                get_proc = self._egl.eglGetProcAddress
                get_proc.restype = ctypes.c_void_p
                get_proc.argtypes = [ctypes.c_char_p]
                break
            except (OSError, AttributeError):
                self._egl = None
        for name in ("libOpenGL.so.0", "libGL.so.1", "libGL.so", ctypes.util.find_library("GL")):
            if not name:
                continue
            try:
                self._gl = ctypes.CDLL(name)
                break
            except OSError:
                self._gl = None
        self._get_proc = get_proc
        if get_proc is None and self._gl is None:
            raise OSError("neither libEGL nor libGL could be loaded for raw GL calls")
        self._resolve(_PROTOS, self)

    def _resolve(self, protos: dict, into) -> None:
        """Set each GL function of ``protos`` on ``into``: through eglGetProcAddress, else the
        GL library's symbol (AttributeError where it has none)."""
        for fname, (restype, argtypes) in protos.items():
            addr = self._get_proc(fname.encode()) if self._get_proc is not None else None
            if addr:
                fn = ctypes.CFUNCTYPE(restype, *argtypes)(addr)
            else:
                fn = getattr(self._gl, fname)
                fn.restype, fn.argtypes = restype, argtypes
            setattr(into, fname, fn)

    def buffers(self):
        """The buffer, pixel-transfer and fence calls of the mapped transfer buffers
        (:class:`shadergpgpu.engine.transfer.MappedBuffer`), resolved on first use;
        AttributeError where the GL library lacks one."""
        if self._buffers is None:
            ns = type("GLBuffers", (), {})()
            self._resolve(_BUFFER_PROTOS, ns)
            self._buffers = ns
        return self._buffers

    @classmethod
    def get(cls) -> "GLRaw":
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def drain(self) -> None:
        """Clear pending GL errors (left by earlier calls outside this module)."""
        for _ in range(16):
            if not self.glGetError():
                break

    def check(self, what: str) -> None:
        err = self.glGetError()
        if err:
            raise RuntimeError(f"OpenGL error 0x{err:04X} in {what}")


def _activate(device) -> None:
    act = getattr(device, "activate", None)
    if act is not None:
        act()


def set_sampler_unit(program, name: str, unit: int) -> None:
    """Point the ``samplerBuffer`` uniform ``name`` of a moderngl program at texture ``unit``.

    moderngl does not know the ``samplerBuffer`` uniform type, so the engine sets the unit of
    every buffer input with ``glUniform1i`` when it compiles the kernel (the value stays in the
    program object).
    """
    gl = GLRaw.get()
    gl.drain()
    prog = program.glo
    gl.glUseProgram(prog)
    loc = gl.glGetUniformLocation(prog, name.encode())
    if loc >= 0:
        gl.glUniform1i(loc, unit)
    gl.check("setting a samplerBuffer unit")


def _check_buffer_textures(device) -> None:
    """Refuse a buffer texture on a context without them (an OpenGL ES context below 3.2
    without GL_EXT_texture_buffer), by name, before any GL call."""
    caps = getattr(device, "caps", None)
    if caps is not None and not getattr(caps, "buffer_textures", True):
        raise CapabilityError(
            f"this OpenGL ES context ({caps.version}) has no buffer textures (samplerBuffer): "
            "they need OpenGL ES 3.2 or GL_EXT_texture_buffer; pass texture arrays instead")


def max_texture_buffer_size(device) -> int:
    """GL_MAX_TEXTURE_BUFFER_SIZE of the device's context, in texels."""
    v = device.ctx.info.get("GL_MAX_TEXTURE_BUFFER_SIZE")
    if v:
        return int(v)
    out = ctypes.c_int(0)
    GLRaw.get().glGetIntegerv(GL_MAX_TEXTURE_BUFFER_SIZE, ctypes.byref(out))
    return int(out.value)


class BufferArray(Releasable):
    """A float32 matrix in a GL buffer, read by shaders through a ``samplerBuffer``.

    The buffer holds the texels of ``layout`` (a :class:`~shadergpgpu.engine.layout.BufferLayout`)
    one after another; ``bind(unit)`` binds a ``GL_TEXTURE_BUFFER`` view of it (format RGBA32F)
    on that texture unit. Make one from host data with :meth:`from_host` or from a device
    texture (no host round trip) with :meth:`from_texture`.
    """

    def __init__(self, device, layout: BufferLayout, buffer):
        _check_buffer_textures(device)
        self.device = device
        self.layout = layout
        self.buffer = buffer
        self._gl = GLRaw.get()
        _activate(device)
        self._gl.drain()
        tex = ctypes.c_uint(0)
        self._gl.glGenTextures(1, ctypes.byref(tex))
        self.tex = tex.value
        self._gl.glActiveTexture(GL_TEXTURE0 + device.ctx.default_texture_unit)
        self._gl.glBindTexture(GL_TEXTURE_BUFFER, self.tex)
        self._gl.glTexBuffer(GL_TEXTURE_BUFFER, GL_RGBA32F, buffer.glo)
        self._gl.glBindTexture(GL_TEXTURE_BUFFER, 0)
        self._gl.check("glTexBuffer")

    @classmethod
    def from_host(cls, device, layout: BufferLayout, matrix: np.ndarray) -> "BufferArray":
        _check_buffer_textures(device)
        data = layout.pack_array(matrix)
        return cls(device, layout, device.ctx.buffer(data.tobytes()))

    @classmethod
    def from_texture(cls, device, layout: BufferLayout, array) -> "BufferArray":
        """Copy a DeviceArray whose texture holds the buffer's texels in order (see
        :meth:`BufferLayout.texture_layout`) into a new buffer on the device."""
        if array.layout != layout.texture_layout(device.max_texture_size):
            raise ValueError("the staging texture's layout does not match the buffer layout")
        _activate(device)
        buf = device.ctx.buffer(reserve=array.layout.nbytes)
        array.texture.read_into(buf, alignment=4)
        return cls(device, layout, buf)

    # ---- the engine's input protocol (layout, bind, released) ----------------------------------
    def bind(self, unit: int) -> None:
        gl = self._gl
        gl.glActiveTexture(GL_TEXTURE0 + unit)
        gl.glBindTexture(GL_TEXTURE_BUFFER, self.tex)
        # moderngl selects its own unit before each of its binds; leave its default selected.
        gl.glActiveTexture(GL_TEXTURE0 + self.device.ctx.default_texture_unit)

    @property
    def released(self) -> bool:
        return self.buffer is None

    def release(self) -> None:
        if self.buffer is not None:
            dev = self.device
            buf, self.buffer = self.buffer, None
            if hasattr(dev, "_epoch"):
                dev._epoch += 1  # prepared passes that read this buffer must not draw with it
            if getattr(dev, "released", False):
                return  # the context took the texture and buffer with it
            _activate(dev)
            t = ctypes.c_uint(self.tex)
            self._gl.glDeleteTextures(1, ctypes.byref(t))
            buf.release()
