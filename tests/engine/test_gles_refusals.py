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
