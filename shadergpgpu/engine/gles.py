"""The OpenGL ES backend (``Device(api="gles")``, ``SHADERGPGPU_API=gles``): a native OpenGL ES
3.0+ context made headless through EGL, driven by moderngl (issue 42).

The context: EGL's Mesa surfaceless platform (``EGL_MESA_platform_surfaceless``), else the
device platform (``EGL_EXT_device_enumeration``; NVIDIA's EGL), ``eglBindAPI(EGL_OPENGL_ES_API)``
and a context of ES 3.0 or later (the driver gives its highest compatible version) without a
config or surface. moderngl is attached to it through :class:`EsLoader`, which gives moderngl
the driver's function pointers (``eglGetProcAddress``) and a no-op stub only where the driver
has none (the binding measured in ``benchmarks/diag/es_probe.py``: 0.99-1.15x the desktop
backend's per-pass cost, where PyOpenGL's ES binding costs 2.8-3.6x).

What differs from the desktop backend:

* the kernels run as GLSL ES (``#version 300 es`` with ``precision highp``; ``320 es`` or
  ``310 es`` with ``GL_EXT_texture_buffer`` for kernels that read buffer textures), the dialect
  the ``webgl2`` profile exports (:mod:`.export`);
* ES has no ``glGetTexImage``: textures (:class:`EsTexture`) are read through a framebuffer;
* the behaviour comes from the context: float render targets need ``EXT_color_buffer_float``
  (refused with a clear error without it), blending into them ``EXT_float_blend`` (else the
  ping-pong accumulate path), buffer textures ES 3.2 or ``EXT_texture_buffer``, the mapped
  transfer buffers ``EXT_buffer_storage``; highp float must be float32
  (``glGetShaderPrecisionFormat``).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import re

from .errors import CapabilityError

API_NAMES = ("gl", "gles")

REMEDY = ("The ES backend needs EGL with OpenGL ES 3.0 or later: on Debian/Ubuntu "
          "`apt-get install libegl1 libgles2 libgl1-mesa-dri` (Mesa: llvmpipe, V3D, Panfrost, "
          "Freedreno), or the GPU vendor's EGL/GLES driver; or use the desktop backend "
          "(api='gl', the default)")

EGL_PLATFORM_SURFACELESS_MESA, EGL_PLATFORM_DEVICE_EXT = 0x31DD, 0x313F
EGL_OPENGL_ES_API, EGL_NONE = 0x30A0, 0x3038
EGL_CONTEXT_MAJOR_VERSION, EGL_CONTEXT_MINOR_VERSION = 0x3098, 0x30FB
EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT = 0x3040, 0x40
EGL_VENDOR, EGL_VERSION = 0x3053, 0x3054

GL_FRAGMENT_SHADER, GL_HIGH_FLOAT, GL_HIGH_INT = 0x8B30, 0x8DF2, 0x8DF5
GL_PRIMITIVE_RESTART = 0x8F9D

#: GLSL ES precision statements every kernel gets (the webgl2 export's)
ES_PRECISION = ("precision highp float;", "precision highp int;", "precision highp sampler2D;")

#: the full-screen triangle of every pass, as GLSL ES
ES_VERTEX_SHADER = """#version 300 es
void main() {
    vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
"""

_SAMPLER_BUFFER = re.compile(r"^(?:(?!//).)*\bsamplerBuffer\b", re.M)


def resolve_api(api: str | None) -> str:
    if api is not None and not isinstance(api, str):
        raise TypeError(f"api must be 'gl', 'gles' or None, got {api!r}")
    a = (api or os.environ.get("SHADERGPGPU_API") or "gl").strip().lower()
    if a in ("es", "opengles", "gles3"):
        a = "gles"
    if a not in API_NAMES:
        raise ValueError(f"unknown api {a!r}; choose 'gl' (desktop OpenGL 3.3, the default) "
                         "or 'gles' (OpenGL ES 3.0+)")
    return a


class _Egl:
    """libEGL through ctypes (the few entry points a headless ES context needs)."""

    _lib = None

    @classmethod
    def get(cls):
        if cls._lib is None:
            lib = None
            for name in ("libEGL.so.1", "libEGL.so", ctypes.util.find_library("EGL")):
                if name:
                    try:
                        lib = ctypes.CDLL(name)
                        break
                    except OSError:
                        pass
            if lib is None:
                raise CapabilityError(f"no EGL library (libEGL.so.1) for the ES backend. {REMEDY}")
            vp, i32 = ctypes.c_void_p, ctypes.c_int32
            lib.eglGetProcAddress.restype, lib.eglGetProcAddress.argtypes = vp, [ctypes.c_char_p]
            lib.eglGetPlatformDisplay.restype = vp
            lib.eglGetPlatformDisplay.argtypes = [ctypes.c_uint, vp,
                                                  ctypes.POINTER(ctypes.c_ssize_t)]
            lib.eglInitialize.argtypes = [vp, ctypes.POINTER(i32), ctypes.POINTER(i32)]
            lib.eglBindAPI.argtypes = [ctypes.c_uint]
            lib.eglChooseConfig.argtypes = [vp, ctypes.POINTER(i32), ctypes.POINTER(vp), i32,
                                            ctypes.POINTER(i32)]
            lib.eglCreateContext.restype = vp
            lib.eglCreateContext.argtypes = [vp, vp, vp, ctypes.POINTER(i32)]
            lib.eglMakeCurrent.argtypes = [vp, vp, vp, vp]
            lib.eglDestroyContext.argtypes = [vp, vp]
            lib.eglGetCurrentContext.restype = vp
            lib.eglGetError.restype = i32
            lib.eglQueryString.restype = ctypes.c_char_p
            lib.eglQueryString.argtypes = [vp, i32]
            cls._lib = lib
        return cls._lib


def _display(egl, device_index):
    """(display, platform description): surfaceless first (unless a device index is given),
    then the device platform."""
    ma, mi = ctypes.c_int32(), ctypes.c_int32()
    if device_index is None:
        dpy = egl.eglGetPlatformDisplay(EGL_PLATFORM_SURFACELESS_MESA, None, None)
        if dpy and egl.eglInitialize(dpy, ctypes.byref(ma), ctypes.byref(mi)):
            return dpy, "surfaceless"
    addr = egl.eglGetProcAddress(b"eglQueryDevicesEXT")
    if not addr:
        raise CapabilityError("EGL offers neither the Mesa surfaceless platform nor device "
                              f"enumeration (EGL_EXT_device_enumeration). {REMEDY}")
    vp, i32 = ctypes.c_void_p, ctypes.c_int32
    query = ctypes.CFUNCTYPE(ctypes.c_uint, i32, ctypes.POINTER(vp), ctypes.POINTER(i32))(addr)
    devs, nd = (vp * 16)(), i32()
    query(16, devs, ctypes.byref(nd))
    index = 0 if device_index is None else int(device_index)
    if nd.value <= index:
        raise CapabilityError(f"EGL device {index} does not exist (requested device index "
                              f"{index}, but found {nd.value} devices). {REMEDY}")
    dpy = egl.eglGetPlatformDisplay(EGL_PLATFORM_DEVICE_EXT, devs[index], None)
    if not dpy or not egl.eglInitialize(dpy, ctypes.byref(ma), ctypes.byref(mi)):
        raise CapabilityError(f"the EGL display of device {index} failed to initialise "
                              f"(EGL error 0x{egl.eglGetError():x}). {REMEDY}")
    return dpy, f"device {index} of {nd.value}"


class EsLoader:
    """A moderngl loader (``mgl.create_context(context=loader)``) for a native ES context made
    here: the driver's function pointers, a recorded no-op stub where the driver returns none
    (desktop-only names moderngl loads: glPrimitiveRestartIndex, glClampColor, glGetTexImage,
    ...). ``__enter__`` makes the context current (what :meth:`Device.activate` calls);
    :meth:`release` destroys it."""

    def __init__(self, device_index=None, major: int = 3, minor: int = 0):
        egl = self._egl = _Egl.get()
        self.dpy, self.platform = _display(egl, device_index)
        if not egl.eglBindAPI(EGL_OPENGL_ES_API):
            raise CapabilityError(f"this EGL has no OpenGL ES API (eglBindAPI failed, 0x"
                                  f"{egl.eglGetError():x}). {REMEDY}")
        i32, vp = ctypes.c_int32, ctypes.c_void_p
        attrs = (i32 * 3)(EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_NONE)
        cfg, n = vp(), i32()
        if not egl.eglChooseConfig(self.dpy, attrs, ctypes.byref(cfg), 1, ctypes.byref(n)) \
                or n.value < 1:
            cfg = vp()  # EGL_KHR_no_config_context
        cattrs = (i32 * 5)(EGL_CONTEXT_MAJOR_VERSION, major, EGL_CONTEXT_MINOR_VERSION, minor,
                           EGL_NONE)
        self.ctx = egl.eglCreateContext(self.dpy, cfg, None, cattrs)
        if not self.ctx:
            raise CapabilityError(f"eglCreateContext of OpenGL ES {major}.{minor} failed "
                                  f"(EGL error 0x{egl.eglGetError():x}) on the {self.platform} "
                                  f"platform. {REMEDY}")
        self.egl_vendor = (egl.eglQueryString(self.dpy, EGL_VENDOR) or b"").decode()
        self.egl_version = (egl.eglQueryString(self.dpy, EGL_VERSION) or b"").decode()
        self.__enter__()
        self._gp = egl.eglGetProcAddress
        self.stubbed: list = []
        self.called: list = []
        self._keep: list = []

    def load_opengl_function(self, name):
        addr = self._gp(name.encode())
        if addr:
            return addr
        self.stubbed.append(name)

        def stub(name=name):
            self.called.append(name)

        cb = ctypes.CFUNCTYPE(None)(stub)
        self._keep.append(cb)
        return ctypes.cast(cb, ctypes.c_void_p).value

    def __enter__(self):
        if self.ctx and not self._egl.eglMakeCurrent(self.dpy, None, None, self.ctx):
            raise RuntimeError(f"eglMakeCurrent of the ES context failed "
                               f"(0x{self._egl.eglGetError():x})")

    def __exit__(self, *args):
        pass

    def release(self):
        if self.ctx:
            # unbind only this context: a dropped device may be collected while another
            # device's context is current (in the middle of that device's start)
            if self._egl.eglGetCurrentContext() == self.ctx:
                self._egl.eglMakeCurrent(self.dpy, None, None, None)
            self._egl.eglDestroyContext(self.dpy, self.ctx)
            self.ctx = None


def _framebuffer_read(tex, method, *args, **kwargs):
    fbo = getattr(tex, "_sg_read_fbo", None)
    if fbo is None:
        fbo = tex._sg_read_fbo = tex.ctx.framebuffer(color_attachments=[tex])
    return getattr(fbo, method)(*args, **kwargs)


def _texture_class():
    import moderngl

    class EsTexture(moderngl.Texture):
        """A moderngl texture of an ES context: ``read`` / ``read_into`` go through a
        framebuffer (glReadPixels; ES has no glGetTexImage). RGBA float32 textures only read
        as RGBA (what ES guarantees for float color buffers)."""

        def read(self, level=0, alignment=1):
            if level:
                raise ValueError("the ES backend reads level 0 only")
            return _framebuffer_read(self, "read", components=self.components,
                                     alignment=alignment, dtype=self.dtype)

        def read_into(self, buffer, level=0, alignment=1, write_offset=0):
            if level:
                raise ValueError("the ES backend reads level 0 only")
            return _framebuffer_read(self, "read_into", buffer, components=self.components,
                                     alignment=alignment, dtype=self.dtype,
                                     write_offset=write_offset)

        def release(self):
            fbo = getattr(self, "_sg_read_fbo", None)
            if fbo is not None:
                self._sg_read_fbo = None
                fbo.release()
            super().release()

    class EsContext(moderngl.Context):
        """moderngl's context on a native ES context (textures are :class:`EsTexture`)."""

        def texture(self, *args, **kwargs):
            t = super().texture(*args, **kwargs)
            t.__class__ = EsTexture
            return t

    return EsTexture, EsContext


_CLASSES = []


def create_context(moderngl, device_index=None):
    """A moderngl context on a new native ES 3.0+ context; returns ``(ctx, loader)``."""
    from collections import deque
    loader = EsLoader(device_index)
    if not _CLASSES:
        _CLASSES.extend(_texture_class())
    ctx = _CLASSES[1].__new__(_CLASSES[1])
    try:
        ctx.mglo, ctx.version_code = moderngl.mgl.create_context(context=loader)
    except Exception as e:
        loader.release()
        raise CapabilityError(f"moderngl could not attach to the OpenGL ES context ({e}). "
                              f"{REMEDY}") from e
    ctx._info = ctx._extensions = ctx.extra = ctx._gc_mode = None
    ctx._objects = deque()
    ctx._screen = ctx.detect_framebuffer(0)
    ctx.fbo = ctx.detect_framebuffer()
    ctx.mglo.fbo = ctx.fbo.mglo
    ctx.sg_loader = loader
    # moderngl enables GL_PRIMITIVE_RESTART with a (stubbed) restart index 0 at creation: NVIDIA
    # then drops vertex 0 of every draw (Mesa refuses the desktop enum in ES)
    ctx.disable_direct(GL_PRIMITIVE_RESTART)
    ctx.clear_errors()
    ctx.sg_features = features(ctx)   # what the engine's paths and shader libraries follow
    return ctx, loader


def _raw(name, restype, argtypes):
    addr = _Egl.get().eglGetProcAddress(name.encode())
    return ctypes.CFUNCTYPE(restype, *argtypes)(addr) if addr else None


def highp_float(ctx) -> tuple:
    """(range low, range high, precision bits) of highp float in fragment shaders."""
    fn = _raw("glGetShaderPrecisionFormat", None,
              [ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_int),
               ctypes.POINTER(ctypes.c_int)])
    rng, p = (ctypes.c_int * 2)(), ctypes.c_int()
    fn(GL_FRAGMENT_SHADER, GL_HIGH_FLOAT, rng, ctypes.byref(p))
    ctx.clear_errors()
    return rng[0], rng[1], p.value


def es_version(ctx) -> tuple:
    """(major, minor) of the ES context, from GL_VERSION ("OpenGL ES 3.2 Mesa ...")."""
    m = re.search(r"OpenGL ES (\d+)\.(\d+)", str(ctx.info.get("GL_VERSION", "")))
    return (int(m.group(1)), int(m.group(2))) if m else divmod(ctx.version_code // 10, 10)


def features(ctx) -> dict:
    """What the ES context offers that the engine's paths depend on (from its extensions and
    version)."""
    exts = ctx.extensions
    ver = es_version(ctx)
    return {
        "es_version": ver,
        "color_buffer_float": "GL_EXT_color_buffer_float" in exts,
        "float_blend": "GL_EXT_float_blend" in exts,
        "texture_buffer": ver >= (3, 2) or ("GL_EXT_texture_buffer" in exts and ver >= (3, 1))
        or ("GL_OES_texture_buffer" in exts and ver >= (3, 1)),
        "buffer_storage": "GL_EXT_buffer_storage" in exts,
        "timer_query": "GL_EXT_disjoint_timer_query" in exts,
        "highp_float": highp_float(ctx),
    }


def check_features(f: dict, renderer: str) -> None:
    """Refuse an ES context the engine cannot run on, naming what is missing."""
    missing = []
    if f["es_version"] < (3, 0):
        missing.append(f"OpenGL ES 3.0 (this context is ES {f['es_version'][0]}."
                       f"{f['es_version'][1]})")
    if not f["color_buffer_float"]:
        missing.append("GL_EXT_color_buffer_float (float32 render targets; the library "
                       "never falls back to 16-bit or 8-bit textures)")
    lo, hi, bits = f["highp_float"]
    if bits < 23 or hi < 127:
        missing.append(f"highp float of float32 precision in fragment shaders (this driver's "
                       f"highp float: {bits} bits of precision, range 2^{hi})")
    if missing:
        raise CapabilityError(f"the OpenGL ES implementation '{renderer}' lacks: "
                              + "; ".join(missing) + f". {REMEDY}")


def es_header(text: str, version: tuple, texture_buffer: bool) -> list:
    """The lines that open a kernel's GLSL ES source (in place of ``#version 330 core``):
    ``300 es`` and precision statements; a kernel reading buffer textures gets ``320 es`` on an
    ES 3.2 context, else ``310 es`` with ``GL_EXT_texture_buffer``."""
    if not _SAMPLER_BUFFER.search(text):
        return ["#version 300 es", *ES_PRECISION]
    if version >= (3, 2):
        return ["#version 320 es", *ES_PRECISION, "precision highp samplerBuffer;"]
    return ["#version 310 es", "#extension GL_EXT_texture_buffer : require", *ES_PRECISION,
            "precision highp samplerBuffer;"]
