"""sort / argsort against numpy exactly: ties, NaN, +-0, inf, layouts, wrapping, passes."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import shadergpgpu as sg
from shadergpgpu.analysis import plans
from shadergpgpu.ops import sort as sort_ops
from shadergpgpu.ops.tuning import SortTuning
from shadergpgpu.ops.sort import argsort, sort, sort_pairs, sort_passes

HYP = settings(max_examples=40, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])
SPECIAL = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40],
                   dtype=np.float32)
# ties, both NaNs, both zeros, infinities, subnormals of both signs and a few ordinary values
POOL = np.concatenate([SPECIAL, np.float32([1e-45, -1e-45, 2.5, -2.5]),
                       np.arange(-3, 3, dtype=np.float32)])


def _check(x, v, i, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    np.testing.assert_array_equal(v, np.sort(x, axis=axis))          # NaNs compare equal here
    np.testing.assert_array_equal(i, np.argsort(x, axis=axis, kind="stable"))
    assert i.dtype == np.int64


def _check_bits(x, v, i, axis=-1):
    """argsort equals numpy's stable one, and the values are the input's bits in that order
    (-0.0 stays -0.0, subnormals stay, NaN payloads stay)."""
    x = np.asarray(x, dtype=np.float32)
    _check(x, v, i, axis)
    flat = x.ravel() if axis is None else x
    want = np.take_along_axis(flat, np.argsort(x, axis=axis, kind="stable"), axis=-1)
    np.testing.assert_array_equal(np.asarray(v, np.float32).view(np.uint32), want.view(np.uint32))


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


def _passes_from_stages(length, g):
    """Passes of the folded network, counted from its compare-exchange stages: the stages of
    blocks 2, 4 and 8 make the first pass; in a level of larger blocks, the stages of texel
    stride 2**t (element stride 4 * 2**t) share a pass with those of the same t // g, and the
    two lane stages (strides 2 and 1) join the pass of t // g == 0."""
    passes = {"first"}
    for b in range(4, (length - 1).bit_length() + 1):        # blocks of 2**b columns
        for stride in (2 ** e for e in range(b)):
            t = (stride // 4).bit_length() - 1 if stride >= 4 else 0
            passes.add((b, t // g))
    return len(passes)


@pytest.mark.parametrize("length", [1, 2, 3, 8, 9, 16, 17, 32, 33, 300, 4097])
def test_passes_follow_the_plan(dev, length):
    x = dev.array(np.random.default_rng(length).standard_normal((2, length)))
    label = f"sort-{length}"
    with dev.phase(label):
        v, i = sort_pairs(x)
    assert dev.counter.passes[label] == plans.get_plan("ops/sort").total(length=length)
    assert sort_passes(length) == _passes_from_stages(length, sort_ops.FOLD_LOG2)
    _check(x.get(), v.get(), i.get().astype(np.int64))
    for a in (x, v, i):
        a.release()


@pytest.mark.parametrize("fold", [1, 2, 4, 5])
def test_fold_width_changes_only_the_passes(dev, fold):
    """Every group size gives the same exact result, in the passes its formula says; the
    group set for the calls in a ``with`` block leaves the next call's alone."""
    with dev.tuned(SortTuning(fold_log2=fold)):
        _fold_width(dev, fold)
    X = dev.array(np.arange(40.0)[::-1])
    with dev.phase(f"sort-after-fold{fold}"):
        for a in sort_pairs(X):
            a.release()
    assert dev.counter.passes[f"sort-after-fold{fold}"] == sort_passes(40) == \
        plans.get_plan("ops/sort").total(length=40)
    X.release()
    assert sort_passes(4096, fold=3) < sort_passes(4096, fold=1) < 78   # 78: a pass a stage
    with pytest.raises(ValueError, match="fold_log2"):
        sort_passes(10, fold=0)
    with pytest.raises(ValueError, match="SortTuning.fold_log2"):
        SortTuning(fold_log2=6)


def _fold_width(dev, fold):
    rng = np.random.default_rng(fold)
    for length in (5, 33, 129, 1000):
        x = rng.choice(POOL, (3, length))
        X = dev.array(x)
        label = f"sort-fold{fold}-{length}"
        with dev.phase(label):
            V, I = sort_pairs(X)
        assert dev.counter.passes[label] == sort_passes(length, fold=fold) == \
            _passes_from_stages(length, fold)
        _check_bits(x, V.get(), I.get().astype(np.int64))
        for a in (X, V, I):
            a.release()


@pytest.mark.parametrize("length", [1, 3, 4, 5, 31, 32, 33, 127, 128, 129, 4095, 4096, 4097])
def test_lengths_around_the_groups(dev, length):
    """Lengths around the first pass's group (8), the fold groups (32 elements with the default
    FOLD_LOG2 = 3) and the powers of two, with many ties, NaNs, signed zeros, infinities and
    subnormals, in several rows and flattened; values bit for bit."""
    rng = np.random.default_rng(length)
    x = rng.choice(POOL, (3, length))
    for axis in (-1, None):
        _check_bits(x, sort(x, axis=axis), argsort(x, axis=axis), axis)
        X = dev.array(x)
        V, I = sort_pairs(X, axis=axis)
        _check_bits(x, V.get(), I.get().astype(np.int64), axis)
        for a in (X, V, I):
            a.release()
    _check_bits(x[0], sort(x[0]), argsort(x[0]))                       # 1-D


@pytest.mark.parametrize("packed, order", [(False, "row"), (True, "col"), (False, "col")])
def test_folds_into_any_output_layout(dev, packed, order):
    """The last pass writes straight into the input's layout, texel by texel or lane by lane."""
    rng = np.random.default_rng(7)
    for length in (3, 9, 33, 300):
        x = rng.choice(POOL, (5, length))
        X = dev.array(x, packed=packed, order=order)
        V, I = sort_pairs(X)
        assert V.layout == X.layout and I.layout == X.layout
        _check_bits(x, V.get(), I.get().astype(np.int64))
        for a in (X, V, I):
            a.release()


def test_sequences_longer_than_a_texture_row(dev, small_dev):
    """A sequence longer than a texture row lies over several grid rows of the work arrays (a
    long 1-D one square-ish); with more of them than the texture is high, the work arrays wrap."""
    rng = np.random.default_rng(11)
    for d, shape, axis in ((small_dev, (5, 100), -1), (small_dev, (5, 40), None),
                           (small_dev, (1, 70), -1), (small_dev, (20, 12), -1),
                           (dev, (70_000,), -1)):
        x = rng.choice(POOL, shape)
        X = d.array(x)
        V, I = sort_pairs(X, axis=axis)
        _check_bits(x, V.get(), I.get().astype(np.int64), axis)
        for a in (X, V, I):
            a.release()


@pytest.mark.parametrize("profile", ["webgl2", "geforce-7800gtx"])
def test_profiles(profile):
    """Under the webgl2 profile (4 draw buffers, textures of 2048 texels: rows of 9000 take two
    grid rows of the work arrays) and the GeForce 7800 GTX one, the same exact results."""
    d = sg.Device(profile=profile)
    try:
        rng = np.random.default_rng(3)
        for shape, axis in (((4, 129), -1), ((2, 9000), -1), ((3, 700), None), ((20000,), -1)):
            x = rng.choice(POOL, shape)
            X = d.array(x)
            V, I = sort_pairs(X, axis=axis)
            _check_bits(x, V.get(), I.get().astype(np.int64), axis)
            _check_bits(x, sort(x, axis=axis, device=d), argsort(x, axis=axis, device=d), axis)
            for a in (X, V, I):
                a.release()
    finally:
        d.release()


def test_device_results_keep_layout(dev):
    X = dev.array(np.arange(10.0)[::-1].reshape(2, 5).copy(), packed=False, order="col")
    V = sort(X)
    assert isinstance(V, sg.DeviceArray) and V.layout == X.layout
    np.testing.assert_array_equal(V.get(), np.sort(X.get(), axis=-1))
    Ix = argsort(X)
    np.testing.assert_array_equal(Ix.get(), np.argsort(X.get(), axis=-1, kind="stable"))


def test_debug_mode():
    """Under the sanitizer: no read out of range, and no NaN in any pass's outputs (keys are
    never NaN bit patterns, padding included) from finite inputs (with an infinity in the
    input the sanitizer checks nothing)."""
    d = sg.Device(debug=True)
    try:
        rng = np.random.default_rng(5)
        for shape, axis in (((3, 5), -1), ((3, 33), -1), ((2, 300), None)):
            x = rng.choice(POOL[np.isfinite(POOL)], shape)
            X = d.array(x)
            V, I = sort_pairs(X, axis=axis)
            _check_bits(x, V.get(), I.get().astype(np.int64), axis)
    finally:
        d.release()


def test_loop_cap_does_not_apply():
    """The network has no data-dependent loop: even a tiny forced loop cap gives the result."""
    d = sg.Device(limits=sg.Limits(loop_cap=4))
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
