"""What the ES backend refuses before any GL call, each with an error naming what is missing and
the remedy: an unknown API name, no EGL library, an EGL device index that does not exist, arguments of the
wrong type."""
from __future__ import annotations

import ctypes

import pytest

import shadergpgpu as sg
from shadergpgpu.engine import gles


def test_an_unknown_api_is_refused_by_name():
    with pytest.raises(ValueError, match=r"unknown api 'vulkan'.*'gl'.*'gles'"):
        sg.Device(api="vulkan")


def test_the_environment_names_the_api_too(monkeypatch):
    monkeypatch.setenv("SHADERGPGPU_API", "metal")
    with pytest.raises(ValueError, match=r"unknown api 'metal'"):
        sg.Device()


def test_no_egl_library_is_refused_with_the_remedy(monkeypatch):
    def no_library(name, *a, **k):
        raise OSError(f"{name}: cannot open shared object file")
    monkeypatch.setattr(gles._Egl, "_lib", None)
    monkeypatch.setattr(ctypes, "CDLL", no_library)
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    with pytest.raises(sg.CapabilityError, match=r"no EGL library.*apt-get install libegl1"):
        sg.Device(api="gles")


def test_a_missing_egl_device_is_refused_by_index():
    try:
        sg.Device(api="gles").release()
    except sg.CapabilityError as e:
        pytest.skip(f"no OpenGL ES context: {e}")
    with pytest.raises(sg.CapabilityError, match=r"EGL device 99 does not exist.*requested "
                                                  r"device index 99"):
        sg.Device(device_index=99, api="gles")


def test_a_device_index_in_the_backend_place_is_refused_by_name():
    with pytest.raises(TypeError, match=r"backend must be a string.*got 0.*device_index="):
        sg.Device(0)
    with pytest.raises(TypeError, match=r"api must be 'gl', 'gles' or None, got 3"):
        sg.Device(api=3)


def _features(**over):
    f = {"es_version": (3, 0), "color_buffer_float": True, "float_blend": False,
         "texture_buffer": False, "buffer_storage": False, "timer_query": False,
         "highp_float": (127, 127, 23)}
    f.update(over)
    return f


def test_an_es30_context_with_float_targets_and_highp_is_accepted():
    gles.check_features(_features(), "a WebGL2-level GPU")          # no error


@pytest.mark.parametrize("over, named", [
    ({"highp_float": (15, 15, 10)}, r"highp float of float32 precision.*10 bits of precision, "
                                    r"range 2\^15"),
    ({"es_version": (2, 0)}, r"OpenGL ES 3\.0 \(this context is ES 2\.0\)"),
    ({"color_buffer_float": False}, r"GL_EXT_color_buffer_float"),
])
def test_what_the_context_lacks_is_named(over, named):
    with pytest.raises(sg.CapabilityError, match=r"'a phone GPU' lacks: " + named):
        gles.check_features(_features(**over), "a phone GPU")
