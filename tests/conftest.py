"""Shared fixtures: one headless device per test session (llvmpipe in CI)."""
import numpy as np
import pytest

import shadergpgpu as sg


@pytest.fixture(scope="session")
def dev():
    d = sg.Device()
    yield d
    d.release()


@pytest.fixture(scope="session")
def small_dev():
    """A device whose texture size is capped at 16 so arrays wrap early."""
    d = sg.Device(limits=sg.Limits(max_texture_size=16))
    yield d
    d.release()


def _why(marker, default):
    return marker.args[0] if marker.args else default


@pytest.fixture(autouse=True)
def _device_capabilities(request):
    """Tests marked ``float_blend`` / ``buffer_textures`` follow the session device's real
    capabilities (an ES 3.0 context or WebGL2 has neither): skipped, with the reason, where the
    device lacks what their subject needs; ``desktop_gl``: skipped on the ES backend."""
    blend = request.node.get_closest_marker("float_blend")
    buf = request.node.get_closest_marker("buffer_textures")
    desk = request.node.get_closest_marker("desktop_gl")
    if not (blend or buf or desk):
        return
    d = request.getfixturevalue("dev")
    if desk and d.caps.api == "gles":
        pytest.skip(f"desktop OpenGL only (this device is {d.caps.version}): "
                    f"{_why(desk, 'the desktop binding')}")
    if blend and not d.float_blending:
        pytest.skip(f"needs float32 blending ({_why(blend, 'the subject')}), which this device "
                    f"({d.caps.version}) lacks (no EXT_float_blend): it accumulates by "
                    "ping-pong passes instead")
    if buf and not d.buffer_textures:
        pytest.skip(f"needs buffer textures ({_why(buf, 'the subject')}), which this device "
                    f"({d.caps.version}) lacks (samplerBuffer: ES 3.2 or EXT_texture_buffer)")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


#: the built-in profiles of legacy and mobile GPUs (every algorithm must adapt to each)
LEGACY_PROFILES = ("geforce-7800gtx", "webgl2", "mali-gles31", "raspberrypi4")


@pytest.fixture(scope="module", params=LEGACY_PROFILES)
def profile_dev(request):
    """A device behaving as each legacy/mobile profile in turn."""
    d = sg.Device(profile=request.param)
    yield d
    d.release()
