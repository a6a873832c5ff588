"""The GLFW window backend and Viewer, under a virtual X server (skipped where none exists)."""
import os
import shutil
import subprocess
import sys
import time

import pytest

SCRIPT = r"""
import numpy as np, shadergpgpu as sg
from shadergpgpu.frontends.window import Viewer
dev = sg.Device(backend="glfw-visible")
assert dev.caps.rgba32f_renderable and dev.caps.float_blending
view = Viewer(dev, size=(64, 48))
img = np.zeros((6, 8, 3), np.float32); img[..., 0] = 1.0; img[:3, :, 2] = 1.0
a = dev.image(img)
for _ in range(2):
    assert view.show(a)
s = view.read_screen()
assert tuple(s[2, 2]) == (255, 0, 255), s[2, 2]      # top half: red + blue
assert tuple(s[-3, -3]) == (255, 0, 0), s[-3, -3]    # bottom half: red
# a kernel on the window's context gives numbers, not just pictures
x = dev.array(np.arange(6.0)); y = dev.empty_like(x)
dev.run("engine/saxpy.frag", y, inputs={"X": x, "Y": x}, uniforms={"alpha": 1.0})
assert np.array_equal(y.get(), 2 * np.arange(6.0, dtype=np.float32))
print("WINDOW OK")
"""


@pytest.fixture(scope="module")
def display():
    if os.environ.get("DISPLAY"):
        yield os.environ["DISPLAY"]
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        pytest.skip("no DISPLAY and no Xvfb (apt-get install xvfb)")
    disp = ":97"
    proc = subprocess.Popen([xvfb, disp, "-screen", "0", "640x480x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    if proc.poll() is not None:
        pytest.skip("Xvfb did not start")
    yield disp
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.window
def test_glfw_window_shows_and_computes(display):
    pytest.importorskip("glfw")
    env = dict(os.environ, DISPLAY=display)
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                       timeout=120)
    assert r.returncode == 0 and "WINDOW OK" in r.stdout, r.stdout + r.stderr
