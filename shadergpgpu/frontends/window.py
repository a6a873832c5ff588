"""An optional window that shows device arrays as they change (GLFW; the ``window`` extra).

    dev = Device(backend="glfw-visible")
    view = Viewer(dev, title="training")
    while view.show(array, vmin=0.0, vmax=1.0):   # False once the window is closed
        ...

The array is turned into colours by a render pass (``shaders/engine/colormap.frag``: matrices
through a colour ramp, images as they are) and that image is drawn into the window. Nothing is
read back to the host.
"""
from __future__ import annotations

from ..engine.arrays import DeviceArray
from ..engine.errors import CapabilityError


class Viewer:
    def __init__(self, device, title: str | None = None, size: tuple[int, int] | None = None):
        if device.window is None:
            raise CapabilityError("Viewer needs a device with a window: "
                                  "Device(backend='glfw-visible')")
        import glfw

        self._glfw = glfw
        self.device = device
        self.window = device.window
        if title:
            glfw.set_window_title(self.window, title)
        if size:
            glfw.set_window_size(self.window, int(size[0]), int(size[1]))
        src = device.shaders.resolve("engine/present.frag").read_text()
        self._prog = device.ctx.program(vertex_shader=device.shaders.vertex_source,
                                        fragment_shader=src)
        self._vao = device.ctx.vertex_array(self._prog, [])
        self._img = None
        self.frames = 0

    @property
    def closed(self) -> bool:
        return bool(self._glfw.window_should_close(self.window))

    def show(self, arr: DeviceArray, vmin: float = 0.0, vmax: float = 1.0) -> bool:
        """Draw ``arr`` (2-D matrix or (H, W, C) image) and return False if the window closed."""
        glfw = self._glfw
        glfw.poll_events()
        if self.closed:
            return False
        dev = self.device
        dev.activate()
        if not isinstance(arr, DeviceArray):
            raise TypeError("Viewer.show takes a DeviceArray")
        if arr.ndim == 3:
            h, w, c = arr.shape
            defines = {"IMAGE": 1, "CHANNELS": c}
        else:
            h, w = arr.layout.rows, arr.layout.cols
            defines = {"IMAGE": 0, "CHANNELS": 1}
        if self._img is None or self._img.shape[:2] != (h, w):
            if self._img is not None:
                self._img.release()
            self._img = dev.empty_image((h, w, 4))
            self._img.texture.filter = (0x2600, 0x2600)
        with dev.phase("display"):
            dev.run("engine/colormap.frag", self._img, inputs={"X": arr},
                    uniforms={"vmin": float(vmin), "vmax": float(vmax)}, defines=defines)
        fw, fh = glfw.get_framebuffer_size(self.window)
        ctx = dev.ctx
        ctx.screen.use()
        ctx.viewport = (0, 0, fw, fh)
        if dev._blend is not None:
            ctx.disable(1)  # moderngl.BLEND
            dev._blend = None
        self._img.texture.use(0)
        self._prog["image"].value = 0
        self._prog["window_size"].value = (float(fw), float(fh))
        self._vao.render(4, vertices=3)
        glfw.swap_buffers(self.window)
        self.frames += 1
        return True

    def release(self) -> None:
        """Release the viewer's GL objects (the window closes with its device)."""
        if self._img is not None:
            self._img.release()
            self._img = None
        self._vao.release()
        self._prog.release()

    def wait_close(self, timeout: float | None = None) -> None:
        """Keep the window open until the user closes it (or ``timeout`` seconds pass)."""
        import time

        t0 = time.perf_counter()
        while not self.closed:
            self._glfw.wait_events_timeout(0.05)
            if timeout is not None and time.perf_counter() - t0 > timeout:
                break

    def read_screen(self):
        """The window's pixels as an (H, W, 3) uint8 array, top row first (for tests)."""
        import numpy as np

        fw, fh = self._glfw.get_framebuffer_size(self.window)
        data = self.device.ctx.screen.read(viewport=(0, 0, fw, fh), components=3)
        return np.frombuffer(data, dtype=np.uint8).reshape(fh, fw, 3)[::-1]
