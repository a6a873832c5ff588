"""sort / argsort against numpy exactly: ties, NaN, +-0, inf, layouts, wrapping, passes."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import shadergpgpu as sg
from shadergpgpu.engine import plans
from shadergpgpu.ops.sort import argsort, sort, sort_pairs, sort_passes

HYP = settings(max_examples=40, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])
SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40],
                   dtype=np.float32)


def _check(x, v, i, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    np.testing.assert_array_equal(v, np.sort(x, axis=axis))          # NaNs compare equal here
    np.testing.assert_array_equal(i, np.argsort(x, axis=axis, kind="stable"))
    assert i.dtype == np.int64


@HYP
@given(rows=st.integers(1, 5), cols=st.integers(1, 40), packed=st.booleans(),
       order=st.sampled_from(["row", "col"]), small=st.booleans(), one_d=st.booleans(),
       flat=st.booleans(), ties=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_random_against_numpy(dev, small_dev, rows, cols, packed, order, small, one_d, flat,
                              ties, seed):
    rng = np.random.default_rng(seed)
    shape = (cols,) if one_d else (rows, cols)
    if ties:   # few distinct values plus the special ones: many ties, NaNs, signed zeros
        x = rng.choice(np.concatenate([SPECIAL, np.arange(-3, 3, dtype=np.float32)]), shape)
    else:
        x = rng.standard_normal(shape).astype(np.float32)
    d = small_dev if small else dev
    X = d.array(x, packed=packed, order=order)
    axis = None if flat else -1
    V, I = sort_pairs(X, axis=axis)
    _check(x, V.get(), I.get().astype(np.int64), axis)
    for a in (X, V, I):
        a.release()


def test_host_api_and_special_values():
    x = np.array([3.0, np.nan, -1.0, 3.0, -0.0, 0.0, np.inf, -np.inf, np.nan, 3.0])
    _check(x, sort(x), argsort(x))
    assert np.isnan(sort(x)[-2:]).all()
    for n in (1, 2, 3, 7, 8, 9, 100, 1025):
        y = np.random.default_rng(n).integers(-4, 4, (3, n)).astype(np.float64)
        _check(y, sort(y), argsort(y))
        _check(y, sort(y, axis=None), argsort(y, axis=None), axis=None)


def test_all_nan_and_constant_rows():
    x = np.full((2, 13), np.nan)
    x[1] = 5.0
    _check(x, sort(x), argsort(x))


@pytest.mark.parametrize("length", [1, 2, 3, 16, 17, 300])
def test_passes_follow_the_plan(dev, length):
    x = dev.array(np.random.default_rng(length).standard_normal((2, length)))
    label = f"sort-{length}"
    with dev.phase(label):
        v, i = sort_pairs(x)
    assert dev.counter.passes[label] == plans.get_plan("ops/sort").total(length=length)
    m = (length - 1).bit_length()
    assert sort_passes(length) == max(1, m * (m + 1) // 2)
    _check(x.get(), v.get(), i.get().astype(np.int64))
    for a in (x, v, i):
        a.release()


def test_device_results_keep_layout(dev):
    X = dev.array(np.arange(10.0)[::-1].reshape(2, 5).copy(), packed=False, order="col")
    V = sort(X)
    assert isinstance(V, sg.DeviceArray) and V.layout == X.layout
    np.testing.assert_array_equal(V.get(), np.sort(X.get(), axis=-1))
    Ix = argsort(X)
    np.testing.assert_array_equal(Ix.get(), np.argsort(X.get(), axis=-1, kind="stable"))


def test_loop_cap_does_not_apply():
    """The network has no data-dependent loop: even a tiny forced loop cap gives the result."""
    d = sg.Device(loop_cap=4)
    try:
        x = np.random.default_rng(0).standard_normal((3, 50))
        X = d.array(x)
        V, I = sort_pairs(X)
        _check(x, V.get(), I.get().astype(np.int64))
    finally:
        d.release()


def test_bad_input(dev):
    with pytest.raises(TypeError, match="complex"):
        sort(np.ones(3, dtype=complex))
    with pytest.raises(ValueError, match="2\\*\\*24"):
        argsort(np.array([1, 2 ** 30]))
    with pytest.raises(ValueError, match="empty"):
        sort(np.ones((2, 0)))
    with pytest.raises(ValueError, match="last axis"):
        sort(np.ones((2, 3)), axis=0)
    with pytest.raises(ValueError, match="out of range"):
        sort(np.ones(3), axis=1)
    with pytest.raises(TypeError, match="axis"):
        sort(np.ones(3), axis="x")
    with pytest.raises(ValueError, match="1-D or 2-D"):
        sort(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="real numeric"):
        sort(np.array(["a", "b"]))
