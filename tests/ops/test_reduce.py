"""Sum, arg-min and arg-max reductions against float64 numpy.

Sums: float32 partial sums in a tree of fan-in runs; asserted within
|err| <= 1e-5 * sum(|x|) (relative to the sum of magnitudes, since the exact sum may be ~0).
Arg-reductions: exact, value and index (ties to the lowest index, as numpy; subnormals, +-0,
+-inf and NaN: tests/ops/test_ops_contracts.py).
"""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.analysis import plans
from shadergpgpu.ops import reduce as R
from shadergpgpu.ops.tuning import ReduceTuning

from tests.reference import assert_close


@pytest.fixture(scope="module")
def wrap_dev():
    """Textures capped at 64 texels a side: every array above 64 texels wraps."""
    d = sg.Device(limits=sg.Limits(max_texture_size=64))
    yield d

LAYOUTS = [
    ((1,), True, "row"),
    ((7,), True, "row"),
    ((1000,), True, "row"),
    ((3001,), False, "row"),
    ((37, 53), True, "col"),
    ((37, 53), False, "row"),
    ((19, 6), False, "col"),
    ((300, 7), True, "row"),
]


@pytest.mark.parametrize("shape,packed,order", LAYOUTS)
def test_total_any_layout_wrapped(wrap_dev, rng, shape, packed, order):
    # wrap_dev caps textures at 64 texels a side: arrays above 64 texels wrap
    x = rng.standard_normal(shape).astype(np.float32) + 0.25
    a = wrap_dev.array(x, packed=packed, order=order)
    ref = x.astype(np.float64).sum()
    got = R.total(wrap_dev, a)
    assert_close(got, ref, rtol=0, atol=1e-5 * np.abs(x).astype(np.float64).sum(),
                 what=(shape, packed, order))
    dres = R.total_device(wrap_dev, a)
    assert dres.shape == (1,)
    assert dres.get()[0] == np.float32(got)
    dres.release()


def test_total_padding_excluded_after_kernel_writes(dev):
    # a kernel writing every texel (padding lanes included) must not leak into the sum
    a = dev.empty((10,))
    dev.fill(a, 2.0)        # 3 texels, 12 lanes of 2.0; only 10 are logical
    assert R.total(dev, a) == 20.0


def test_total_large_and_numpy_input(dev, rng):
    x = rng.random(200_001)
    got = R.total(dev, x)
    assert_close(got, x.sum(), rtol=1e-5, atol=0)        # x.sum() > 0
    assert R.total(dev, np.ones((3, 5))) == 15.0


@pytest.mark.parametrize("fanin", [2, 3, 16, 64])
def test_total_fanin_and_pass_plan(dev, rng, fanin):
    n = 5000
    x = rng.standard_normal(n).astype(np.float32)
    a = dev.array(x)
    dev.counter.reset()
    with dev.phase("reduce"):
        got = R.total(dev, a, fanin=fanin)
    assert_close(got, x.astype(np.float64).sum(), rtol=0, atol=1e-5 * np.abs(x).sum(),
                 what=f"fanin {fanin}")
    exp = plans.get_plan("reduce/sum").expected(n=n, fanin=fanin)
    assert dev.counter.snapshot()["reduce"]["passes"] == exp["reduce"]
    assert exp["reduce"] == int(np.ceil(np.log(np.ceil(n / 4)) / np.log(fanin) - 1e-12))


@pytest.mark.parametrize("shape,packed,order", LAYOUTS)
def test_argmin_argmax_exact(wrap_dev, rng, shape, packed, order):
    x = rng.standard_normal(shape).astype(np.float32)
    a = wrap_dev.array(x, packed=packed, order=order)
    k = int(np.argmin(x))
    assert R.argmin(wrap_dev, a) == (float(x.flat[k]), k)
    k = int(np.argmax(x))
    assert R.argmax(wrap_dev, a) == (float(x.flat[k]), k)


@pytest.mark.parametrize("fanin", [2, 5, 16])
@pytest.mark.parametrize("strict", [True, False])
def test_ties_go_to_lowest_index(dev, rng, fanin, strict):
    # few distinct values: many ties, the winner must be numpy's first occurrence
    with dev.tuned(ReduceTuning(scan_strict=strict)):
        for n in (3, 64, 1001, 7777):
            x = rng.integers(-3, 4, size=n).astype(np.float32)
            assert R.argmin(dev, x, fanin=fanin) == (float(x.min()), int(np.argmin(x)))
            assert R.argmax(dev, x, fanin=fanin) == (float(x.max()), int(np.argmax(x)))
    z = np.zeros(999)
    assert R.argmax(dev, z) == (0.0, 0)


@pytest.mark.parametrize("layout_mask", [True, False])
def test_masked(wrap_dev, rng, layout_mask):
    x = rng.integers(-5, 5, size=(23, 31)).astype(np.float32)
    m = rng.random(x.shape) < 0.2
    a = wrap_dev.array(x, packed=True, order="col")
    if layout_mask:
        mask = m                                   # uploaded in a's layout
    else:
        mask = wrap_dev.array(m.astype(np.float32), packed=False, order="row")
    idx = np.flatnonzero(m.ravel())
    kmin = idx[np.argmin(x.ravel()[idx])]
    kmax = idx[np.argmax(x.ravel()[idx])]
    assert R.argmin(wrap_dev, a, mask=mask) == (float(x.flat[kmin]), int(kmin))
    assert R.argmax(wrap_dev, a, mask=mask) == (float(x.flat[kmax]), int(kmax))


def test_device_variant_and_empty_mask(dev):
    x = np.array([3.0, 1.0, 2.0, 1.0, 5.0])
    r = R.argmin_device(dev, x)
    assert r.shape == (2,) and list(r.get()) == [1.0, 1.0]
    r = R.argmax_device(dev, x, mask=np.zeros(5))
    v, i = r.get()
    assert v == -np.inf and i == R.MAX_INDEX
    with pytest.raises(ValueError, match="no element"):
        R.argmax(dev, x, mask=np.zeros(5))


def test_nan_wins_like_numpy(dev):
    # numpy.argmin / argmax return the first NaN (a NaN beats every value)
    v, i = R.argmin(dev, np.array([1.0, np.nan, -np.inf, np.nan]))
    assert np.isnan(v) and i == 1
    d = dev.array(np.array([1.0, -1.0, np.nan, np.inf]))
    v, i = R.argmax(dev, d)
    assert np.isnan(v) and i == 2
    d.release()


def test_errors(dev):
    with pytest.raises(ValueError, match="mask has shape"):
        R.argmin(dev, np.ones(4), mask=np.ones(5))
    with pytest.raises(ValueError, match="fanin"):
        R.total(dev, np.ones(4), fanin=1)
    with pytest.raises(TypeError, match="arr"):
        R.total(dev, np.array(["a", "b"]))
    with pytest.raises(ValueError, match="arr"):
        R.total(dev, np.ones((2, 2, 2)))
    big = dev.empty((2 ** 12, 2 ** 12))
    with pytest.raises(ValueError, match="2\\*\\*24"):
        R.argmin(dev, big)
    big.release()


def test_cache_is_bounded_and_keeps_no_user_array(rng):
    import gc
    import weakref
    d = sg.Device()
    # 300 + k values: 75..85 texels, two passes at fan-in 16 -> each cached chain holds two
    # textures (its scratch result and one intermediate level); chains are per-device
    # resources (dev.resource: bounded, least recently used released first)
    R.total(d, np.ones(300))
    base = d.pool.live
    for k in range(1, 61):
        assert R.total(d, np.ones(300 + k)) == 300 + k
    assert d.pool.live - base <= 2 * 32
    # a caller's array is not kept bound (alive) by the cached chains
    a = d.array(rng.standard_normal(1000))
    m = d.array((np.arange(1000) % 3 == 0).astype(np.float32))
    R.total(d, a)
    R.argmax(d, a, mask=m)
    refs = [weakref.ref(a), weakref.ref(m)]
    del a, m
    gc.collect()
    assert all(r() is None for r in refs)
    d.release()


def test_mask_validation(dev, wrap_dev, rng):
    x = rng.standard_normal(50)
    m = dev.array(np.ones(50))
    m.release()
    with pytest.raises(ValueError, match="mask has been released"):
        R.argmax(dev, x, mask=m)
    other = wrap_dev.array(np.ones(50))
    with pytest.raises(ValueError, match="mask lives on another device"):
        R.argmin(dev, x, mask=other)
    mk = np.ones(50)
    mk[3] = np.nan
    with pytest.raises(ValueError, match="mask contains NaN"):
        R.argmax(dev, x, mask=mk)
    with pytest.raises(ValueError, match="mask has shape"):
        R.argmax(dev, x, mask=np.ones(49))


# ---- device profiles: the limits of legacy and mobile GPUs -------------------------------------
# (the profile_dev fixture: tests/conftest.py)


def test_reductions_under_profiles(profile_dev, rng):
    """Sum, arg-min/arg-max, a ReductionKernel along an axis: reference results and plan ==
    counter under each built-in profile (its loop cap bounds the fan-in, its texture size
    wraps the arrays, its draw buffers bound the outputs)."""
    d = profile_dev
    F = R.fanin_for(d)
    if d.loop_cap is not None:
        assert 5 * F + 4 <= d.loop_cap      # a level's loop stays within the cap
    # longer than the profile's texture side: the vector wraps
    n = 4 * d.max_texture_size + 37
    x = rng.standard_normal(n).astype(np.float32)
    x[n // 2] = x.max() + 1.0
    x[n // 3] = x.min() - 1.0
    a = d.array(x)
    assert a.layout.tex_size[1] > 1
    d.counter.reset()
    with d.phase("reduce"):
        got = R.total(d, a)
    assert d.counter.snapshot()["reduce"]["passes"] == \
        plans.get_plan("reduce/sum").total(n=n, loop_cap=d.loop_cap)
    assert_close(got, x.astype(np.float64).sum(), rtol=0,
                 atol=1e-5 * np.abs(x).astype(np.float64).sum())
    d.counter.reset()
    with d.phase("reduce"):
        assert R.argmax(d, a) == (float(x.max()), int(np.argmax(x)))
    assert d.counter.snapshot()["reduce"]["passes"] == \
        plans.get_plan("reduce/argbest").total(n=n, loop_cap=d.loop_cap)
    assert R.argmin(d, a) == (float(x.min()), int(np.argmin(x)))
    ties = np.zeros(1000, np.float32)
    ties[[7, 500, 999]] = 3.0
    assert R.argmax(d, ties) == (3.0, 7)
    m = rng.standard_normal((40, 300)).astype(np.float32)
    assert_close(R.sum(m, axis=1, device=d), m.astype(np.float64).sum(1), rtol=1e-7, atol=1e-4)
    d.counter.reset()
    with d.phase("reduce"):
        got = R.NORM(m, axis=0, device=d)
    assert_close(got, np.sqrt((m.astype(np.float64) ** 2).sum(0)), rtol=1e-5, atol=0)
    assert d.counter.snapshot()["reduce"]["passes"] == \
        plans.get_plan("reduce/norm").total(n=m.size, axis=0, length=40, loop_cap=d.loop_cap)
    a.release()


def test_cached_chains_survive_framebuffer_eviction(dev, rng):
    """The device's framebuffer cache is bounded (its evictions release framebuffers); a
    reduction kept between calls re-resolves its framebuffers, so it still runs after many
    other reductions of other lengths."""
    x = rng.standard_normal(5000).astype(np.float32)
    a = dev.array(x)
    assert R.argmax(dev, a, fanin=2) == (float(x.max()), int(np.argmax(x)))
    assert_close(R.total(dev, a, fanin=2), x.sum(dtype=np.float64), rtol=0,
                 atol=1e-5 * np.abs(x).sum())
    # 10 lengths x 2 kernels: 20 cached chains of ~10 passes, far more framebuffers than the
    # cache holds, fewer chains than the device keeps
    for n in range(3000, 3000 + 10 * 37, 37):
        y = rng.standard_normal(n).astype(np.float32)
        assert R.argmin(dev, y, fanin=2)[1] == int(np.argmin(y))
        assert_close(R.total(dev, y, fanin=2), y.sum(dtype=np.float64), rtol=0, atol=1e-4 * n,
                     what=f"n = {n}")
    assert R.argmax(dev, a, fanin=2) == (float(x.max()), int(np.argmax(x)))
    assert_close(R.total(dev, a, fanin=2), x.sum(dtype=np.float64), rtol=0,
                 atol=1e-5 * np.abs(x).sum())
    a.release()


def test_level_vectors_wrap_and_widen(dev):
    """Partial-result vectors wrap at ReduceTuning.level_wrap texels per row, and widen where
    that many rows would not hold them (here a first level of 16,385 texels > 128 x 128), with
    exact results; another wrap for some calls leaves the next calls' chains alone."""
    from shadergpgpu.ops.reduce.chain import vector_layout
    small, big = vector_layout(dev, 1000), vector_layout(dev, 16385)
    assert small.tex_w == dev.tuning(ReduceTuning).level_wrap == 128 and small.tex_h == 8
    with dev.tuned(ReduceTuning, level_wrap=32):
        assert vector_layout(dev, 1000).tex_w == 32
        x = np.random.default_rng(4).standard_normal(5000).astype(np.float32)
        assert R.argmax(dev, x) == (float(x.max()), int(np.argmax(x)))
        assert_close(R.total(dev, x), float(x.astype(np.float64).sum()), rtol=0, atol=1e-2)
    assert R.argmax(dev, x) == (float(x.max()), int(np.argmax(x)))
    assert_close(R.total(dev, x), float(x.astype(np.float64).sum()), rtol=0, atol=1e-2)
    assert big.tex_w >= 129 and big.tex_h <= big.tex_w
    x = np.random.default_rng(3).standard_normal(4 * 2 * 16385 - 3).astype(np.float32)
    a = dev.array(x)
    assert R.argmax(dev, a, fanin=2) == (float(x.max()), int(np.argmax(x)))
    assert R.argmin(dev, a, fanin=4) == (float(x.min()), int(np.argmin(x)))
