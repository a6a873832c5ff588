"""Creating the OpenGL context and probing what it can do.

Backends (argument ``backend=`` or environment variable ``SHADERGPGPU_BACKEND``):

* ``egl`` (default): headless EGL through moderngl; Mesa llvmpipe on a machine without a GPU,
  the vendor driver where there is one. ``SHADERGPGPU_EGL_DEVICE`` (or ``device_index=``) picks
  the EGL device on machines with several GPUs.
* ``glfw``: a hidden GLFW window's context (needs the ``window`` extra and a display).
* ``glfw-visible``: the same with the window shown.
* ``standalone``: moderngl's platform default (GLX on Linux, WGL, CGL).

The library never falls back to 16-bit or 8-bit textures: if float32 RGBA rendering (or
additive blending into it) is missing, :func:`check` (called by every ``Device``) raises
:class:`CapabilityError`; so does :func:`create_gl` when no OpenGL 3.3 context can be made.
"""
from __future__ import annotations

import os
import sys
from dataclasses import asdict, dataclass

import numpy as np

from .errors import CapabilityError
from .programs import shaders_root

BACKENDS = ("egl", "glfw", "glfw-visible", "standalone")

INSTALL_HINT = (
    "shadergpgpu needs OpenGL 3.3 with float32 render targets. Headless, it uses EGL: on "
    "Debian/Ubuntu install the Mesa EGL driver with `apt-get install libegl1 libgl1-mesa-dri` "
    "(software rendering through llvmpipe works), or the GPU vendor's driver.")


@dataclass
class Capabilities:
    """What the context offers; all probed at start-up."""

    backend: str
    vendor: str
    renderer: str
    version: str
    gl_version_code: int
    max_texture_size: int
    max_draw_buffers: int
    max_color_attachments: int
    max_texture_image_units: int
    rgba32f_renderable: bool
    float_blending: bool
    float_precision_ok: bool
    timer_queries: bool
    #: "gl" (desktop OpenGL 3.3 core) or "gles" (a native OpenGL ES 3.0+ context, engine/gles.py)
    api: str = "gl"
    #: buffer textures (samplerBuffer): desktop 3.3 always; ES 3.2 or EXT_texture_buffer
    buffer_textures: bool = True

    def as_dict(self) -> dict:
        return asdict(self)

    def format(self) -> str:
        width = max(len(k) for k in self.as_dict())
        return "\n".join(f"{k:<{width}}  {v}" for k, v in self.as_dict().items())


def resolve_backend(backend: str | None) -> str:
    if backend is not None and not isinstance(backend, str):
        raise TypeError(f"backend must be a string naming the context ({', '.join(BACKENDS)}) "
                        f"or None, got {backend!r}; a GPU is chosen with device_index=")
    b = backend or os.environ.get("SHADERGPGPU_BACKEND") or "egl"
    b = b.strip().lower()
    if b not in BACKENDS:
        raise ValueError(f"unknown backend {b!r}; choose one of {', '.join(BACKENDS)}")
    return b


def _egl_context(moderngl, device_index):
    kwargs = {"standalone": True, "backend": "egl", "require": 330}
    if device_index is not None:
        kwargs["device_index"] = int(device_index)
    return moderngl.create_context(**kwargs)


#: the window a glfw backend opens; the Viewer that shows arrays sets its size and title
WINDOW_SIZE, WINDOW_TITLE = (512, 512), "shadergpgpu"


def _glfw_context(moderngl, visible: bool):
    try:
        import glfw
    except ImportError as e:  # pragma: no cover - depends on the extra
        raise CapabilityError("the glfw backend needs the 'window' extra: "
                              "pip install 'shadergpgpu[window]'") from e
    if not glfw.init():
        raise CapabilityError("GLFW could not initialise (no display? set DISPLAY or use the "
                              "default headless 'egl' backend)")
    glfw.window_hint(glfw.CONTEXT_VERSION_MAJOR, 3)
    glfw.window_hint(glfw.CONTEXT_VERSION_MINOR, 3)
    glfw.window_hint(glfw.OPENGL_PROFILE, glfw.OPENGL_CORE_PROFILE)
    glfw.window_hint(glfw.OPENGL_FORWARD_COMPAT, True)
    glfw.window_hint(glfw.VISIBLE, bool(visible))
    window = glfw.create_window(WINDOW_SIZE[0], WINDOW_SIZE[1], WINDOW_TITLE, None, None)
    if not window:
        glfw.terminate()
        raise CapabilityError("GLFW could not create an OpenGL 3.3 core window")
    glfw.make_context_current(window)
    return moderngl.create_context(require=330), window


def create_gl(backend: str | None = None, device_index: int | None = None,
              api: str | None = None):
    """Create the raw moderngl context for ``backend``; returns ``(ctx, backend, window)``.
    ``api="gles"`` (or ``SHADERGPGPU_API=gles``): a native OpenGL ES 3.0+ context through
    EGL (:mod:`.gles`; the egl backend only)."""
    from . import gles
    backend = resolve_backend(backend)
    if gles.resolve_api(api) == "gles" and (backend == "egl" or api is not None):
        if backend != "egl":   # (SHADERGPGPU_API=gles leaves the window backends desktop)
            raise ValueError(f"api='gles' runs on the headless egl backend only, not {backend!r}")
        import moderngl
        if device_index is None and os.environ.get("SHADERGPGPU_EGL_DEVICE"):
            device_index = int(os.environ["SHADERGPGPU_EGL_DEVICE"])
        ctx, _loader = gles.create_context(moderngl, device_index)
        return ctx, backend, None
    try:
        import moderngl
    except ImportError as e:  # pragma: no cover - moderngl is a dependency
        raise CapabilityError("moderngl is not installed: pip install moderngl") from e
    if device_index is None and os.environ.get("SHADERGPGPU_EGL_DEVICE"):
        device_index = int(os.environ["SHADERGPGPU_EGL_DEVICE"])
    window = None
    try:
        if backend == "egl":
            ctx = _egl_context(moderngl, device_index)
        elif backend == "standalone":
            ctx = moderngl.create_context(standalone=True, require=330)
        else:
            ctx, window = _glfw_context(moderngl, backend == "glfw-visible")
    except CapabilityError:
        raise
    except Exception as e:
        raise CapabilityError(f"could not create an OpenGL 3.3 context with backend "
                              f"{backend!r}: {e}. {INSTALL_HINT}") from e
    return ctx, backend, window


def probe(ctx, backend: str) -> Capabilities:
    """Probe float32 rendering, blending and limits of a moderngl context."""
    import moderngl

    info = ctx.info
    renderable = blending = precise = False
    timer = True

    common = shaders_root() / "common"
    vs, fs = (common / "fullscreen.vert").read_text(), (common / "probe.frag").read_text()
    es = None
    if getattr(ctx, "sg_loader", None) is not None:  # a native ES context (engine/gles.py)
        from . import gles
        es = ctx.sg_features
        gles.check_features(es, str(info.get("GL_RENDERER", "")))
        vs = gles.ES_VERTEX_SHADER
        fs = "\n".join(gles.es_header(fs, es["es_version"], False)) + \
            fs[len("#version 330 core"):]
        timer = es["timer_query"]
    prog = ctx.program(vertex_shader=vs, fragment_shader=fs)
    vao = ctx.vertex_array(prog, [])
    tex = fbo = None
    try:
        tex = ctx.texture((4, 4), 4, dtype="f4")
        fbo = ctx.framebuffer(color_attachments=[tex])
        renderable = True
    except Exception:
        renderable = False
    if renderable:
        # Values a 16-bit float cannot hold: above 65504 and with 24-bit mantissa detail.
        probe_vals = np.array([1.0e10, 3.14159274, -1.0e-7, 1.00000012], dtype=np.float32)
        fbo.use()
        ctx.viewport = (0, 0, 4, 4)
        ctx.disable(moderngl.BLEND)
        prog["v"].value = tuple(float(x) for x in probe_vals)
        vao.render(moderngl.TRIANGLES, vertices=3)
        got = np.frombuffer(fbo.read(components=4, dtype="f4"), dtype=np.float32)[:4]
        precise = bool(np.array_equal(got, probe_vals))
        ctx.enable(moderngl.BLEND)
        ctx.blend_func = moderngl.ONE, moderngl.ONE
        ctx.blend_equation = moderngl.FUNC_ADD
        prog["v"].value = (1.5, 70000.0, -2.0, 0.25)
        vao.render(moderngl.TRIANGLES, vertices=3)
        ctx.disable(moderngl.BLEND)
        got = np.frombuffer(fbo.read(components=4, dtype="f4"), dtype=np.float32)[:4]
        want = probe_vals + np.array([1.5, 70000.0, -2.0, 0.25], dtype=np.float32)
        blending = bool(np.allclose(got, want, rtol=1e-6, atol=0))
        if es is not None:   # the extension, not a draw that happened to blend
            blending = blending and es["float_blend"]
            ctx.clear_errors()
        try:
            if not timer:
                raise RuntimeError("no timer queries")
            q = ctx.query(time=True)
            with q:
                vao.render(moderngl.TRIANGLES, vertices=3)
            _ = q.elapsed
        except Exception:
            timer = False
        fbo.release()
        tex.release()
    vao.release()
    prog.release()
    return Capabilities(
        backend=backend,
        vendor=str(info.get("GL_VENDOR", "")),
        renderer=str(info.get("GL_RENDERER", "")),
        version=str(info.get("GL_VERSION", "")),
        gl_version_code=int(ctx.version_code),
        max_texture_size=int(info.get("GL_MAX_TEXTURE_SIZE", 0)),
        max_draw_buffers=int(info.get("GL_MAX_DRAW_BUFFERS", 0)),
        max_color_attachments=int(info.get("GL_MAX_COLOR_ATTACHMENTS", 0)),
        max_texture_image_units=int(info.get("GL_MAX_TEXTURE_IMAGE_UNITS", 0)),
        rgba32f_renderable=renderable,
        float_blending=blending,
        float_precision_ok=precise,
        timer_queries=timer,
        api="gl" if es is None else "gles",
        buffer_textures=True if es is None else es["texture_buffer"],
    )


def check(caps: Capabilities, need_blending: bool = True) -> None:
    """Raise :class:`CapabilityError` naming what is missing."""
    missing = []
    if caps.api == "gles":   # checked by gles.check_features; blending: ping-pong without it
        need_blending = False
    elif caps.gl_version_code < 330:
        missing.append(f"OpenGL 3.3 (this context offers {caps.version})")
    if not caps.rgba32f_renderable:
        missing.append("RGBA32F color-renderable textures")
    elif not caps.float_precision_ok:
        missing.append("full float32 precision in render targets (values came back rounded, "
                       "as from a 16-bit target; the library does not fall back to it)")
    if need_blending and caps.rgba32f_renderable and not caps.float_blending:
        missing.append("additive blending into float32 render targets")
    if caps.max_draw_buffers < 1:
        missing.append("draw buffers")
    if missing:
        raise CapabilityError(
            f"the OpenGL implementation '{caps.renderer}' ({caps.backend}) lacks: "
            + "; ".join(missing) + f". {INSTALL_HINT}")


#: Heap settings for a software renderer (bytes): glibc serves allocations up to this size
#: from its heap instead of fresh mmap'ed pages, and keeps this much freed memory instead of
#: returning it to the system. llvmpipe allocates its scene memory per draw; with glibc's
#: defaults (mmap above 128 KiB, threshold raised only after a large block was freed) every
#: draw of a small pass page-faults fresh memory, which costs several times the draw itself
#: (docs/performance.md). ``SHADERGPGPU_KEEP_MALLOC=1`` leaves the process's settings alone.
SOFTWARE_MMAP_THRESHOLD = 32 << 20
SOFTWARE_TRIM_THRESHOLD = 64 << 20
_MALLOC_TUNED = False


def tune_malloc_for_software() -> bool:
    """Apply the heap settings above (once per process, glibc only); returns whether they
    are in force."""
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return True
    if os.environ.get("SHADERGPGPU_KEEP_MALLOC") == "1" or not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3      # glibc's mallopt parameters
        ok = libc.mallopt(m_mmap_threshold, SOFTWARE_MMAP_THRESHOLD) == 1 and \
            libc.mallopt(m_trim_threshold, SOFTWARE_TRIM_THRESHOLD) == 1
    except (OSError, AttributeError):
        return False
    _MALLOC_TUNED = ok
    return ok
