"""ElementwiseKernel against numpy: shapes, layouts, wrapping, scalars, outputs, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck

import shadergpgpu as sg
from shadergpgpu.analysis import plans
from shadergpgpu.ops.elementwise import ElementwiseKernel

from tests.reference import assert_close

FMA = ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z", "z = x * y + a",
                        name="fma")
HYP = settings(max_examples=40, deadline=None,
               suppress_health_check=[HealthCheck.function_scoped_fixture])


def _f32(x):
    return np.asarray(x, dtype=np.float32)


def test_host_in_host_out():
    x, y = np.arange(10.0), np.linspace(-1, 1, 10)
    z = FMA(x, y, 2.5)
    assert isinstance(z, np.ndarray) and z.dtype == np.float32
    assert_close(z, _f32(x) * _f32(y) + 2.5, rtol=1e-6, atol=0)


def test_device_in_device_out(dev):
    x = dev.array(np.arange(12.0).reshape(3, 4))
    z = FMA(x, x, -1.0)
    assert isinstance(z, sg.DeviceArray) and z.shape == (3, 4)
    np.testing.assert_array_equal(z.get(), np.arange(12.0).reshape(3, 4) ** 2 - 1)
    z.release()


@HYP
@given(rows=st.integers(1, 6), cols=st.integers(1, 40), packed=st.booleans(),
       order=st.sampled_from(["row", "col"]), packed2=st.booleans(),
       order2=st.sampled_from(["row", "col"]), one_d=st.booleans(), small=st.booleans(),
       seed=st.integers(0, 2 ** 16))
def test_random_shapes_and_layouts(dev, small_dev, rows, cols, packed, order, packed2, order2,
                                   one_d, small, seed):
    d = small_dev if small else dev
    rng = np.random.default_rng(seed)
    shape = (cols,) if one_d else (rows, cols)
    x, y = rng.standard_normal(shape), rng.standard_normal(shape)
    X = d.array(x, packed=packed, order=order)
    Y = d.array(y, packed=packed2, order=order2)
    Z = FMA(X, Y, 0.5)
    assert Z.layout == X.layout
    assert_close(Z.get(), _f32(x) * _f32(y) + np.float32(0.5), rtol=1e-6, atol=1e-6)
    for a in (X, Y, Z):
        a.release()


@pytest.mark.parametrize("bshape", [(1, 7), (7,), (5, 1), (1, 1)])
def test_broadcasting(dev, bshape):
    rng = np.random.default_rng(0)
    x, b = rng.standard_normal((5, 7)), rng.standard_normal(bshape)
    assert_close(FMA(x, b, 1.0), _f32(x) * _f32(b) + 1, rtol=1e-6, atol=0)
    assert_close(FMA(b, x, 1.0), _f32(x) * _f32(b) + 1, rtol=1e-6, atol=0)
    X = dev.array(b, packed=False)
    assert_close(FMA(X, x, 0.0).get(), _f32(x) * _f32(b), rtol=1e-6, atol=0)


def test_flat_index_and_int_params(small_dev):
    k = ElementwiseKernel("float32 x, int32 n", "float32 y, int32 j",
                          "y = x * float(n); j = i", name="idx")
    x = np.ones((6, 21))
    X = small_dev.array(x, packed=False, order="col")          # wrapped, unpacked, col order
    assert X.layout.wrapped
    Y, J = k(X, 3)
    np.testing.assert_array_equal(Y.get(), 3 * x)
    np.testing.assert_array_equal(J.get(), np.arange(126).reshape(6, 21))
    yh, jh = k(x, 2)
    assert jh.dtype == np.int32 and yh.dtype == np.float32
    np.testing.assert_array_equal(jh, np.arange(126).reshape(6, 21))


def test_eight_outputs_and_preamble():
    pre = "float sq(float v) { return v * v; }"
    outs = ", ".join(f"float32 o{k}" for k in range(8))
    op = "\n".join(f"o{k} = sq(x) + {k}.0;" for k in range(8))
    k = ElementwiseKernel("float32 x", outs, op, name="eight", preamble=pre)
    x = np.linspace(-2, 2, 13)
    res = k(x)
    assert len(res) == 8
    for j, r in enumerate(res):
        assert_close(r, _f32(x) ** 2 + j, rtol=1e-6, atol=0)


def test_given_outputs_and_in_place(dev):
    x = dev.array(np.arange(8.0))
    out = dev.empty_like(x)
    assert FMA(x, x, 1.0, out) is out
    np.testing.assert_array_equal(out.get(), np.arange(8.0) ** 2 + 1)
    with dev.phase("ew-inplace"):
        FMA(x, x, 0.0, x)                                      # x = x * x: via a temporary
    np.testing.assert_array_equal(x.get(), np.arange(8.0) ** 2)
    assert dev.counter.passes["ew-inplace"] == plans.get_plan("ops/elementwise").total(aliased=1)
    h = np.zeros(8, dtype=np.float32)
    assert FMA(np.arange(8.0), 2.0, 1.0, h) is h
    np.testing.assert_array_equal(h, 2 * np.arange(8.0) + 1)


def test_pass_plan_and_compiles_once_per_layout_kind(dev):
    k = ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x - y", name="sub")
    rng = np.random.default_rng(3)
    before = dev.shaders.compiles
    for _ in range(25):
        shape = (int(rng.integers(1, 20)), int(rng.integers(1, 50)))
        with dev.phase("ew"):
            z = k(dev.array(rng.standard_normal(shape)), rng.standard_normal(shape))
        z.release()
    assert dev.shaders.compiles - before <= 2        # fast path (same layout) and the general one
    assert dev.counter.passes["ew"] == 25 * plans.get_plan("ops/elementwise").total()


def test_syntax_error_quotes_the_operation():
    k = ElementwiseKernel("float32 x", "float32 z", "z = x +* 2.0", name="broken")
    with pytest.raises(sg.ShaderCompileError, match=r"z = x \+\* 2\.0"):
        k(np.ones(3))


@pytest.mark.parametrize("args, err, match", [
    (("float32 x", "float32 z", "z = x + b"), ValueError, "unknown name"),
    (("float32 x", "float32 z", ""), ValueError, "non-empty"),
    (("complex64 x", "float32 z", "z = x"), ValueError, "unknown type"),
    (("float32 i", "float32 z", "z = i"), ValueError, "cannot be a parameter"),
    (("float32 x, float32 x", "float32 z", "z = x"), ValueError, "twice"),
    (("float32 x", ", ".join(f"float32 o{k}" for k in range(9)), "o0 = x"), ValueError, "1 to 8"),
    (("float32 x", "float32 z", "uniform float q; z = x"), ValueError, "uniform"),
])
def test_bad_declarations(args, err, match):
    with pytest.raises(err, match=match):
        ElementwiseKernel(*args)


def test_local_declarations_are_not_unknown():
    k = ElementwiseKernel("float32 x", "float32 z",
                          "float t = x * 2.0, u = 1e-3; vec2 w = vec2(t, u); z = w.x + w.y",
                          name="locals")
    assert_close(k(np.arange(3.0)), 2 * np.arange(3.0) + 1e-3, rtol=1e-6, atol=0)


def test_bad_calls(dev):
    with pytest.raises(TypeError, match="3 inputs"):
        FMA(np.ones(3), np.ones(3))
    with pytest.raises(ValueError, match="do not broadcast"):
        FMA(np.ones(3), np.ones(4), 1.0)
    with pytest.raises(TypeError, match="complex"):
        FMA(np.ones(3, dtype=complex), np.ones(3), 1.0)
    with pytest.raises(TypeError, match="complex"):
        FMA(np.ones(3), np.ones(3), 1j)
    with pytest.raises(ValueError, match="2\\*\\*24"):
        FMA(np.array([2 ** 25], dtype=np.int64), np.ones(1), 1.0)
    with pytest.raises(ValueError, match="empty"):
        FMA(np.ones(0), np.ones(0), 1.0)
    with pytest.raises(ValueError, match="float32's range"):
        FMA(np.array([1e300]), np.ones(1), 1.0)
    with pytest.raises(ValueError, match="1-D or 2-D"):
        FMA(np.ones((2, 2, 2)), 1.0, 1.0)
    assert FMA(1.0, 2.0, 3.0).shape == ()      # scalars only: a 0-d result, as in CuPy
    with pytest.raises(ValueError, match="output 'z' has shape"):
        FMA(np.ones(3), np.ones(3), 1.0, np.ones(4, dtype=np.float32))
    x = dev.array(np.ones(3))
    x.release()
    with pytest.raises(ValueError, match="released"):
        FMA(x, 1.0, 1.0)


def test_float64_rounds_to_float32():
    x = np.array([0.1, 1 / 3, 1e-30, np.pi])
    k = ElementwiseKernel("float64 x", "float64 z", "z = x", name="ident")
    np.testing.assert_array_equal(k(x), x.astype(np.float32))


def test_reaction_diffusion_demo_runs(tmp_path):
    import importlib.util
    from pathlib import Path
    import sys
    path = Path(__file__).resolve().parents[2] / "demos" / "reaction_diffusion.py"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))                   # for demos/_demo.py
    spec = importlib.util.spec_from_file_location("reaction_diffusion", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--steps", "40", "--size", "32", "--frames", "2", "-o", str(tmp_path)])
    assert (tmp_path / "gray_scott.png").stat().st_size > 0
    assert (tmp_path / "gray_scott.gif").stat().st_size > 0
    with pytest.raises(SystemExit):
        mod.main(["--size", "8"])
