"""The flat public API: every name in ``shadergpgpu.__all__`` resolves, the short names are the
submodules' own objects, and ``import shadergpgpu`` loads no heavy dependency until used."""
import json
import subprocess
import sys

import numpy as np

import shadergpgpu as sg


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
    np.testing.assert_allclose(sg.sgemm(np.eye(3), np.arange(9.0).reshape(3, 3)),
                               np.arange(9.0).reshape(3, 3))


def test_import_stays_light():
    code = ("import sys, json, shadergpgpu; print(json.dumps([m for m in "
            "('sklearn', 'scipy', 'dask', 'distributed') if m in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == []
