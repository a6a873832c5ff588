"""The Viewer: offscreen on the headless device (always), and the GLFW window backend under a
virtual X server (skipped where none exists)."""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from shadergpgpu.engine.errors import CapabilityError
from shadergpgpu.frontends.window import COLORMAP, COLORMAP_IMAGE, Viewer

from tests.reference import assert_close

SCRIPT = r"""
import numpy as np, shadergpgpu as sg
from shadergpgpu.frontends.window import Viewer
dev = sg.Device(backend="glfw-visible")
assert dev.caps.rgba32f_renderable and dev.caps.float_blending
view = Viewer(dev, size=(64, 48), title="start")
img = np.zeros((6, 8, 3), np.float32); img[..., 0] = 1.0; img[:3, :, 2] = 1.0
a = dev.image(img)
for _ in range(2):
    assert view.show(a, title="frame")
assert view.title == "frame"
s = view.read_screen()
assert tuple(s[2, 2]) == (255, 0, 255), s[2, 2]      # top half: red + blue
assert tuple(s[-3, -3]) == (255, 0, 0), s[-3, -3]    # bottom half: red
# a kernel on the window's context gives numbers, not just pictures
x = dev.array(np.arange(6.0)); y = dev.empty_like(x)
sg.builtin.SAXPY(y, X=x, Y=x, alpha=1.0)
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


# ---- offscreen: the same drawing on the headless device -----------------------------------

@pytest.fixture
def view(dev):
    v = Viewer(dev, size=(40, 30), offscreen=True, title="test")
    yield v
    v.release()


def test_image_is_shown_as_is(dev, view):
    img = np.zeros((6, 8, 3), np.float32)
    img[..., 0] = 1.0
    img[:3, :, 2] = 1.0
    a = dev.image(img)
    assert view.show(a)
    s = view.read_screen()
    assert s.shape == (30, 40, 3)
    assert tuple(s[2, 2]) == (255, 0, 255)       # top half: red + blue
    assert tuple(s[-3, -3]) == (255, 0, 0)       # bottom half: red
    a.release()


def test_gray_image_and_value_range(dev, view):
    a = dev.image(np.full((4, 4), 0.5, np.float32))
    view.show(a, vmin=0.0, vmax=2.0)            # 0.5 of 0..2 -> a quarter of full intensity
    s = view.read_screen().astype(int)
    assert_close(s, np.full(s.shape, 64), rtol=0, atol=1, what="a quarter of full intensity")
    a.release()


def test_matrix_through_the_ramp_and_a_flat_view(dev, view):
    # row 1 of a (2, 12) matrix shown as a 3 x 4 picture: left half low, right half high
    m = np.zeros((2, 12))
    m[1] = np.tile([0, 0, 1, 1], 3)
    a = dev.array(m)
    view.show(a, shape=(3, 4), start=12)
    s = view.read_screen().astype(int)
    lo, hi = s[15, 5], s[15, 35]                  # ramp(0) is dark violet, ramp(1) yellow-ish
    assert lo.sum() < 200 and hi.sum() > 400, (lo, hi)
    assert np.array_equal(s[2, 5], lo) and np.array_equal(s[-2, 35], hi)
    view.show(a)                                 # the whole matrix: row 0 all low
    s = view.read_screen().astype(int)
    assert np.array_equal(s[3, 38], lo)
    with pytest.raises(ValueError, match="does not fit"):
        view.show(a, shape=(3, 5), start=12)
    a.release()


@pytest.mark.desktop_gl("the Viewer's points need the point size, which ES sets only through gl_PointSize (issue 42 stage 2)")
def test_points_title_and_errors(dev, view):
    a = dev.array(np.zeros((8, 8)))
    view.show(a, title="step 5, loss 0.1", points=[[0, 0], [7, 7]], point_values=[0, 1],
              point_size=6)
    assert view.title == "step 5, loss 0.1"
    s = view.read_screen().astype(int)
    # a dark point (value 0) at the top-left pixel, a white one at the bottom-right pixel
    assert s[2, 2].sum() < 30, s[2, 2]
    assert tuple(s[-3, -3]) == (255, 255, 255), s[-3, -3]
    with pytest.raises(TypeError, match="DeviceArray"):
        view.show(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="point_values"):
        view.show(a, points=[[0, 0]], point_values=[0, 1])
    a.release()
    # colormap kernels are declared (typed uniforms, no uniform in the shader files)
    assert COLORMAP.uniforms["vmin"][0] == "float" and "channels" in COLORMAP_IMAGE.uniforms


def test_window_needs_a_windowed_device(dev):
    with pytest.raises(CapabilityError, match="glfw-visible"):
        Viewer(dev)


@pytest.mark.float_blend('blend=True after the viewer')
def test_viewer_leaves_blending_consistent(dev, view):
    # after the viewer drew with plain moderngl, an accumulating kernel still adds correctly
    import shadergpgpu as sg
    x = dev.array(np.arange(5.0))
    y = dev.zeros((5,))
    sg.builtin.SAXPY(y, X=x, Y=x, alpha=1.0)
    view.show(x)
    sg.builtin.SAXPY(y, X=x, Y=x, alpha=1.0, blend=True)
    assert_close(y.get(), 4 * np.arange(5.0), rtol=1e-5, atol=1e-8)   # np.allclose's bound
    x.release()
    y.release()
