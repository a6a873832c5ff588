"""cumsum against numpy: axes, exclusive, layouts, wrapping, accuracy bound, passes, bad input."""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import shadergpgpu as sg
from shadergpgpu.analysis import plans
from shadergpgpu.ops.scan import cumsum, scan_passes

from tests.reference import assert_within

HYP = settings(max_examples=40, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])
U = 2.0 ** -24


def _ref(x, axis, exclusive):
    x = np.asarray(x, dtype=np.float32).astype(np.float64)
    y = np.cumsum(x, axis=axis)
    if exclusive:
        y = y - (x.ravel() if axis is None else x)
    return y


def _bound(x, axis, length):
    """P u sum|x| (P = ceil(log2 L)), with a little slack for the exclusive subtraction."""
    p = max(1, math.ceil(math.log2(max(length, 2))))
    a = np.abs(np.asarray(x, dtype=np.float32).astype(np.float64))
    return (p + 1) * U * np.cumsum(a, axis=axis) + 1e-30


@HYP
@given(rows=st.integers(1, 6), cols=st.integers(1, 40), packed=st.booleans(),
       order=st.sampled_from(["row", "col"]), axis=st.sampled_from([None, 0, 1, -1]),
       exclusive=st.booleans(), small=st.booleans(), one_d=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_random_against_numpy(dev, small_dev, rows, cols, packed, order, axis, exclusive,
                              small, one_d, seed):
    rng = np.random.default_rng(seed)
    shape = (cols,) if one_d else (rows, cols)
    if one_d and axis is not None:
        axis = -1 if axis == -1 else 0
    x = rng.standard_normal(shape)
    d = small_dev if small else dev
    X = d.array(x, packed=packed, order=order)
    Y = cumsum(X, axis=axis, exclusive=exclusive)
    y = Y.get()
    ref = _ref(x, axis, exclusive)
    length = x.size if axis is None else x.shape[axis]
    assert y.shape == ref.shape
    assert_within(y, ref, _bound(x, axis, length), what=(shape, axis, exclusive))
    X.release()
    Y.release()


def test_integer_sums_are_exact():
    rng = np.random.default_rng(1)
    x = rng.integers(-1000, 1000, (7, 301))
    np.testing.assert_array_equal(cumsum(x, axis=1), np.cumsum(x, axis=1))
    np.testing.assert_array_equal(cumsum(x, axis=0), np.cumsum(x, axis=0))
    np.testing.assert_array_equal(cumsum(x), np.cumsum(x))
    ex = cumsum(x, axis=1, exclusive=True)
    np.testing.assert_array_equal(ex, np.cumsum(x, axis=1) - x)
    v = np.ones(4097)
    np.testing.assert_array_equal(cumsum(v), np.arange(1, 4098))
    np.testing.assert_array_equal(cumsum(v, exclusive=True), np.arange(4097))


def test_long_vector_within_bound_and_close_to_numpy():
    rng = np.random.default_rng(2)
    x = rng.random(20_000).astype(np.float32)
    y = cumsum(x)
    ref = np.cumsum(x.astype(np.float64))
    assert_within(y, ref, _bound(x, None, x.size), what="cumsum of 20,000")
    # numpy's own float32 cumsum is within its sequential bound of the same reference
    npy = np.cumsum(x)
    assert_within(y, npy, _bound(x, None, x.size) +
                  np.arange(1, x.size + 1) * U * np.cumsum(x.astype(np.float64)),
                  what="against numpy's float32 cumsum")


@pytest.mark.parametrize("length", [1, 2, 3, 4, 5, 64, 65, 1000])
def test_passes_follow_the_plan(dev, length):
    x = dev.array(np.ones((2, length)))
    label = f"scan-{length}"
    with dev.phase(label):
        y = cumsum(x, axis=1)
    assert dev.counter.passes[label] == plans.get_plan("ops/scan").total(length=length)
    assert scan_passes(length) == max(1, math.ceil(math.log2(length)))
    np.testing.assert_array_equal(y.get(), np.cumsum(np.ones((2, length)), axis=1))
    x.release()
    y.release()


def test_host_and_device_results(dev):
    r = cumsum([1, 2, 3])
    assert isinstance(r, np.ndarray) and r.dtype == np.float32
    X = dev.array(np.ones((2, 3)), packed=False, order="col")
    Y = cumsum(X, axis=1)
    assert isinstance(Y, sg.DeviceArray) and Y.layout == X.layout
    Z = cumsum(X)
    assert Z.shape == (6,)


def test_bad_input(dev):
    with pytest.raises(TypeError, match="complex"):
        cumsum(np.ones(3, dtype=complex))
    with pytest.raises(ValueError, match="2\\*\\*24"):
        cumsum(np.array([2 ** 40]))
    with pytest.raises(ValueError, match="empty"):
        cumsum(np.ones((0, 3)))
    with pytest.raises(ValueError, match="out of range"):
        cumsum(np.ones((2, 3)), axis=2)
    with pytest.raises(TypeError, match="axis"):
        cumsum(np.ones(3), axis=1.5)
    with pytest.raises(TypeError, match="exclusive"):
        cumsum(np.ones(3), exclusive="yes")
    with pytest.raises(ValueError, match="1-D or 2-D"):
        cumsum(np.ones((2, 2, 2)))
    x = dev.array(np.ones(3))
    x.release()
    with pytest.raises(ValueError, match="released"):
        cumsum(x)
