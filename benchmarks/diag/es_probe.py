"""OpenGL ES binding probe (issue 42, item 2): which GL binding should ``sg.Device(api="gles")``
use, chosen with measurements.

    PYTHONPATH=. python benchmarks/diag/es_probe.py [--passes 3000] [--repeat 7] [--json FILE]

A native OpenGL ES 3.x context is made headless with ctypes through EGL (Mesa's surfaceless
platform, ``eglBindAPI(EGL_OPENGL_ES_API)``, ``EGL_CONTEXT_MAJOR_VERSION 3``, no surface), at the
driver's own level (ES 3.2 on Mesa 22) and at WebGL2's level (``MESA_GLES_VERSION_OVERRIDE=3.0``
and ``MESA_EXTENSION_OVERRIDE="-GL_EXT_float_blend -GL_EXT_texture_buffer
-GL_OES_texture_buffer"``). On each, three bindings are tried:

* ``moderngl-es``: moderngl attached to the current ES context (``moderngl.create_context(
  require=300)``, its DefaultLoader; ``backend="egl", libgl="libGLESv2.so.2"`` fails: glcontext's
  EGL backend knows only the modes standalone and share); ``moderngl-es-loader``: the same
  through :class:`EsLoader` (``mgl.create_context(context=loader)``), which guards the
  desktop-only entry points; ``moderngl-es-stubs`` / ``moderngl-es-null``: what happens when
  those are stubs / null pointers;
* ``pyopengl-es``: PyOpenGL's ``OpenGL.GLES3`` with ``PYOPENGL_PLATFORM=egl`` (its default error
  checking: glGetError after each call; ``pyopengl-es-nocheck``: ``OpenGL.ERROR_CHECKING = False``
  before the import, which breaks ``from OpenGL import GLES3`` in PyOpenGL 3.1.10);
* ``ctypes-es``: a small ctypes layer over ``libGLESv2.so.2`` (the calls a fragment-pass engine
  needs).

The desktop figure is the library's own backend: moderngl on the headless EGL desktop 3.3 core
context.

Per pass (a prepared pass: bind program, set one float uniform, bind 2 input textures, bind the
framebuffer, draw one full-screen triangle into a 64x64, then a 1x1 RGBA32F target; the kernel
is the library's ``engine/saxpy``, its GLSL ES source from ``shadergpgpu.engine.export``),
3,000 passes then a finish, best of 7; a float readback of 1 MiB (256x256 RGBA32F through
glReadPixels / ``fbo.read``); and a compute check: saxpy on 64x256 float32 compared with numpy,
plus a 4-output pass (multiple render targets) and float additive blending where the context
has it.

Each binding also runs in a child of its own (a binding that crashes in the driver takes only
its child down; the parent reports the signal), and ``interleaved`` puts the desktop context and
the ES bindings in one process, timed in alternation (fair under a varying load: the main
figures). On NVIDIA (no Mesa) the overrides change nothing: ``--only-driver`` skips them; the
surfaceless platform is tried first, then the device platform (``ES_PROBE_PLATFORM=device``).

Figures of 2026-11-28 (1x1 target, us per pass, x the desktop backend; interleaved):

| binding | llvmpipe ES 3.2 | llvmpipe ES 3.0 | H200 NVIDIA 580 ES 3.2 |
| --- | --- | --- | --- |
| desktop (moderngl, GL 3.3 core) | 2.24 | 2.14 | 2.60 |
| moderngl on the ES context | 2.40 (1.07) | 2.45 (1.15) | 2.57 (0.99) |
| ctypes, 10 calls a pass | 4.33 (1.94) | 4.61 (2.15) | 6.16 (2.37) |
| ctypes, state cache (uniform + draw) | 2.17 (0.97) | 2.28 (1.06) | 1.12 (0.43) |
| PyOpenGL GLES3 | 6.19 (2.77) | 6.31 (2.94) | 9.37 (3.61) |

64x64 target on llvmpipe: every binding 18.7-19.6 us (rasterization dominates); 1 MiB
readback 0.017-0.025 ms (llvmpipe), 0.11-0.13 ms (H200), whatever the binding.

Exit status 0; 2 when no ES context can be made (no EGL ES support).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

ES30_ENV = {"MESA_GLES_VERSION_OVERRIDE": "3.0",
            "MESA_EXTENSION_OVERRIDE": "-GL_EXT_float_blend -GL_EXT_texture_buffer "
                                       "-GL_OES_texture_buffer"}

# ---------------------------------------------------------------------------------------------
# EGL through ctypes

EGL_PLATFORM_SURFACELESS_MESA = 0x31DD
EGL_OPENGL_ES_API, EGL_OPENGL_API = 0x30A0, 0x30A2
EGL_NONE, EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_OPENGL_BIT = 0x3038, 0x3040, 0x40, 0x8
EGL_CONTEXT_MAJOR_VERSION, EGL_CONTEXT_MINOR_VERSION = 0x3098, 0x30FB
EGL_VENDOR, EGL_VERSION, EGL_EXTENSIONS = 0x3053, 0x3054, 0x3055


def egl_es_context(major: int = 3, minor: int = 0):
    """Make a native ES ``major.minor``+ context current on this thread, surfaceless."""
    egl = ctypes.CDLL("libEGL.so.1")
    vp, i32 = ctypes.c_void_p, ctypes.c_int32
    egl.eglGetProcAddress.restype = vp
    egl.eglGetProcAddress.argtypes = [ctypes.c_char_p]
    egl.eglGetPlatformDisplay.restype = vp
    egl.eglGetPlatformDisplay.argtypes = [ctypes.c_uint, vp, ctypes.POINTER(ctypes.c_ssize_t)]
    egl.eglInitialize.argtypes = [vp, ctypes.POINTER(i32), ctypes.POINTER(i32)]
    egl.eglBindAPI.argtypes = [ctypes.c_uint]
    egl.eglChooseConfig.argtypes = [vp, ctypes.POINTER(i32), ctypes.POINTER(vp), i32,
                                    ctypes.POINTER(i32)]
    egl.eglCreateContext.restype = vp
    egl.eglCreateContext.argtypes = [vp, vp, vp, ctypes.POINTER(i32)]
    egl.eglMakeCurrent.argtypes = [vp, vp, vp, vp]
    egl.eglGetError.restype = i32
    egl.eglQueryString.restype = ctypes.c_char_p
    egl.eglQueryString.argtypes = [vp, i32]
    ma, mi = i32(), i32()
    platform = os.environ.get("ES_PROBE_PLATFORM", "")
    dpy = None
    if platform in ("", "surfaceless"):
        dpy = egl.eglGetPlatformDisplay(EGL_PLATFORM_SURFACELESS_MESA, None, None)
        if dpy and not egl.eglInitialize(dpy, ctypes.byref(ma), ctypes.byref(mi)):
            dpy = None
        if not dpy and platform:
            raise RuntimeError(f"eglGetPlatformDisplay(SURFACELESS_MESA) / eglInitialize "
                               f"failed: 0x{egl.eglGetError():x}")
        platform = "surfaceless" if dpy else ""
    if not dpy:  # the device platform (NVIDIA's EGL has no Mesa surfaceless platform)
        addr = egl.eglGetProcAddress(b"eglQueryDevicesEXT")
        if not addr:
            raise RuntimeError("neither EGL_MESA_platform_surfaceless nor "
                               "EGL_EXT_device_enumeration")
        query = ctypes.CFUNCTYPE(ctypes.c_uint, i32, ctypes.POINTER(vp), ctypes.POINTER(i32))(addr)
        devs, nd = (vp * 16)(), i32()
        query(16, devs, ctypes.byref(nd))
        index = int(os.environ.get("ES_PROBE_DEVICE", "0"))
        if nd.value <= index:
            raise RuntimeError(f"EGL device {index} absent ({nd.value} devices)")
        dpy = egl.eglGetPlatformDisplay(0x313F, devs[index], None)  # EGL_PLATFORM_DEVICE_EXT
        if not dpy or not egl.eglInitialize(dpy, ctypes.byref(ma), ctypes.byref(mi)):
            raise RuntimeError(f"EGL device platform display failed: 0x{egl.eglGetError():x}")
        platform = f"device {index} of {nd.value}"
    if not egl.eglBindAPI(EGL_OPENGL_ES_API):
        raise RuntimeError(f"eglBindAPI(EGL_OPENGL_ES_API) failed: 0x{egl.eglGetError():x}")
    attrs = (i32 * 3)(EGL_RENDERABLE_TYPE, EGL_OPENGL_ES3_BIT, EGL_NONE)
    cfg, n = vp(), i32()
    if not egl.eglChooseConfig(dpy, attrs, ctypes.byref(cfg), 1, ctypes.byref(n)) or n.value < 1:
        cfg = vp()  # EGL_KHR_no_config_context
    cattrs = (i32 * 5)(EGL_CONTEXT_MAJOR_VERSION, major, EGL_CONTEXT_MINOR_VERSION, minor,
                       EGL_NONE)
    ctx = egl.eglCreateContext(dpy, cfg, None, cattrs)
    if not ctx:
        raise RuntimeError(f"eglCreateContext(ES {major}.{minor}) failed: "
                           f"0x{egl.eglGetError():x}")
    if not egl.eglMakeCurrent(dpy, None, None, ctx):
        raise RuntimeError(f"eglMakeCurrent(surfaceless) failed: 0x{egl.eglGetError():x}")
    info = {"egl": f"{ma.value}.{mi.value}", "platform": platform,
            "egl_vendor": (egl.eglQueryString(dpy, EGL_VENDOR) or b"").decode(),
            "egl_surfaceless": b"EGL_KHR_surfaceless_context" in
            (egl.eglQueryString(dpy, EGL_EXTENSIONS) or b""),
            "config": bool(cfg.value)}
    return egl, dpy, ctx, info


# ---------------------------------------------------------------------------------------------
# The small ctypes layer over libGLESv2 (what a fragment-pass engine needs)

GL = dict(
    TEXTURE_2D=0x0DE1, TEXTURE0=0x84C0, RGBA=0x1908, RGBA32F=0x8814, FLOAT=0x1406,
    NEAREST=0x2600, TEXTURE_MIN_FILTER=0x2801, TEXTURE_MAG_FILTER=0x2800,
    TEXTURE_WRAP_S=0x2802, TEXTURE_WRAP_T=0x2803, CLAMP_TO_EDGE=0x812F,
    FRAMEBUFFER=0x8D40, READ_FRAMEBUFFER=0x8CA8, DRAW_FRAMEBUFFER=0x8CA9,
    COLOR_ATTACHMENT0=0x8CE0, FRAMEBUFFER_COMPLETE=0x8CD5,
    VERTEX_SHADER=0x8B31, FRAGMENT_SHADER=0x8B30, COMPILE_STATUS=0x8B81, LINK_STATUS=0x8B82,
    INFO_LOG_LENGTH=0x8B84, TRIANGLES=0x0004, BLEND=0x0BE2, ONE=1, FUNC_ADD=0x8006,
    PACK_ALIGNMENT=0x0D05, UNPACK_ALIGNMENT=0x0CF5,
    VENDOR=0x1F00, RENDERER=0x1F01, VERSION=0x1F02, EXTENSIONS=0x1F03,
    SHADING_LANGUAGE_VERSION=0x8B8C, NUM_EXTENSIONS=0x821D, HIGH_FLOAT=0x8DF2, HIGH_INT=0x8DF5,
    UNIFORM_BUFFER=0x8A11, STATIC_DRAW=0x88E4, NO_ERROR=0,
)
LIMITS = {
    "MAX_TEXTURE_SIZE": 0x0D33, "MAX_DRAW_BUFFERS": 0x8824, "MAX_COLOR_ATTACHMENTS": 0x8CDF,
    "MAX_TEXTURE_IMAGE_UNITS": 0x8872, "MAX_COMBINED_TEXTURE_IMAGE_UNITS": 0x8B4D,
    "MAX_FRAGMENT_UNIFORM_VECTORS": 0x8DFD, "MAX_FRAGMENT_UNIFORM_COMPONENTS": 0x8B49,
    "MAX_VERTEX_UNIFORM_VECTORS": 0x8DFB, "MAX_UNIFORM_BLOCK_SIZE": 0x8A30,
    "MAX_FRAGMENT_UNIFORM_BLOCKS": 0x8A2D, "MAX_UNIFORM_BUFFER_BINDINGS": 0x8A2F,
    "MAX_RENDERBUFFER_SIZE": 0x84E8, "MAX_VIEWPORT_DIMS[0]": 0x0D3A,
    "MAX_ARRAY_TEXTURE_LAYERS": 0x88FF, "MAX_3D_TEXTURE_SIZE": 0x8073,
    "MAX_TEXTURE_BUFFER_SIZE": 0x8C2B, "MAX_FRAGMENT_INPUT_COMPONENTS": 0x9125,
    "MAX_SAMPLES": 0x8D57,
}
ES_EXTS = ("GL_EXT_color_buffer_float", "GL_EXT_color_buffer_half_float", "GL_EXT_float_blend",
           "GL_EXT_texture_buffer", "GL_OES_texture_buffer", "GL_OES_texture_float",
           "GL_OES_texture_float_linear", "GL_EXT_disjoint_timer_query",
           "GL_EXT_buffer_storage", "GL_EXT_map_buffer_range", "GL_NV_read_depth",
           "GL_EXT_draw_buffers_indexed", "GL_OES_draw_buffers_indexed",
           "GL_KHR_debug", "GL_EXT_shader_framebuffer_fetch", "GL_EXT_texture_norm16",
           "GL_EXT_read_format_bgra", "GL_NV_pixel_buffer_object", "GL_EXT_clip_control")

u32, i32, vp, cp = ctypes.c_uint, ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p
P_u32, P_i32 = ctypes.POINTER(u32), ctypes.POINTER(i32)
PROTOS = {
    "glGetError": (u32, []), "glGetString": (cp, [u32]), "glGetStringi": (cp, [u32, u32]),
    "glGetIntegerv": (None, [u32, P_i32]), "glFinish": (None, []), "glFlush": (None, []),
    "glGetShaderPrecisionFormat": (None, [u32, u32, P_i32, P_i32]),
    "glCreateShader": (u32, [u32]), "glShaderSource": (None, [u32, i32, ctypes.POINTER(cp),
                                                             P_i32]),
    "glCompileShader": (None, [u32]), "glGetShaderiv": (None, [u32, u32, P_i32]),
    "glGetShaderInfoLog": (None, [u32, i32, P_i32, cp]), "glDeleteShader": (None, [u32]),
    "glCreateProgram": (u32, []), "glAttachShader": (None, [u32, u32]),
    "glLinkProgram": (None, [u32]), "glGetProgramiv": (None, [u32, u32, P_i32]),
    "glGetProgramInfoLog": (None, [u32, i32, P_i32, cp]), "glUseProgram": (None, [u32]),
    "glDeleteProgram": (None, [u32]),
    "glGetUniformLocation": (i32, [u32, cp]), "glUniform1i": (None, [i32, i32]),
    "glUniform1f": (None, [i32, ctypes.c_float]),
    "glUniform4i": (None, [i32, i32, i32, i32, i32]),
    "glUniform4f": (None, [i32, ctypes.c_float, ctypes.c_float, ctypes.c_float,
                           ctypes.c_float]),
    "glGenTextures": (None, [i32, P_u32]), "glDeleteTextures": (None, [i32, P_u32]),
    "glBindTexture": (None, [u32, u32]), "glActiveTexture": (None, [u32]),
    "glTexParameteri": (None, [u32, u32, i32]),
    "glTexStorage2D": (None, [u32, i32, u32, i32, i32]),
    "glTexSubImage2D": (None, [u32, i32, i32, i32, i32, i32, u32, u32, vp]),
    "glGenFramebuffers": (None, [i32, P_u32]), "glDeleteFramebuffers": (None, [i32, P_u32]),
    "glBindFramebuffer": (None, [u32, u32]),
    "glFramebufferTexture2D": (None, [u32, u32, u32, u32, i32]),
    "glCheckFramebufferStatus": (u32, [u32]), "glDrawBuffers": (None, [i32, P_u32]),
    "glReadBuffer": (None, [u32]),
    "glGenVertexArrays": (None, [i32, P_u32]), "glBindVertexArray": (None, [u32]),
    "glViewport": (None, [i32, i32, i32, i32]), "glDrawArrays": (None, [u32, i32, i32]),
    "glEnable": (None, [u32]), "glDisable": (None, [u32]),
    "glBlendFunc": (None, [u32, u32]), "glBlendEquation": (None, [u32]),
    "glReadPixels": (None, [i32, i32, i32, i32, u32, u32, vp]),
    "glPixelStorei": (None, [u32, i32]),
    "glGenBuffers": (None, [i32, P_u32]), "glBindBuffer": (None, [u32, u32]),
    "glBufferData": (None, [u32, ctypes.c_ssize_t, vp, u32]),
    "glBindBufferRange": (None, [u32, u32, u32, ctypes.c_ssize_t, ctypes.c_ssize_t]),
    "glGetUniformBlockIndex": (u32, [u32, cp]),
    "glUniformBlockBinding": (None, [u32, u32, u32]),
}


class CtGL:
    """Function pointers from libGLESv2 (glvnd dispatches to the current context)."""

    def __init__(self, lib: str = "libGLESv2.so.2"):
        self.lib = ctypes.CDLL(lib)
        for name, (res, args) in PROTOS.items():
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = res, args
            setattr(self, name[2:], fn)

    # helpers -----------------------------------------------------------------------------
    def integer(self, pname: int) -> int:
        v = (i32 * 4)()
        self.GetIntegerv(pname, v)
        return int(v[0])

    def shader(self, kind: int, src: str) -> int:
        s = self.CreateShader(kind)
        b = src.encode()
        arr = (cp * 1)(b)
        ln = (i32 * 1)(len(b))
        self.ShaderSource(s, 1, arr, ln)
        self.CompileShader(s)
        ok = i32()
        self.GetShaderiv(s, GL["COMPILE_STATUS"], ctypes.byref(ok))
        if not ok.value:
            buf = ctypes.create_string_buffer(8192)
            self.GetShaderInfoLog(s, 8192, None, buf)
            raise RuntimeError("compile error: " + buf.value.decode(errors="replace").strip())
        return s

    def program(self, vs: str, fs: str) -> int:
        p = self.CreateProgram()
        a, b = self.shader(GL["VERTEX_SHADER"], vs), self.shader(GL["FRAGMENT_SHADER"], fs)
        self.AttachShader(p, a)
        self.AttachShader(p, b)
        self.LinkProgram(p)
        ok = i32()
        self.GetProgramiv(p, GL["LINK_STATUS"], ctypes.byref(ok))
        if not ok.value:
            buf = ctypes.create_string_buffer(8192)
            self.GetProgramInfoLog(p, 8192, None, buf)
            raise RuntimeError("link error: " + buf.value.decode(errors="replace").strip())
        self.DeleteShader(a)
        self.DeleteShader(b)
        return p

    def texture(self, w: int, h: int, data: np.ndarray | None = None) -> int:
        t = u32()
        self.GenTextures(1, ctypes.byref(t))
        self.BindTexture(GL["TEXTURE_2D"], t)
        self.TexStorage2D(GL["TEXTURE_2D"], 1, GL["RGBA32F"], w, h)
        for k in ("TEXTURE_MIN_FILTER", "TEXTURE_MAG_FILTER"):
            self.TexParameteri(GL["TEXTURE_2D"], GL[k], GL["NEAREST"])
        for k in ("TEXTURE_WRAP_S", "TEXTURE_WRAP_T"):
            self.TexParameteri(GL["TEXTURE_2D"], GL[k], GL["CLAMP_TO_EDGE"])
        if data is not None:
            d = np.ascontiguousarray(data, dtype=np.float32)
            self.PixelStorei(GL["UNPACK_ALIGNMENT"], 1)
            self.TexSubImage2D(GL["TEXTURE_2D"], 0, 0, 0, w, h, GL["RGBA"], GL["FLOAT"],
                               d.ctypes.data)
        return t.value

    def framebuffer(self, textures) -> int:
        f = u32()
        self.GenFramebuffers(1, ctypes.byref(f))
        self.BindFramebuffer(GL["FRAMEBUFFER"], f)
        for i, t in enumerate(textures):
            self.FramebufferTexture2D(GL["FRAMEBUFFER"], GL["COLOR_ATTACHMENT0"] + i,
                                      GL["TEXTURE_2D"], t, 0)
        bufs = (u32 * len(textures))(*[GL["COLOR_ATTACHMENT0"] + i
                                       for i in range(len(textures))])
        self.DrawBuffers(len(textures), bufs)
        st = self.CheckFramebufferStatus(GL["FRAMEBUFFER"])
        if st != GL["FRAMEBUFFER_COMPLETE"]:
            raise RuntimeError(f"framebuffer incomplete: 0x{st:x}")
        return f.value

    def read(self, fbo: int, attachment: int, w: int, h: int, out: np.ndarray) -> np.ndarray:
        self.BindFramebuffer(GL["READ_FRAMEBUFFER"], fbo)
        self.ReadBuffer(GL["COLOR_ATTACHMENT0"] + attachment)
        self.PixelStorei(GL["PACK_ALIGNMENT"], 1)
        self.ReadPixels(0, 0, w, h, GL["RGBA"], GL["FLOAT"], out.ctypes.data)
        return out

    def vao(self) -> int:
        v = u32()
        self.GenVertexArrays(1, ctypes.byref(v))
        return v.value


def context_info(gl: CtGL) -> dict:
    s = lambda e: (gl.GetString(e) or b"").decode()  # noqa: E731
    n = gl.integer(GL["NUM_EXTENSIONS"])
    exts = {(gl.GetStringi(GL["EXTENSIONS"], i) or b"").decode() for i in range(n)}
    limits = {}
    for k, e in LIMITS.items():
        gl.GetError()
        v = gl.integer(e)
        limits[k] = v if gl.GetError() == 0 else None
    prec = {}
    for name, e in (("highp float", GL["HIGH_FLOAT"]), ("highp int", GL["HIGH_INT"])):
        rng, p = (i32 * 2)(), i32()
        gl.GetShaderPrecisionFormat(GL["FRAGMENT_SHADER"], e, rng, ctypes.byref(p))
        prec[name] = (rng[0], rng[1], p.value)
    return {"vendor": s(GL["VENDOR"]), "renderer": s(GL["RENDERER"]),
            "version": s(GL["VERSION"]), "glsl": s(GL["SHADING_LANGUAGE_VERSION"]),
            "n_extensions": n, "extensions": {e: e in exts for e in ES_EXTS},
            "limits": limits, "fragment_precision": prec}


# ---------------------------------------------------------------------------------------------
# Shaders: the library's saxpy kernel (desktop final source and its GLSL ES export)

ROWS, COLS = 64, 256          # 64 x 64 texels, RGBA32F: the pass target
TEX_W = COLS // 4
READ_W = 256                  # 256 x 256 RGBA32F = 1 MiB readback
ES_VS = """#version 300 es
void main() {
    vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
"""
MRT_FS = """#version 300 es
precision highp float;
layout(location = 0) out vec4 o0;
layout(location = 1) out vec4 o1;
layout(location = 2) out vec4 o2;
layout(location = 3) out vec4 o3;
uniform vec4 v;
void main() { o0 = v; o1 = v * 2.0; o2 = v * 3.0; o3 = v + gl_FragCoord.xyxy; }
"""


def sources(es_version: str = "300 es"):
    """(desktop vs, desktop fs, es vs, es fs, es exported text) of engine/saxpy."""
    from shadergpgpu.engine import export
    from shadergpgpu.engine.programs import shaders_root
    k = export.library_kernels()["engine/saxpy"]
    desk = export.final_source(k, export._library())
    es = export.to_es(desk, es_version)
    exported = export.export("engine/saxpy", "webgl2")
    dvs = (shaders_root() / "common" / "fullscreen.vert").read_text()
    vs = ES_VS.replace("300 es", es_version)
    return dvs, desk, vs, es, exported


def inputs():
    rng = np.random.default_rng(42)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    y = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    return x, y, np.float32(2.5)


def check_saxpy(got: np.ndarray, x, y, alpha) -> dict:
    want = alpha * x.astype(np.float64) + y
    got = got.reshape(ROWS, COLS)
    err = float(np.max(np.abs(got - want)))
    return {"saxpy_max_abs_err": err, "saxpy_ok": bool(err <= 1e-5 * (1 + np.abs(want).max()))}


def timed(fn, repeat: int) -> float:
    fn()  # warm
    return min(fn() for _ in range(repeat))


def emit(rec: dict):
    print("REC " + json.dumps(rec), flush=True)


# ---------------------------------------------------------------------------------------------
# moderngl on ES: a loader that gives moderngl only ES entry points

#: desktop-only GL functions moderngl 5.13 calls on paths the engine uses, found on this ES
#: context by logging every non-ES entry point moderngl loads: glPrimitiveRestartIndex (context
#: creation), glClampColor (every Framebuffer.read / read_into), glClearDepth
#: (Framebuffer.clear), glGetTexImage (Texture.read / read_into: no ES equivalent, reads must go
#: through a framebuffer)
DESKTOP_ONLY_CALLED = ("glPrimitiveRestartIndex", "glClampColor", "glClearDepth",
                       "glGetTexImage")


class EsLoader:
    """A moderngl loader for the current ES context: ``eglGetProcAddress`` for the names
    libGLESv2 exports (the ES 3.2 API); for every other name (desktop-only):

    * ``mode="fill"`` (the one to use): the driver's pointer where it gives one, else a no-op
      stub that records the call;
    * ``mode="noop"``: always the stub (breaks NVIDIA: see below);
    * ``mode="null"``: a null pointer (what a vendor ES driver without glvnd may return).

    On NVIDIA's ES 3.2 context a stubbed glPrimitiveRestartIndex leaves moderngl's
    glEnable(GL_PRIMITIVE_RESTART) with restart index 0, and every glDrawArrays then drops
    vertex 0: nothing is drawn (seen on the H200, 2026-11-28). Mesa rejects the enable in ES
    (GL_INVALID_ENUM), so llvmpipe draws either way."""

    def __init__(self, mode: str = "fill"):
        egl = ctypes.CDLL("libEGL.so.1")
        self._gp = egl.eglGetProcAddress
        self._gp.restype, self._gp.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
        self._es = ctypes.CDLL("libGLESv2.so.2")
        self.mode = mode
        self.non_es, self.called, self._keep = [], [], []

    def load_opengl_function(self, name):
        if hasattr(self._es, name):
            return self._gp(name.encode()) or 0
        self.non_es.append(name)
        if self.mode == "null":
            return 0
        if self.mode == "fill":
            addr = self._gp(name.encode())
            if addr:
                return addr

        def stub(name=name):
            self.called.append(name)

        cb = ctypes.CFUNCTYPE(None)(stub)
        self._keep.append(cb)
        return ctypes.cast(cb, ctypes.c_void_p).value

    def __enter__(self):
        pass

    def __exit__(self, *args):
        pass

    def release(self):
        pass


def moderngl_with_loader(moderngl, loader):
    """``moderngl.init_context(loader)`` without the global default context."""
    from collections import deque
    ctx = moderngl.Context.__new__(moderngl.Context)
    ctx.mglo, ctx.version_code = moderngl.mgl.create_context(context=loader)
    ctx._info = ctx._extensions = ctx.extra = ctx._gc_mode = None
    ctx._objects = deque()
    ctx._screen = ctx.detect_framebuffer(0)
    ctx.fbo = ctx.detect_framebuffer()
    ctx.mglo.fbo = ctx.fbo.mglo
    return ctx


# ---------------------------------------------------------------------------------------------
# Children


def child_ctypes(args, es_version):
    egl, dpy, ctx, einfo = egl_es_context(3, 0)
    gl = CtGL()
    info = context_info(gl)
    emit({"step": "context", **einfo, **info})
    _, _, vs, fs, exported = sources(es_version)
    x, y, alpha = inputs()
    # the exported text as written (header comments before #version)
    try:
        gl.program(ES_VS, exported)
        emit({"step": "exported text (comments before #version) compiles", "ok": True})
    except Exception as e:  # noqa: BLE001
        emit({"step": "exported text (comments before #version) compiles", "ok": False,
              "error": str(e)[:300]})
    prog = gl.program(vs, fs)
    emit({"step": "program (saxpy GLSL ES " + es_version + ")", "ok": True})
    tx = gl.texture(TEX_W, ROWS, x)
    ty = gl.texture(TEX_W, ROWS, y)
    tout = gl.texture(TEX_W, ROWS)
    fbo = gl.framebuffer([tout])
    emit({"step": "RGBA32F framebuffer complete", "ok": True})
    vao = gl.vao()
    gl.UseProgram(prog)
    loc = {n: gl.GetUniformLocation(prog, n.encode())
           for n in ("sg_X", "sg_Y", "sg_X_shape", "sg_Y_shape", "sg_OUT_shape", "alpha")}
    gl.Uniform1i(loc["sg_X"], 0)
    gl.Uniform1i(loc["sg_Y"], 1)
    for n in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape"):
        if loc[n] >= 0:
            gl.Uniform4i(loc[n], ROWS, COLS, TEX_W, TEX_W)
    T2D, T0, FB = GL["TEXTURE_2D"], GL["TEXTURE0"], GL["DRAW_FRAMEBUFFER"]

    def one(v):
        gl.UseProgram(prog)
        gl.Uniform1f(loc["alpha"], v)
        gl.ActiveTexture(T0)
        gl.BindTexture(T2D, tx)
        gl.ActiveTexture(T0 + 1)
        gl.BindTexture(T2D, ty)
        gl.BindFramebuffer(FB, fbo)
        gl.Viewport(0, 0, TEX_W, ROWS)
        gl.BindVertexArray(vao)
        gl.DrawArrays(4, 0, 3)

    one(float(alpha))
    out = np.empty((ROWS, TEX_W, 4), np.float32)
    gl.read(fbo, 0, TEX_W, ROWS, out)
    emit({"step": "saxpy vs numpy", **check_saxpy(out, x, y, alpha),
          "gl_error": gl.GetError()})
    # bind calls resolved once into locals: the fastest a ctypes layer gets
    use, u1f, act, bt, bfb, vpt, bva, draw = (gl.UseProgram, gl.Uniform1f, gl.ActiveTexture,
                                              gl.BindTexture, gl.BindFramebuffer, gl.Viewport,
                                              gl.BindVertexArray, gl.DrawArrays)
    aloc, n = loc["alpha"], args.passes
    vals = [float(i % 7) for i in range(n)]

    def make_run(tx, ty, fbo, w, h):
        def run():
            gl.Finish()
            t0 = time.perf_counter()
            for v in vals:
                use(prog)
                u1f(aloc, v)
                act(T0)
                bt(T2D, tx)
                act(T0 + 1)
                bt(T2D, ty)
                bfb(FB, fbo)
                vpt(0, 0, w, h)
                bva(vao)
                draw(4, 0, 3)
            gl.Finish()
            return (time.perf_counter() - t0) / n
        return run

    def run_method():  # through a method per pass, as an engine object would
        gl.Finish()
        t0 = time.perf_counter()
        for v in vals:
            one(v)
        gl.Finish()
        return (time.perf_counter() - t0) / n

    emit({"step": "per pass", "us": timed(make_run(tx, ty, fbo, TEX_W, ROWS), args.repeat) * 1e6,
          "us_method": timed(run_method, args.repeat) * 1e6})
    one1 = np.ones((1, 1, 4), np.float32)
    t1x, t1y, t1o = gl.texture(1, 1, one1), gl.texture(1, 1, one1), gl.texture(1, 1)
    f1 = gl.framebuffer([t1o])
    gl.UseProgram(prog)
    for nm in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape"):
        if loc[nm] >= 0:
            gl.Uniform4i(loc[nm], 1, 4, 1, 1)
    def cached_run():  # binds skipped when already in place (a state cache): uniform + draw
        gl.Finish()
        use(prog)
        act(T0)
        bt(T2D, t1x)
        act(T0 + 1)
        bt(T2D, t1y)
        bfb(FB, f1)
        vpt(0, 0, 1, 1)
        bva(vao)
        t0 = time.perf_counter()
        for v in vals:
            u1f(aloc, v)
            draw(4, 0, 3)
        gl.Finish()
        return (time.perf_counter() - t0) / n

    emit({"step": "per pass 1x1", "us": timed(make_run(t1x, t1y, f1, 1, 1), args.repeat) * 1e6,
          "us_state_cache": timed(cached_run, args.repeat) * 1e6})
    o1 = gl.read(f1, 0, 1, 1, np.empty((1, 1, 4), np.float32))
    emit({"step": "1x1 result", "ok": o1.ravel().tolist() == [vals[-1] + 1] * 4})
    big = gl.texture(READ_W, READ_W, np.ones((READ_W, READ_W, 4), np.float32))
    bfbo = gl.framebuffer([big])
    buf = np.empty((READ_W, READ_W, 4), np.float32)

    def rb():
        t0 = time.perf_counter()
        for _ in range(10):
            gl.read(bfbo, 0, READ_W, READ_W, buf)
        return (time.perf_counter() - t0) / 10

    emit({"step": "readback 1 MiB", "ms": timed(rb, args.repeat) * 1e3,
          "ok": bool((buf == 1).all())})
    # multiple render targets, 4 attachments
    mp = gl.program(ES_VS, MRT_FS)
    ts = [gl.texture(8, 8) for _ in range(4)]
    mf = gl.framebuffer(ts)
    gl.UseProgram(mp)
    gl.Uniform4f(gl.GetUniformLocation(mp, b"v"), 1.0, 2.0, 3.0, 4.0)
    gl.BindFramebuffer(FB, mf)
    gl.Viewport(0, 0, 8, 8)
    gl.DrawArrays(4, 0, 3)
    o = np.empty((8, 8, 4), np.float32)
    res = [gl.read(mf, i, 8, 8, o.copy())[3, 5].tolist() for i in range(4)]
    emit({"step": "4 color attachments", "ok": res[:3] == [[1, 2, 3, 4], [2, 4, 6, 8],
                                                            [3, 6, 9, 12]]
          and res[3] == [6.5, 5.5, 8.5, 7.5], "texel(3,5)": res})
    # float blending (additive, as the accumulate passes use)
    gl.Enable(GL["BLEND"])
    gl.BlendFunc(GL["ONE"], GL["ONE"])
    gl.BlendEquation(GL["FUNC_ADD"])
    gl.GetError()
    gl.BindFramebuffer(FB, mf)
    gl.UseProgram(mp)
    gl.DrawArrays(4, 0, 3)
    e = gl.GetError()
    gl.Disable(GL["BLEND"])
    got = gl.read(mf, 0, 8, 8, o.copy())[3, 5].tolist()
    emit({"step": "float additive blend", "ok": got == [2, 4, 6, 8], "texel": got,
          "gl_error": e, "EXT_float_blend": info["extensions"]["GL_EXT_float_blend"]})
    # uniform block (the sgemm / backprop "ubo" kernels)
    ub_fs = ("#version 300 es\nprecision highp float;\nlayout(std140) uniform B { vec4 w[4]; };"
             "\nout vec4 o;\nvoid main() { o = w[1] + w[3]; }\n")
    up = gl.program(ES_VS, ub_fs)
    b = u32()
    gl.GenBuffers(1, ctypes.byref(b))
    gl.BindBuffer(GL["UNIFORM_BUFFER"], b)
    data = np.arange(16, dtype=np.float32)
    gl.BufferData(GL["UNIFORM_BUFFER"], data.nbytes, data.ctypes.data, GL["STATIC_DRAW"])
    gl.UniformBlockBinding(up, gl.GetUniformBlockIndex(up, b"B"), 0)
    gl.BindBufferRange(GL["UNIFORM_BUFFER"], 0, b, 0, data.nbytes)
    gl.UseProgram(up)
    gl.BindFramebuffer(FB, fbo)
    gl.Viewport(0, 0, TEX_W, ROWS)
    gl.DrawArrays(4, 0, 3)
    got = gl.read(fbo, 0, TEX_W, ROWS, out)[0, 0].tolist()
    emit({"step": "uniform block", "ok": got == [16, 18, 20, 22], "texel": got,
          "gl_error": gl.GetError()})


def _moderngl_pass(ctx, prog, tx, ty, fbo, vao, args, moderngl):
    u = prog["alpha"]
    n = args.passes
    vals = [float(i % 7) for i in range(n)]

    def run():
        ctx.finish()
        t0 = time.perf_counter()
        for v in vals:
            u.value = v
            tx.use(0)
            ty.use(1)
            fbo.use()
            vao.render(moderngl.TRIANGLES, vertices=3)
        ctx.finish()
        return (time.perf_counter() - t0) / n

    return run


def _moderngl_common(ctx, moderngl, args, vs, fs, label):
    x, y, alpha = inputs()
    prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
    emit({"step": f"program ({label})", "ok": True})
    tx = ctx.texture((TEX_W, ROWS), 4, x.tobytes(), dtype="f4")
    ty = ctx.texture((TEX_W, ROWS), 4, y.tobytes(), dtype="f4")
    tout = ctx.texture((TEX_W, ROWS), 4, dtype="f4")
    for t in (tx, ty, tout):
        t.filter = moderngl.NEAREST, moderngl.NEAREST
    fbo = ctx.framebuffer(color_attachments=[tout])
    emit({"step": "RGBA32F framebuffer", "ok": True})
    vao = ctx.vertex_array(prog, [])
    prog["sg_X"].value, prog["sg_Y"].value = 0, 1
    for n in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape"):
        if n in prog:
            prog[n].value = (ROWS, COLS, TEX_W, TEX_W)
    prog["alpha"].value = float(alpha)
    tx.use(0)
    ty.use(1)
    fbo.use()
    vao.render(moderngl.TRIANGLES, vertices=3)
    got = np.frombuffer(fbo.read(components=4, dtype="f4"), np.float32)
    emit({"step": "saxpy vs numpy (fbo.read)", **check_saxpy(got, x, y, alpha)})
    emit({"step": "per pass", "us": timed(_moderngl_pass(ctx, prog, tx, ty, fbo, vao, args,
                                                          moderngl), args.repeat) * 1e6})
    one1 = np.ones((1, 1, 4), np.float32).tobytes()
    t1x, t1y = (ctx.texture((1, 1), 4, one1, dtype="f4") for _ in range(2))
    t1o = ctx.texture((1, 1), 4, dtype="f4")
    f1 = ctx.framebuffer(color_attachments=[t1o])
    for nm in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape"):
        if nm in prog:
            prog[nm].value = (1, 4, 1, 1)
    emit({"step": "per pass 1x1", "us": timed(_moderngl_pass(ctx, prog, t1x, t1y, f1, vao, args,
                                                              moderngl), args.repeat) * 1e6})
    got1 = np.frombuffer(f1.read(components=4, dtype="f4"), np.float32).tolist()
    emit({"step": "1x1 result", "ok": got1 == [float((args.passes - 1) % 7) + 1] * 4})
    for nm in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape"):
        if nm in prog:
            prog[nm].value = (ROWS, COLS, TEX_W, TEX_W)
    big = ctx.texture((READ_W, READ_W), 4, np.ones((READ_W, READ_W, 4), np.float32).tobytes(),
                      dtype="f4")
    bfbo = ctx.framebuffer(color_attachments=[big])
    buf = bytearray(READ_W * READ_W * 16)

    def rb():
        t0 = time.perf_counter()
        for _ in range(10):
            bfbo.read_into(buf, components=4, dtype="f4")
        return (time.perf_counter() - t0) / 10

    emit({"step": "readback 1 MiB (fbo.read_into)", "ms": timed(rb, args.repeat) * 1e3,
          "ok": bool((np.frombuffer(buf, np.float32) == 1).all())})
    return prog, tx, ty, tout, fbo, vao, big


def child_desktop(args):
    import moderngl
    ctx = moderngl.create_context(standalone=True, backend="egl", require=330)
    emit({"step": "context", "version": ctx.info["GL_VERSION"],
          "renderer": ctx.info["GL_RENDERER"], "version_code": ctx.version_code})
    dvs, desk, *_ = sources()
    _moderngl_common(ctx, moderngl, args, dvs, desk, "saxpy GLSL 330 core")


def child_moderngl_es(args, es_version):
    egl, dpy, ectx, einfo = egl_es_context(3, 0)
    emit({"step": "ES context (ctypes EGL)", **einfo})
    import moderngl
    label = "moderngl.create_context(require=300, backend='egl', libgl='libGLESv2.so.2')"
    try:
        moderngl.create_context(require=300, backend="egl", libgl="libGLESv2.so.2",
                                libegl="libEGL.so.1")
        emit({"step": label, "ok": True})
    except Exception as e:  # noqa: BLE001
        emit({"step": label, "ok": False, "error": f"{type(e).__name__}: {e}"})
    loader = None
    if args.child == "moderngl-es":
        label = ("moderngl.create_context(require=300) (DefaultLoader: eglGetProcAddress, "
                 "current ctx)")
        try:
            ctx = moderngl.create_context(require=300)
        except Exception as e:  # noqa: BLE001
            emit({"step": label, "ok": False, "error": f"{type(e).__name__}: {e}"})
            return
    else:
        mode = {"moderngl-es-null": "null", "moderngl-es-stubs": "noop"}.get(args.child, "fill")
        label = f"moderngl context through EsLoader(mode={mode!r})"
        loader = EsLoader(mode)
        ctx = moderngl_with_loader(moderngl, loader)
        emit({"step": "EsLoader: non-ES names moderngl loads", "count": len(loader.non_es)})
        if mode == "null":
            emit({"step": "fbo.read with null desktop-only entry points attempted (a crash "
                          "here: moderngl calls glClampColor through a null pointer)"})
    emit({"step": label, "ok": True, "version_code": ctx.version_code,
          "version": ctx.info.get("GL_VERSION"), "gl_error_after_init": ctx.error})
    def clear():
        for _ in range(8):
            if ctx.error == "GL_NO_ERROR":
                break

    _, _, vs, fs, _ = sources(es_version)
    clear()
    prog, tx, ty, tout, fbo, vao, big = _moderngl_common(ctx, moderngl, args, vs, fs,
                                                         f"saxpy GLSL ES {es_version}")
    emit({"step": "GL error after program/texture/framebuffer/render/fbo.read/read_into",
          "gl_error": ctx.error})
    clear()
    # several color attachments
    ts = [ctx.texture((8, 8), 4, dtype="f4") for _ in range(4)]
    mf = ctx.framebuffer(color_attachments=ts)
    mp = ctx.program(vertex_shader=ES_VS, fragment_shader=MRT_FS)
    mp["v"].value = (1.0, 2.0, 3.0, 4.0)
    mvao = ctx.vertex_array(mp, [])
    mf.use()
    mvao.render(moderngl.TRIANGLES, vertices=3)
    res = [np.frombuffer(mf.read(components=4, dtype="f4", attachment=i),
                         np.float32).reshape(8, 8, 4)[3, 5].tolist() for i in range(4)]
    emit({"step": "4 color attachments (fbo.read attachment=i)",
          "ok": res[3] == [6.5, 5.5, 8.5, 7.5] and res[0] == [1, 2, 3, 4], "texel(3,5)": res,
          "gl_error": ctx.error})
    clear()
    try:
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = moderngl.ONE, moderngl.ONE
        mvao.render(moderngl.TRIANGLES, vertices=3)
        ctx.disable(moderngl.BLEND)
        got = np.frombuffer(mf.read(components=4, dtype="f4"), np.float32).reshape(8, 8, 4)
        emit({"step": "float additive blend", "ok": got[3, 5].tolist() == [2, 4, 6, 8],
              "texel": got[3, 5].tolist(), "gl_error": ctx.error})
    except Exception as e:  # noqa: BLE001
        emit({"step": "float additive blend", "ok": False, "error": str(e)})
    clear()
    try:
        ub_fs = ("#version 300 es\nprecision highp float;\nlayout(std140) uniform B "
                 "{ vec4 w[4]; };\nout vec4 o;\nvoid main() { o = w[1] + w[3]; }\n")
        up = ctx.program(vertex_shader=ES_VS, fragment_shader=ub_fs)
        b = ctx.buffer(np.arange(16, dtype=np.float32).tobytes())
        up["B"].binding = 0
        b.bind_to_uniform_block(0)
        uv = ctx.vertex_array(up, [])
        fbo.use()
        uv.render(moderngl.TRIANGLES, vertices=3)
        got = np.frombuffer(fbo.read(components=4, dtype="f4"), np.float32)[:4].tolist()
        emit({"step": "uniform block (ctx.buffer, bind_to_uniform_block)",
              "ok": got == [16, 18, 20, 22], "texel": got, "gl_error": ctx.error})
    except Exception as e:  # noqa: BLE001
        emit({"step": "uniform block", "ok": False, "error": f"{type(e).__name__}: {e}"})
    clear()
    try:
        data = np.full((ROWS, TEX_W, 4), 3.0, np.float32)
        tout.write(data.tobytes())
        emit({"step": "texture.write", "ok": True, "gl_error": ctx.error})
    except Exception as e:  # noqa: BLE001
        emit({"step": "texture.write", "ok": False, "error": f"{type(e).__name__}: {e}"})
    clear()
    try:
        pbo = ctx.buffer(reserve=READ_W * READ_W * 16)
        ctx.finish()
        big_fbo = ctx.framebuffer(color_attachments=[big])
        big_fbo.read_into(pbo, components=4, dtype="f4")
        ok = bool((np.frombuffer(pbo.read(), np.float32) == 1).all())
        emit({"step": "fbo.read_into(buffer) + buffer.read (pixel pack buffer, map)",
              "ok": ok, "gl_error": ctx.error})
    except Exception as e:  # noqa: BLE001
        emit({"step": "fbo.read_into(buffer)", "ok": False, "error": f"{type(e).__name__}: {e}"})
    clear()
    try:
        q = ctx.query(time=True)
        with q:
            vao.render(moderngl.TRIANGLES, vertices=3)
        emit({"step": "ctx.query(time=True)", "ok": True, "elapsed": q.elapsed,
              "gl_error": ctx.error})
    except Exception as e:  # noqa: BLE001
        emit({"step": "ctx.query(time=True)", "ok": False, "error": f"{type(e).__name__}: {e}"})
    try:
        eb = ctx.error
        emit({"step": "ctx.error before texture.read", "error": eb})
        # moderngl's texture.read is glGetTexImage, absent from ES: last (may crash the child)
        emit({"step": "texture.read (glGetTexImage) attempted"})
        data = tx.read()
        x, _, _ = inputs()
        got = np.frombuffer(data, np.float32).reshape(ROWS, COLS)
        emit({"step": "texture.read (glGetTexImage)", "ok": bool(np.array_equal(got, x)),
              "gl_error": ctx.error})
    except Exception as e:  # noqa: BLE001
        emit({"step": "texture.read (glGetTexImage)", "ok": False,
              "error": f"{type(e).__name__}: {e}"})
    if loader is not None:
        emit({"step": "desktop-only entry points moderngl called through a stub",
              "names": sorted(set(loader.called))})


def child_pyopengl(args, es_version, checking: bool):
    os.environ["PYOPENGL_PLATFORM"] = "egl"
    try:
        import OpenGL
    except ImportError as e:
        emit({"step": "import OpenGL", "ok": False, "error": str(e)})
        return
    OpenGL.ERROR_CHECKING = checking
    egl, dpy, ectx, einfo = egl_es_context(3, 0)
    emit({"step": "ES context (ctypes EGL)", **einfo, "pyopengl": OpenGL.__version__})
    try:
        from OpenGL import GLES3 as G
    except Exception as e:  # noqa: BLE001
        emit({"step": "from OpenGL import GLES3", "ok": False,
              "error": f"{type(e).__name__}: {e}"})
        return
    emit({"step": "from OpenGL import GLES3", "ok": True,
          "version": ctypes.cast(G.glGetString(G.GL_VERSION), ctypes.c_char_p).value.decode()})
    _, _, vs, fs, _ = sources(es_version)
    x, y, alpha = inputs()

    def shader(kind, src):
        s = G.glCreateShader(kind)
        G.glShaderSource(s, src)
        G.glCompileShader(s)
        if not G.glGetShaderiv(s, G.GL_COMPILE_STATUS):
            raise RuntimeError(G.glGetShaderInfoLog(s))
        return s

    prog = G.glCreateProgram()
    G.glAttachShader(prog, shader(G.GL_VERTEX_SHADER, vs))
    G.glAttachShader(prog, shader(G.GL_FRAGMENT_SHADER, fs))
    G.glLinkProgram(prog)
    emit({"step": "program", "ok": bool(G.glGetProgramiv(prog, G.GL_LINK_STATUS))})

    def texture(w, h, data=None):
        t = G.glGenTextures(1)
        G.glBindTexture(G.GL_TEXTURE_2D, t)
        G.glTexStorage2D(G.GL_TEXTURE_2D, 1, G.GL_RGBA32F, w, h)
        G.glTexParameteri(G.GL_TEXTURE_2D, G.GL_TEXTURE_MIN_FILTER, G.GL_NEAREST)
        G.glTexParameteri(G.GL_TEXTURE_2D, G.GL_TEXTURE_MAG_FILTER, G.GL_NEAREST)
        if data is not None:
            G.glTexSubImage2D(G.GL_TEXTURE_2D, 0, 0, 0, w, h, G.GL_RGBA, G.GL_FLOAT,
                              np.ascontiguousarray(data, np.float32))
        return t

    tx, ty, tout = texture(TEX_W, ROWS, x), texture(TEX_W, ROWS, y), texture(TEX_W, ROWS)
    fbo = G.glGenFramebuffers(1)
    G.glBindFramebuffer(G.GL_FRAMEBUFFER, fbo)
    G.glFramebufferTexture2D(G.GL_FRAMEBUFFER, G.GL_COLOR_ATTACHMENT0, G.GL_TEXTURE_2D, tout, 0)
    emit({"step": "RGBA32F framebuffer", "ok": G.glCheckFramebufferStatus(G.GL_FRAMEBUFFER)
          == G.GL_FRAMEBUFFER_COMPLETE})
    vao = G.glGenVertexArrays(1)
    G.glUseProgram(prog)
    G.glUniform1i(G.glGetUniformLocation(prog, "sg_X"), 0)
    G.glUniform1i(G.glGetUniformLocation(prog, "sg_Y"), 1)
    for n in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape"):
        G.glUniform4i(G.glGetUniformLocation(prog, n), ROWS, COLS, TEX_W, TEX_W)
    aloc = G.glGetUniformLocation(prog, "alpha")
    T2D, T0, FB = G.GL_TEXTURE_2D, G.GL_TEXTURE0, G.GL_DRAW_FRAMEBUFFER
    use, u1f, act, bt, bfb, vpt, bva, draw = (G.glUseProgram, G.glUniform1f, G.glActiveTexture,
                                              G.glBindTexture, G.glBindFramebuffer,
                                              G.glViewport, G.glBindVertexArray,
                                              G.glDrawArrays)

    TRI = G.GL_TRIANGLES

    def make_run(tx, ty, fbo, w, h, vals):
        def run():
            G.glFinish()
            t0 = time.perf_counter()
            for v in vals:
                use(prog)
                u1f(aloc, v)
                act(T0)
                bt(T2D, tx)
                act(T0 + 1)
                bt(T2D, ty)
                bfb(FB, fbo)
                vpt(0, 0, w, h)
                bva(vao)
                draw(TRI, 0, 3)
            G.glFinish()
            return (time.perf_counter() - t0) / len(vals)
        return run

    make_run(tx, ty, fbo, TEX_W, ROWS, [float(alpha)])()
    G.glBindFramebuffer(G.GL_READ_FRAMEBUFFER, fbo)
    G.glPixelStorei(G.GL_PACK_ALIGNMENT, 1)
    out = np.empty((ROWS, TEX_W, 4), np.float32)
    G.glReadPixels(0, 0, TEX_W, ROWS, G.GL_RGBA, G.GL_FLOAT, out)
    emit({"step": "saxpy vs numpy (glReadPixels into numpy)", **check_saxpy(out, x, y, alpha)})
    n = args.passes
    vals = [float(i % 7) for i in range(n)]
    emit({"step": "per pass", "us": timed(make_run(tx, ty, fbo, TEX_W, ROWS, vals),
                                          args.repeat) * 1e6})
    one1 = np.ones((1, 1, 4), np.float32)
    t1x, t1y, t1o = texture(1, 1, one1), texture(1, 1, one1), texture(1, 1)
    f1 = G.glGenFramebuffers(1)
    G.glBindFramebuffer(G.GL_FRAMEBUFFER, f1)
    G.glFramebufferTexture2D(G.GL_FRAMEBUFFER, G.GL_COLOR_ATTACHMENT0, G.GL_TEXTURE_2D, t1o, 0)
    G.glUseProgram(prog)
    for nm in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape"):
        G.glUniform4i(G.glGetUniformLocation(prog, nm), 1, 4, 1, 1)
    emit({"step": "per pass 1x1", "us": timed(make_run(t1x, t1y, f1, 1, 1, vals),
                                              args.repeat) * 1e6})
    big = texture(READ_W, READ_W, np.ones((READ_W, READ_W, 4), np.float32))
    bfbo = G.glGenFramebuffers(1)
    G.glBindFramebuffer(G.GL_FRAMEBUFFER, bfbo)
    G.glFramebufferTexture2D(G.GL_FRAMEBUFFER, G.GL_COLOR_ATTACHMENT0, G.GL_TEXTURE_2D, big, 0)
    buf = np.empty((READ_W, READ_W, 4), np.float32)

    def rb():
        t0 = time.perf_counter()
        for _ in range(10):
            G.glBindFramebuffer(G.GL_READ_FRAMEBUFFER, bfbo)
            G.glReadPixels(0, 0, READ_W, READ_W, G.GL_RGBA, G.GL_FLOAT, buf)
        return (time.perf_counter() - t0) / 10

    emit({"step": "readback 1 MiB (glReadPixels into numpy)", "ms": timed(rb, args.repeat) * 1e3,
          "ok": bool((buf == 1).all())})


def child_interleaved(args):
    """Every binding in one process, timed in alternation (fair under a varying load): the
    desktop moderngl context and the ES context live side by side; each round makes one
    current, times its passes, and moves on."""
    os.environ["PYOPENGL_PLATFORM"] = "egl"
    import moderngl
    dvs, desk, vs, fs, _ = sources()
    x, y, alpha = inputs()
    one1 = np.ones((1, 1, 4), np.float32)
    n = args.passes
    vals = [float(i % 7) for i in range(n)]
    timers = {}

    # desktop: the library's backend
    dctx = moderngl.create_context(standalone=True, backend="egl", require=330)

    def mgl_setup(ctx, vsrc, fsrc):
        prog = ctx.program(vertex_shader=vsrc, fragment_shader=fsrc)
        vao = ctx.vertex_array(prog, [])
        prog["sg_X"].value, prog["sg_Y"].value = 0, 1
        big = [ctx.texture((TEX_W, ROWS), 4, a.tobytes(), dtype="f4") for a in (x, y)]
        bo = ctx.texture((TEX_W, ROWS), 4, dtype="f4")
        small = [ctx.texture((1, 1), 4, one1.tobytes(), dtype="f4") for _ in range(2)]
        so = ctx.texture((1, 1), 4, dtype="f4")
        bf, sf = ctx.framebuffer(color_attachments=[bo]), ctx.framebuffer(color_attachments=[so])
        u = prog["alpha"]
        shapes = [prog[nm] for nm in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape") if nm in prog]

        def make(tx, ty, fbo, shape):
            def run():
                for sh in shapes:
                    sh.value = shape
                ctx.finish()
                t0 = time.perf_counter()
                for v in vals:
                    u.value = v
                    tx.use(0)
                    ty.use(1)
                    fbo.use()
                    vao.render(moderngl.TRIANGLES, vertices=3)
                ctx.finish()
                return (time.perf_counter() - t0) / n
            return run
        buf = bytearray(READ_W * READ_W * 16)
        rt = ctx.texture((READ_W, READ_W), 4, np.ones(READ_W * READ_W * 4, np.float32).tobytes(),
                         dtype="f4")
        rf = ctx.framebuffer(color_attachments=[rt])

        def rb():
            t0 = time.perf_counter()
            for _ in range(10):
                rf.read_into(buf, components=4, dtype="f4")
            return (time.perf_counter() - t0) / 10
        return (make(*big, bf, (ROWS, COLS, TEX_W, TEX_W)), make(*small, sf, (1, 4, 1, 1)), rb)

    timers["desktop"] = mgl_setup(dctx, dvs, desk)
    switch = {"desktop": dctx.mglo.__enter__}

    # ES context, shared by the ES bindings
    egl, dpy, ectx, _ = egl_es_context(3, 0)

    def es_current():
        egl.eglMakeCurrent(dpy, None, None, ectx)

    mctx = moderngl_with_loader(moderngl, EsLoader("fill"))
    timers["moderngl-es"] = mgl_setup(mctx, vs, fs)

    gl = CtGL()
    prog = gl.program(vs, fs)
    vao = gl.vao()
    gl.UseProgram(prog)
    loc = {nm: gl.GetUniformLocation(prog, nm.encode())
           for nm in ("sg_X", "sg_Y", "sg_X_shape", "sg_Y_shape", "sg_OUT_shape", "alpha")}
    gl.Uniform1i(loc["sg_X"], 0)
    gl.Uniform1i(loc["sg_Y"], 1)
    T2D, T0, FB = GL["TEXTURE_2D"], GL["TEXTURE0"], GL["DRAW_FRAMEBUFFER"]
    use, u1f, u4i, act, bt, bfb, vpt, bva, draw = (
        gl.UseProgram, gl.Uniform1f, gl.Uniform4i, gl.ActiveTexture, gl.BindTexture,
        gl.BindFramebuffer, gl.Viewport, gl.BindVertexArray, gl.DrawArrays)
    aloc = loc["alpha"]
    shape_locs = [loc[nm] for nm in ("sg_X_shape", "sg_Y_shape", "sg_OUT_shape")
                  if loc[nm] >= 0]

    def ct_make(tx, ty, fbo, w, h, shape, cached=False):
        def run():
            use(prog)
            for sl in shape_locs:
                u4i(sl, *shape)
            gl.Finish()
            if cached:
                act(T0)
                bt(T2D, tx)
                act(T0 + 1)
                bt(T2D, ty)
                bfb(FB, fbo)
                vpt(0, 0, w, h)
                bva(vao)
            t0 = time.perf_counter()
            if cached:
                for v in vals:
                    u1f(aloc, v)
                    draw(4, 0, 3)
            else:
                for v in vals:
                    use(prog)
                    u1f(aloc, v)
                    act(T0)
                    bt(T2D, tx)
                    act(T0 + 1)
                    bt(T2D, ty)
                    bfb(FB, fbo)
                    vpt(0, 0, w, h)
                    bva(vao)
                    draw(4, 0, 3)
            gl.Finish()
            return (time.perf_counter() - t0) / n
        return run

    btx, bty = gl.texture(TEX_W, ROWS, x), gl.texture(TEX_W, ROWS, y)
    bfo = gl.framebuffer([gl.texture(TEX_W, ROWS)])
    stx, sty = gl.texture(1, 1, one1), gl.texture(1, 1, one1)
    sfo = gl.framebuffer([gl.texture(1, 1)])
    rfo = gl.framebuffer([gl.texture(READ_W, READ_W, np.ones((READ_W, READ_W, 4), np.float32))])
    rbuf = np.empty((READ_W, READ_W, 4), np.float32)

    def ct_rb():
        t0 = time.perf_counter()
        for _ in range(10):
            gl.read(rfo, 0, READ_W, READ_W, rbuf)
        return (time.perf_counter() - t0) / 10

    big_shape, small_shape = (ROWS, COLS, TEX_W, TEX_W), (1, 4, 1, 1)
    timers["ctypes-es"] = (ct_make(btx, bty, bfo, TEX_W, ROWS, big_shape),
                           ct_make(stx, sty, sfo, 1, 1, small_shape), ct_rb)
    timers["ctypes-es (state cache)"] = (
        ct_make(btx, bty, bfo, TEX_W, ROWS, big_shape, cached=True),
        ct_make(stx, sty, sfo, 1, 1, small_shape, cached=True), None)

    def drain():  # PyOpenGL checks glGetError after each call: a stale error would raise
        for _ in range(16):
            if gl.GetError() == 0:
                break

    drain()
    from OpenGL import GLES3 as G
    pprog = gl.program(vs, fs)  # same GL names work through PyOpenGL (one context)
    G.glUseProgram(pprog)
    G.glUniform1i(G.glGetUniformLocation(pprog, "sg_X"), 0)
    G.glUniform1i(G.glGetUniformLocation(pprog, "sg_Y"), 1)
    paloc = G.glGetUniformLocation(pprog, "alpha")
    pshape = [G.glGetUniformLocation(pprog, nm) for nm in ("sg_X_shape", "sg_Y_shape",
                                                             "sg_OUT_shape")]
    g = (G.glUseProgram, G.glUniform1f, G.glActiveTexture, G.glBindTexture,
         G.glBindFramebuffer, G.glViewport, G.glBindVertexArray, G.glDrawArrays)

    def py_make(tx, ty, fbo, w, h, shape):
        puse, pu1f, pact, pbt, pbfb, pvpt, pbva, pdraw = g
        TRI = G.GL_TRIANGLES

        def run():
            drain()
            G.glUseProgram(pprog)
            for sl in pshape:
                G.glUniform4i(sl, *shape)
            G.glFinish()
            t0 = time.perf_counter()
            for v in vals:
                puse(pprog)
                pu1f(paloc, v)
                pact(T0)
                pbt(T2D, tx)
                pact(T0 + 1)
                pbt(T2D, ty)
                pbfb(FB, fbo)
                pvpt(0, 0, w, h)
                pbva(vao)
                pdraw(TRI, 0, 3)
            G.glFinish()
            return (time.perf_counter() - t0) / n
        return run

    def py_rb():
        drain()
        t0 = time.perf_counter()
        for _ in range(10):
            G.glBindFramebuffer(G.GL_READ_FRAMEBUFFER, rfo)
            G.glReadPixels(0, 0, READ_W, READ_W, G.GL_RGBA, G.GL_FLOAT, rbuf)
        return (time.perf_counter() - t0) / 10

    timers["pyopengl-es"] = (py_make(btx, bty, bfo, TEX_W, ROWS, big_shape),
                             py_make(stx, sty, sfo, 1, 1, small_shape), py_rb)
    for k in timers:
        if k != "desktop":
            switch[k] = es_current

    best = {k: [float("inf")] * 3 for k in timers}
    names = list(timers)
    rounds = args.repeat * 3
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[:rnd % len(names)]
        for k in order:
            switch[k]()
            for i, fn in enumerate(timers[k]):
                if fn is not None:
                    if rnd == 0:
                        fn()  # warm
                    best[k][i] = min(best[k][i], fn())
    emit({"step": "interleaved", "rounds": rounds, "passes": n,
          "best": {k: {"us_64x64": v[0] * 1e6, "us_1x1": v[1] * 1e6,
                       "readback_ms": None if v[2] == float("inf") else v[2] * 1e3}
                   for k, v in best.items()}})


def child(args):
    es_version = args.es_version
    if args.child == "interleaved":
        child_interleaved(args)
    elif args.child == "ctypes-es":
        child_ctypes(args, es_version)
    elif args.child == "desktop":
        child_desktop(args)
    elif args.child in ("moderngl-es", "moderngl-es-loader", "moderngl-es-stubs",
                        "moderngl-es-null"):
        child_moderngl_es(args, es_version)
    elif args.child == "pyopengl-es":
        child_pyopengl(args, es_version, checking=True)
    elif args.child == "pyopengl-es-nocheck":
        child_pyopengl(args, es_version, checking=False)


# ---------------------------------------------------------------------------------------------
# Parent


def run_child(name, args, env_extra, es_version="300 es"):
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, __file__, "--child", name, "--passes", str(args.passes),
           "--repeat", str(args.repeat), "--es-version", es_version]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    recs = [json.loads(line[4:]) for line in p.stdout.splitlines() if line.startswith("REC ")]
    tail = (p.stderr.strip().splitlines() or [""])[-1]
    return {"binding": name, "rc": p.returncode, "records": recs,
            "stderr_tail": tail if p.returncode else "",
            "stderr": p.stderr[-2000:] if p.returncode else ""}


def rec(res, step_prefix):
    for r in res["records"]:
        if r.get("step", "").startswith(step_prefix):
            return r
    return {}


TIMED = ("per pass", "readback 1 MiB")


def merge(rounds: list) -> dict:
    """One result from the rounds of a child: the first round's records, each timed figure
    the best (lowest) over the rounds."""
    out = dict(rounds[0])
    out["records"] = [dict(r) for r in rounds[0]["records"]]
    for r in out["records"]:
        if r.get("step", "").startswith(TIMED):
            for other in rounds[1:]:
                o = next((x for x in other["records"] if x.get("step") == r["step"]), {})
                for k, v in o.items():
                    if isinstance(v, float) and k in r:
                        r[k] = min(r[k], v)
    out["rc_rounds"] = [x["rc"] for x in rounds]
    return out


def fmt(v, spec=".2f"):
    return "-" if v is None else format(v, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--passes", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3,
                    help="every child this many times, interleaved; figures: best of all")
    ap.add_argument("--child", default=None)
    ap.add_argument("--es-version", default="300 es")
    ap.add_argument("--json", default=None)
    ap.add_argument("--quiet", action="store_true", help="no step-by-step log")
    ap.add_argument("--only-driver", action="store_true",
                    help="skip the ES 3.0 runs (Mesa's overrides; no effect on other drivers)")
    args = ap.parse_args()
    if args.child:
        child(args)
        return 0

    # ES support at all? (in a child: this process stays free of any context)
    probe = run_child("ctypes-es", argparse.Namespace(passes=1, repeat=1), {})
    if not rec(probe, "context"):
        print("no OpenGL ES 3 context through EGL: "
              f"{probe['stderr_tail'] or 'the probe child made none'}")
        return 2

    runs = [("desktop", {}, "desktop GL 3.3 core", "300 es")]
    levels = [("ES 3.2 (driver)", {})] + ([] if args.only_driver else
                                          [("ES 3.0 (WebGL2 level)", ES30_ENV)])
    for label, env in levels:
        for b in ("ctypes-es", "moderngl-es", "moderngl-es-loader", "moderngl-es-stubs",
                  "pyopengl-es"):
            runs.append((b, env, label, "300 es"))
    runs.append(("ctypes-es", {}, "ES 3.2 (driver)", "310 es"))
    once = [("moderngl-es-null", {}, "ES 3.2 (driver)", "300 es"),
            ("pyopengl-es-nocheck", {}, "ES 3.2 (driver)", "300 es")]
    by_key = {}
    for rnd in range(args.rounds):
        for name, env, label, ver in runs + (once if rnd == 0 else []):
            r = run_child(name, args, env, ver)
            r["context"], r["es_version"] = label, ver
            by_key.setdefault((name, label, ver), []).append(r)
    results = [merge(v) for v in by_key.values()]
    inter = run_child("interleaved", args, {})
    inter30 = None if args.only_driver else run_child("interleaved", args, ES30_ENV)

    print(f"# ES binding probe, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    shown = set()
    for r in results:
        c = rec(r, "context")
        if c and r["binding"] == "ctypes-es" and r["context"] not in shown:
            shown.add(r["context"])
            print(f"\n## {r['context']}: {c['version']} | {c['glsl']} | {c['renderer']} "
                  f"(EGL {c['egl']} {c['egl_vendor']}, platform {c['platform']}, "
                  f"KHR_surfaceless_context: {c['egl_surfaceless']}, config: {c['config']})")
            print("extensions: " + ", ".join(f"{k[3:]}={'yes' if v else 'no'}"
                                             for k, v in c["extensions"].items()))
            print("limits: " + ", ".join(f"{k}={v}" for k, v in c["limits"].items()))
            print(f"fragment precision (range lo, hi, bits): {c['fragment_precision']}")
    for label, ir in (("ES 3.2", inter), ("ES 3.0 overrides", inter30)):
        if ir is None:
            continue
        iv = rec(ir, "interleaved")
        print(f"\n## Per-pass cost, every binding in one process, timed in alternation "
              f"({label}; rc {ir['rc']})\n")
        if not iv:
            print(f"(no figures: {ir['stderr_tail']})")
            continue
        print(f"saxpy kernel, {iv['passes']} passes + finish per timing, best of "
              f"{iv['rounds']} rounds; 'desktop' is moderngl on the desktop 3.3 core EGL "
              "context (the library's backend), the others share one ES context\n")
        print("| binding | 64x64 us/pass | x desktop | 1x1 us/pass | x desktop | "
              "readback 1 MiB ms |")
        print("| --- | --- | --- | --- | --- | --- |")
        d = iv["best"]["desktop"]
        for k, v in iv["best"].items():
            print(f"| {k} | {v['us_64x64']:.2f} | {v['us_64x64'] / d['us_64x64']:.2f} | "
                  f"{v['us_1x1']:.2f} | {v['us_1x1'] / d['us_1x1']:.2f} | "
                  f"{fmt(v['readback_ms'], '.3f')} |")
    dc = rec(results[0], "context")
    if dc:
        print(f"\ndesktop backend: {dc.get('version')} | {dc.get('renderer')}")
    desk = rec(results[0], "per pass").get("us")
    desk1 = rec(results[0], "per pass 1x1").get("us")
    print(f"\n## Each binding in a process of its own (per pass: the saxpy kernel, {args.passes} "
          f"passes + finish, best of {args.repeat} x {args.rounds} rounds; 64x64 and 1x1 "
          "RGBA32F targets)\n")
    print("| binding | context | GLSL | 64x64 us/pass | x desktop | 1x1 us/pass | x desktop | "
          "readback 1 MiB ms | saxpy vs numpy | rc |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        us = rec(r, "per pass").get("us")
        us1 = rec(r, "per pass 1x1").get("us")
        rbk = rec(r, "readback 1 MiB").get("ms")
        chk = rec(r, "saxpy vs numpy")
        chk_s = (f"{'ok' if chk['saxpy_ok'] else 'FAIL'} ({chk['saxpy_max_abs_err']:.1e})"
                 if chk else "-")
        glsl = "330 core" if r["binding"] == "desktop" else r["es_version"]
        print(f"| {r['binding']} | {r['context']} | {glsl} | {fmt(us)} | "
              f"{fmt(us / desk if us and desk else None)} | {fmt(us1)} | "
              f"{fmt(us1 / desk1 if us1 and desk1 else None)} | {fmt(rbk, '.3f')} | {chk_s} | "
              f"{','.join(str(x) for x in r['rc_rounds'])} |")
    for r in results:
        pp, p1 = rec(r, "per pass"), rec(r, "per pass 1x1")
        if "us_method" in pp:
            print(f"\n{r['binding']} on {r['context']} ({r['es_version']}): 64x64 through a "
                  f"method call per pass {pp['us_method']:.2f} us; 1x1 with a state cache "
                  f"(binds already in place skipped: uniform + draw) {p1['us_state_cache']:.2f} "
                  f"us ({p1['us_state_cache'] / desk1:.2f} x desktop)")
    if not args.quiet:
        print("\n## Steps\n")
        for r in results:
            glsl = "330 core" if r["binding"] == "desktop" else r["es_version"]
            print(f"### {r['binding']} on {r['context']} (GLSL {glsl}), "
                  f"rc={r['rc_rounds']}")
            for st in r["records"]:
                if st.get("step") == "context":
                    continue
                d = {k: v for k, v in st.items() if k != "step"}
                print(f"- {st['step']}" + (f": {json.dumps(d)}" if d else ""))
            if r["rc"]:
                print(f"- child exited with {r['rc']}"
                      + (f" (signal {-r['rc']})" if r["rc"] < 0 else "")
                      + (f": {r['stderr_tail']}" if r["stderr_tail"] else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"children": results, "interleaved": inter,
                                               "interleaved_es30": inter30}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
