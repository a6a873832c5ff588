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
