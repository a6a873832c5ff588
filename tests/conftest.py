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
    d = sg.Device(max_texture_size=16)
    yield d
    d.release()


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
