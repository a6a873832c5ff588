"""An optional window that shows device arrays as they change (GLFW; the ``window`` extra).

    dev = Device(backend="glfw-visible")
    view = Viewer(dev, title="training")
    while view.show(array, vmin=0.0, vmax=1.0, title=f"step {i}"):   # False once closed
        ...

The array is turned into colours by a render pass (:data:`COLORMAP`: a matrix, or a flat run
of it, through a colour ramp; :data:`COLORMAP_IMAGE`: an (H, W, C) image as it is) and that
image is drawn into the window, optionally with marked points on top (``points=``). Nothing is
read back to the host.

``Viewer(dev, offscreen=True)`` draws into an offscreen framebuffer of ``size`` instead of a
window (any device, headless EGL included): the same drawing, read back by
:meth:`Viewer.read_screen` (tests, thumbnails).
"""
from __future__ import annotations

import moderngl
import numpy as np

from ..engine.arrays import DeviceArray
from ..engine.errors import CapabilityError
from ..engine.kernels import In, declare

COLORMAP = declare("engine/colormap.frag", inputs=("X",),
                   uniforms={"vmin": "float", "vmax": "float", "view_start": ("int", 0),
                             "view_cols": "int"},
                   name="engine/colormap")
COLORMAP_IMAGE = declare("engine/colormap_image.frag", inputs={"X": In(like="OUT")},
                         uniforms={"vmin": "float", "vmax": "float", "channels": ("int", 4)},
                         name="engine/colormap-image")

# Declarations of the present program (a plain GL program drawing to the window, not a kernel).
_PRESENT_DECLS = "#version 330 core\nuniform sampler2D image;\nuniform vec2 target_size;\n"

def _dialect(src: str, es: bool) -> str:
    """``src`` as GLSL ES 3.00 on an ES device (the version line and highp defaults)."""
    if not es:
        return src
    return src.replace("#version 330 core\n", "#version 300 es\nprecision highp float;\n"
                       "precision highp int;\n", 1)


_POINTS_VS = """#version 330 core
in vec2 pos;            // (column, row) in image pixels, row 0 at the top
in float val;
uniform vec2 image_size;
out float v_val;
void main() {
    vec2 uv = (pos + 0.5) / image_size;
    gl_Position = vec4(2.0 * uv.x - 1.0, 1.0 - 2.0 * uv.y, 0.0, 1.0);
    v_val = val;
}
"""
_POINTS_FS = """#version 330 core
in float v_val;
out vec4 color;
void main() {
    vec2 d = 2.0 * gl_PointCoord - 1.0;
    float r2 = dot(d, d);
    if (r2 > 1.0) discard;
    float fill = clamp(v_val, 0.0, 1.0);
    float ring = 1.0 - step(0.5, fill);           // a contrasting ring: white on dark, black on light
    color = vec4(vec3(r2 > 0.45 ? ring : fill), 1.0);
}
"""


class Viewer:
    """Shows device arrays in the device's window (or offscreen, ``offscreen=True``).

    Parameters
    ----------
    device : a Device made with ``backend="glfw"`` or ``"glfw-visible"`` (any device when
        ``offscreen``).
    title : window title.
    size : (width, height) of the window / offscreen target in pixels.
    offscreen : draw into an offscreen framebuffer instead of a window.
    """

    def __init__(self, device, title: str | None = None, size: tuple[int, int] | None = None,
                 offscreen: bool = False):
        self.device = device
        self.offscreen = bool(offscreen)
        self.window = None if offscreen else device.window
        self._glfw = None
        self._target = None
        if not offscreen:
            if device.window is None:
                raise CapabilityError("Viewer needs a device with a window: "
                                      "Device(backend='glfw-visible') (or Viewer(..., "
                                      "offscreen=True))")
            import glfw

            self._glfw = glfw
            if size:
                glfw.set_window_size(self.window, int(size[0]), int(size[1]))
        else:
            w, h = (int(v) for v in (size or (512, 512)))
            if w < 1 or h < 1:
                raise ValueError(f"size must be positive, got {size}")
            device.activate()
            self._target = device.ctx.framebuffer(
                color_attachments=[device.ctx.renderbuffer((w, h), 4)])
        self.title = None
        if title:
            self.set_title(title)
        device.activate()
        ctx = device.ctx
        body = device.shaders.resolve("engine/present.frag").read_text()
        es = device.shaders.es is not None   # an OpenGL ES context (engine/gles.py): GLSL ES
        self._prog = ctx.program(vertex_shader=device.shaders.vertex_source,
                                 fragment_shader=_dialect(_PRESENT_DECLS + body, es))
        self._vao = ctx.vertex_array(self._prog, [])
        self._pprog = ctx.program(vertex_shader=_dialect(_POINTS_VS, es),
                                  fragment_shader=_dialect(_POINTS_FS, es))
        self._pbuf = None
        self._pvao = None
        self._img = None
        self.frames = 0

    # ---- window state -----------------------------------------------------------------
    @property
    def closed(self) -> bool:
        if self.offscreen:
            return False
        return bool(self._glfw.window_should_close(self.window))

    def set_title(self, title: str) -> None:
        title = str(title)
        if title != self.title:
            self.title = title
            if self._glfw is not None:
                self._glfw.set_window_title(self.window, title)

    def _target_size(self) -> tuple[int, int]:
        if self.offscreen:
            return self._target.size
        return self._glfw.get_framebuffer_size(self.window)

    # ---- drawing ----------------------------------------------------------------------
    def show(self, arr: DeviceArray, vmin: float = 0.0, vmax: float = 1.0, *,
             title: str | None = None, shape: tuple[int, int] | None = None, start: int = 0,
             points=None, point_values=None, point_size: float | None = None) -> bool:
        """Draw ``arr`` and return False if the window has been closed.

        arr : a 2-D (or 1-D) DeviceArray, shown through a colour ramp (``vmin``..``vmax``), or
            an (H, W, C) image (``Device.image``), shown as it is.
        title : new window title (e.g. the step and loss of a training run).
        shape : (H, W): show elements ``start .. start + H*W`` of the array, in row-major flat
            order, as an H x W picture (default: the matrix as it is).
        points : (n, 2) array of (column, row) positions in image pixels (row 0 at the top,
            fractions allowed) marked on top of the picture, e.g. training points.
        point_values : n values in [0, 1]: each mark's fill (0 black, 1 white; default 1).
        """
        if not isinstance(arr, DeviceArray):
            raise TypeError(f"Viewer.show takes a DeviceArray, got {type(arr).__name__} "
                            "(upload with dev.array(x) or dev.image(x))")
        if title is not None:
            self.set_title(title)
        if not self.offscreen:
            self._glfw.poll_events()
            if self.closed:
                return False
        dev = self.device
        dev.activate()
        if arr.ndim == 3:
            if shape is not None:
                raise ValueError("shape= applies to matrices, not (H, W, C) images")
            h, w, c = arr.shape
        else:
            n = arr.layout.rows * arr.layout.cols
            h, w = (arr.layout.rows, arr.layout.cols) if shape is None else \
                (int(shape[0]), int(shape[1]))
            if h < 1 or w < 1 or start < 0 or start + h * w > n:
                raise ValueError(f"shape {shape} from element {start} does not fit in an "
                                 f"array of {n} elements")
        img = self._display_image(h, w)
        with dev.phase("display"):
            if arr.ndim == 3:
                COLORMAP_IMAGE(img, X=arr, vmin=float(vmin), vmax=float(vmax), channels=c)
            else:
                COLORMAP(img, X=arr, vmin=float(vmin), vmax=float(vmax), view_start=int(start),
                         view_cols=w)
        self._present(img, points, point_values, point_size)
        if not self.offscreen:
            self._glfw.swap_buffers(self.window)
        self.frames += 1
        return True

    def _display_image(self, h: int, w: int) -> DeviceArray:
        if self._img is None or self._img.shape[:2] != (h, w):
            if self._img is not None:
                self._img.release()
            self._img = self.device.empty_image((h, w, 4))
            self._img.texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
        return self._img

    def _present(self, img, points, point_values, point_size) -> None:
        dev = self.device
        ctx = dev.ctx
        fw, fh = self._target_size()
        # we draw with plain moderngl here: the device must forget its blend state
        dev.invalidate_state()
        if self.offscreen:
            self._target.use()
        else:
            ctx.screen.use()
        ctx.viewport = (0, 0, fw, fh)
        img.texture.use(0)
        self._prog["image"].value = 0
        self._prog["target_size"].value = (float(fw), float(fh))
        self._vao.render(moderngl.TRIANGLES, vertices=3)
        if points is not None:
            self._draw_points(points, point_values, point_size, img.shape[:2], (fw, fh))

    def _draw_points(self, points, values, size, image_hw, target) -> None:
        pts = np.asarray(points, dtype=np.float32)
        if pts.ndim != 2 or pts.shape[1] != 2:
            raise ValueError(f"points must be an (n, 2) array of (column, row), got shape "
                             f"{pts.shape}")
        if len(pts) == 0:
            return
        vals = np.ones(len(pts), np.float32) if values is None else \
            np.asarray(values, dtype=np.float32).reshape(-1)
        if len(vals) != len(pts):
            raise ValueError(f"{len(pts)} points but {len(vals)} point_values")
        data = np.column_stack([pts, vals]).astype(np.float32).tobytes()
        ctx = self.device.ctx
        if self._pbuf is None or self._pbuf.size != len(data):
            if self._pvao is not None:
                self._pvao.release()
                self._pbuf.release()
            self._pbuf = ctx.buffer(data)
            self._pvao = ctx.vertex_array(self._pprog, [(self._pbuf, "2f 1f", "pos", "val")])
        else:
            self._pbuf.write(data)
        h, w = image_hw
        self._pprog["image_size"].value = (float(w), float(h))
        ctx.point_size = float(size) if size else float(max(8, min(target) // 20))
        self._pvao.render(moderngl.POINTS, vertices=len(pts))

    def release(self) -> None:
        """Release the viewer's GL objects (the window closes with its device)."""
        if self._img is not None:
            self._img.release()
            self._img = None
        for obj in (self._pvao, self._pbuf, self._pprog, self._vao, self._prog):
            if obj is not None:
                obj.release()
        self._pvao = self._pbuf = None
        if self._target is not None:
            for rb in self._target.color_attachments:
                rb.release()
            self._target.release()
            self._target = None

    def wait_close(self, timeout: float | None = None) -> None:
        """Keep the window open until the user closes it (or ``timeout`` seconds pass)."""
        import time

        if self.offscreen:
            return
        t0 = time.perf_counter()
        while not self.closed:
            self._glfw.wait_events_timeout(0.05)
            if timeout is not None and time.perf_counter() - t0 > timeout:
                break

    def read_screen(self):
        """The window's (or offscreen target's) pixels as an (H, W, 3) uint8 array, top row
        first (for tests)."""
        fw, fh = self._target_size()
        self.device.activate()
        fb = self._target if self.offscreen else self.device.ctx.screen
        if self.device.shaders.es is not None:   # ES reads RGBA bytes only
            data = fb.read(viewport=(0, 0, fw, fh), components=4)
            return np.frombuffer(data, dtype=np.uint8).reshape(fh, fw, 4)[::-1, :, :3].copy()
        data = fb.read(viewport=(0, 0, fw, fh), components=3)
        return np.frombuffer(data, dtype=np.uint8).reshape(fh, fw, 3)[::-1]
