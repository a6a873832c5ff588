"""ReductionKernel (CuPy's conventions), dot and norm against float64 numpy.

Tolerances: float32 partial sums in a tree of fan-in runs, asserted within
|err| <= 1e-5 * sum(|terms|) (+ 1e-6 absolute); sums of small integers, min, max, argmin and
argmax are exact.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import shadergpgpu as sg
from shadergpgpu.analysis import plans
from shadergpgpu.engine.errors import LoopBudgetError, ShaderCompileError
from shadergpgpu.ops import reduce as R
from shadergpgpu.ops.reduce import ReductionKernel

from tests.reference import assert_close, assert_within

SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

SUMSQ = ReductionKernel("float32 x, float32 w", "float32 z", "w * x * x", "a + b", "z = a",
                        identity=0.0, name="wsumsq")
# lane by lane (a ternary and float(_i) do not mean the same on vec4): the scalar path
POSIDX = ReductionKernel("float32 x", "float32 z", "x > 0.0 ? float(_i) : 0.0", "a + b",
                         "z = a", identity=0.0, name="posidx")
MAXABS = ReductionKernel("float32 x", "float32 z", "abs(x)", "max(a, b)", "z = a",
                         identity=-np.inf, name="maxabs")


@pytest.fixture(scope="module")
def capped_dev():
    """Loops stop after 24 iterations: the fan-in drops to 4 (5 * 4 + 4 = 24)."""
    d = sg.Device(limits=sg.Limits(loop_cap=24))
    yield d
    d.release()


def _close(got, ref, terms, axis=None):
    tol = 1e-5 * np.abs(terms).sum(axis=axis) + 1e-6
    ref = np.asarray(ref, np.float64)
    assert_within(np.asarray(got, np.float64).reshape(ref.shape), ref, tol)


# at most 256 elements: unpacked, they still fit small_dev's 16 x 16 texels (wrapped)
shapes = st.one_of(st.tuples(st.integers(1, 256)),
                   st.tuples(st.integers(1, 12), st.integers(1, 21)))


@SETTINGS
@given(shape=shapes, packed=st.booleans(), order=st.sampled_from(["row", "col"]),
       axis=st.sampled_from([None, 0, 1]), seed=st.integers(0, 2 ** 16))
def test_random_shapes_against_numpy(dev, small_dev, shape, packed, order, axis, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.random(shape).astype(np.float32)
    if axis == 1 and len(shape) == 1:
        axis = None
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    ref = (w64 * x64 * x64).sum(axis=axis)
    for d in (dev, small_dev):              # small_dev: textures 16 texels a side (wrapped)
        X = d.array(x, packed=packed, order=order)
        W = d.array(w, packed=not packed, order=order)      # another layout than X
        got = SUMSQ(X, W, axis=axis)
        assert isinstance(got, sg.DeviceArray)
        _close(got.get() if axis is not None else got.get()[0], ref, w64 * x64 * x64, axis)
        got.release()
        # numpy in -> numpy out; exact for max and small-integer sums
        assert MAXABS(x, axis=axis, device=d).tolist() == np.abs(x).max(axis=axis).tolist()
        k = rng.integers(-50, 50, size=shape)
        assert np.array_equal(R.sum(k, axis=axis, device=d), k.sum(axis=axis))
        # _i is the row-major flat index; integer sums below 2**24 are exact
        idx = np.arange(x.size).reshape(shape)
        got = POSIDX(X, axis=axis)
        assert np.array_equal(got.get().ravel() if axis is not None else got.get()[:1],
                              np.ravel(np.where(x > 0, idx, 0).sum(axis=axis)))
        got.release()
        X.release()
        W.release()


@SETTINGS
@given(n=st.integers(1, 256), packed=st.booleans(), order=st.sampled_from(["row", "col"]),
       seed=st.integers(0, 2 ** 16))
def test_argmin_argmax_exact_random(small_dev, n, packed, order, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(-5, 6, size=n).astype(np.float32)      # many ties
    if order == "col" and n % 3 == 0:
        x = x.reshape(3, -1)
    a = small_dev.array(x, packed=packed, order=order)
    assert R.argmin(small_dev, a) == (float(x.min()), int(np.argmin(x)))
    assert R.argmax(small_dev, a) == (float(x.max()), int(np.argmax(x)))
    a.release()


def test_forced_small_loop_cap(capped_dev, rng):
    assert R.fanin_for(capped_dev) == 4
    x = rng.standard_normal((23, 301)).astype(np.float32)
    x64 = x.astype(np.float64)
    _close(R.sum(x, device=capped_dev), x64.sum(), x64)
    _close(R.norm(x, axis=1, device=capped_dev), np.linalg.norm(x64, axis=1), x64 ** 2, 1)
    _close(R.dot(x, x, device=capped_dev), (x64 * x64).sum(), x64 ** 2)
    assert R.argmax(capped_dev, x) == (float(x.max()), int(np.argmax(x)))
    # a fan-in asked for beyond the cap is refused, naming what to change
    with pytest.raises(LoopBudgetError, match="fanin"):
        R.sum(x, device=capped_dev, fanin=64)


def test_dot_norm_device_and_numpy(dev, rng):
    x = rng.standard_normal(1001)
    y = rng.standard_normal(1001)
    got = R.dot(x, y, device=dev)
    assert isinstance(got, np.float32)
    _close(got, x @ y, x * y)
    _close(R.norm(x, device=dev), np.linalg.norm(x), x * x)
    X, Y = dev.array(x), dev.array(y)
    d = R.dot(X, Y)
    assert isinstance(d, sg.DeviceArray) and d.shape == (1,)
    _close(d.get()[0], x @ y, x * y)
    m = rng.standard_normal((30, 7))
    nm = R.norm(dev.array(m, order="col"), axis=0)
    assert nm.shape == (7,)
    _close(nm.get(), np.linalg.norm(m, axis=0), m ** 2, 0)
    # mixing a numpy and a device argument: device out
    _close(R.dot(X, y).get()[0], x @ y, x * y)


def test_scalar_params_are_uniforms_and_post_map(dev, rng):
    rk = ReductionKernel("float32 x, float32 p, float32 s", "float32 y", "pow(abs(x), p)",
                         "a + b", "y = s * pow(a, 1.0 / p)", identity=0, name="pnorm")
    x = rng.standard_normal((9, 40))
    n0 = dev.n_programs
    for p in (1.0, 2.0, 3.0):
        ref = 2.0 * (np.abs(x) ** p).sum() ** (1 / p)
        assert_close(rk(x, p, 2.0, device=dev), ref, rtol=1e-5, atol=0, what=f"p = {p}")
    assert dev.n_programs - n0 <= 2          # one program per level kind, not per value
    r1 = rk(x, 2.0, 1.0, axis=1, device=dev)
    assert_close(r1, np.linalg.norm(x, axis=1), rtol=1e-5, atol=0)


def test_programs_do_not_grow_with_shapes(rng):
    d = sg.Device()
    for n in range(200, 400, 10):
        R.sum(rng.standard_normal(n), device=d)
        R.sum(rng.standard_normal((3, n)), axis=1, device=d)
    assert d.n_programs <= 8
    d.release()


@pytest.mark.parametrize("n,fanin,axis", [(5000, 16, None), (5000, 3, None), (70, 4, 1),
                                          (1, 16, None)])
def test_pass_plan(dev, rng, n, fanin, axis):
    x = rng.standard_normal((2, n)) if axis is not None else rng.standard_normal(n)
    dev.counter.reset()
    with dev.phase("reduce"):
        R.norm(x, axis=axis, device=dev, fanin=fanin)
    exp = plans.get_plan("reduce/norm").expected(n=n, fanin=fanin, axis=axis, length=n)
    assert dev.counter.snapshot()["reduce"]["passes"] == exp["reduce"]
    assert R.NORM.passes(x.shape, axis=axis, fanin=fanin) == exp["reduce"]


def test_input_rules(dev):
    # float64 is converted to float32 (documented); the result is float32
    assert R.sum(np.array([0.1, 0.2], np.float64), device=dev) == np.float32(
        np.float32(0.1) + np.float32(0.2))
    assert R.sum(np.array([2 ** 24, -1], np.int64), device=dev) == 2 ** 24 - 1
    with pytest.raises(ValueError, match="2\\*\\*24"):
        R.sum(np.array([2 ** 24 + 1, 1], np.int64), device=dev)
    with pytest.raises(TypeError, match="complex"):
        R.sum(np.ones(3, complex), device=dev)
    with pytest.raises(TypeError, match="complex"):
        SUMSQ(np.ones(3), 1j, device=dev)
    with pytest.raises(ValueError, match="same shape"):
        R.dot(np.ones(3), np.ones(4), device=dev)
    with pytest.raises(ValueError, match="empty"):
        R.sum(np.ones(0), device=dev)
    with pytest.raises(ValueError, match="axis"):
        R.sum(np.ones(3), axis=2, device=dev)
    with pytest.raises(TypeError, match="2 argument"):
        R.DOT(np.ones(3), device=dev)
    with pytest.raises(ValueError, match="fanin"):
        R.sum(np.ones(3), fanin=1, device=dev)


def test_declaration_rules(dev):
    with pytest.raises(ValueError, match=r"unknown name\(s\) \['q'\]"):
        ReductionKernel("float32 x", "float32 y", "x * q", "a + b", identity=0)
    with pytest.raises(ValueError, match=r"reduce_expr 'a \+ c'"):
        ReductionKernel("float32 x", "float32 y", "x", "a + c", identity=0)
    with pytest.raises(ValueError, match="identity"):
        ReductionKernel("float32 x", "float32 y", "x", "a + b")
    with pytest.raises(ValueError, match="unknown type"):
        ReductionKernel("complex64 x", "float32 y", "x", "a + b", identity=0)
    with pytest.raises(ValueError, match="cannot be a parameter name"):
        ReductionKernel("float32 a", "float32 y", "a", "a + b", identity=0)
    with pytest.raises(ValueError, match="one expression"):
        ReductionKernel("float32 x", "float32 y", "x; discard", "a + b", identity=0)
    bad = ReductionKernel("float32 x", "float32 y", "x ** 2", "a + b", identity=0,
                          name="badpow")
    with pytest.raises(ShaderCompileError, match=r"badpow.*map_expr 'x \*\* 2'"):
        bad(np.ones(5), device=dev)
