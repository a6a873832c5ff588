"""The flat public API: every name in ``shadergpgpu.__all__`` resolves, the short names are the
submodules' own objects, and ``import shadergpgpu`` loads no heavy dependency until used."""
import json
import subprocess
import sys

import numpy as np

import shadergpgpu as sg

from tests.reference import assert_close


def test_every_public_name_resolves():
    for name in sg.__all__:
        assert getattr(sg, name) is not None, name
    assert set(sg._LAZY) <= set(dir(sg))


def test_short_names_are_the_submodules_objects():
    from shadergpgpu.algorithms.backprop import MLP
    from shadergpgpu.ops.elementwise import ElementwiseKernel
    from shadergpgpu.ops.sort import sort
    assert sg.MLP is MLP and sg.ElementwiseKernel is ElementwiseKernel and sg.sort is sort
    assert sg.ops.reduce.ReductionKernel is sg.ReductionKernel


def test_short_form_computes():
    fma = sg.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * y + 1.0")
    np.testing.assert_array_equal(fma(np.arange(4.0), np.full(4, 2.0)), [1, 3, 5, 7])
    np.testing.assert_array_equal(sg.sort(np.array([3.0, -1.0, 2.0])), [-1, 2, 3])
    assert_close(sg.sgemm(np.eye(3), np.arange(9.0).reshape(3, 3)), np.arange(9.0).reshape(3, 3),
                 rtol=1e-7, atol=0)


def test_argmin_argmax_are_numpys():
    x = np.array([[3.0, -1.0, 7.0], [-1.0, 7.0, 0.5]], dtype=np.float32)   # ties: first wins
    assert sg.argmin(x) == np.argmin(x) == 1 and sg.argmax(x) == np.argmax(x) == 2
    x[1, 2] = np.nan
    assert sg.argmin(x) == np.argmin(x) == 5 and sg.argmax(x) == np.argmax(x) == 5
    dev = sg.get_device()
    assert sg.argmax(dev.array(np.arange(10.0))) == 9


def test_import_stays_light():
    code = ("import sys, json, shadergpgpu; print(json.dumps([m for m in "
            "('sklearn', 'scipy', 'dask', 'distributed') if m in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []


# ---- CuPy's conventions ------------------------------------------------------------------------
def test_reduction_identity_as_c_text_and_name_positional():
    l2 = sg.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)", "0",
                            "l2norm")
    assert l2.name == "l2norm"
    assert_close(l2(np.full((3, 4), 2.0)), np.sqrt(48.0), rtol=1e-6, atol=0)
    mx = sg.ReductionKernel("float32 x", "float32 y", "x", "max(a, b)", "y = a", "-INFINITY",
                            "vmax")
    assert mx.identity == -np.inf and float(mx(np.array([-5.0, -3.0]))) == -3.0
    assert sg.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "1.5f").identity \
        == 1.5


def test_reduction_identity_text_that_is_no_number_names_identity():
    import pytest
    with pytest.raises(ValueError, match="identity 'zero'"):
        sg.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "zero")


def test_elementwise_on_scalars_only_returns_0d_arrays():
    k = sg.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * y + 1.0", name="f")
    r = k(2.0, 3.0)
    assert isinstance(r, np.ndarray) and r.shape == () and float(r) == 7.0
    two = sg.ElementwiseKernel("float32 x", "float32 a, float32 b", "a = x + 1.0; b = x * 2.0")
    a, b = two(4.0)
    assert a.shape == b.shape == () and (float(a), float(b)) == (5.0, 8.0)
