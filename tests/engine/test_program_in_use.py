"""A program stays alive while a draw of several passes uses it.

Without float blending, an accumulating pass runs two more kernels (combine, copy) between its
own draws; with a small program cache those push the drawing kernel's program out. The
program is released only when the draw that uses it ends: split loops (``Device.run`` and a
prepared pass), and a prepared pass swept over rects, each checked against float64 numpy."""
from __future__ import annotations

import numpy as np
import pytest

import shadergpgpu as sg
from tests.kernels_for_tests import ACCUMULATE, rowsum_kernel
from tests.reference import assert_close


@pytest.fixture
def tight():
    """No float blending (accumulation by ping-pong passes), two programs cached, loops of 64
    iterations at most (so a row sum of 60 columns is cut into slices)."""
    d = sg.Device(profile="geforce-7800gtx", caches=sg.CacheBounds(programs=2),
                  limits=sg.Limits(loop_cap=64))
    yield d
    d.release()


X = np.random.default_rng(0).standard_normal((5, 60))


def test_a_split_loop_outlives_the_cache(tight):
    out = tight.empty((1, 5))
    drawn = tight.run(rowsum_kernel(), out, inputs={"X": tight.array(X)})
    assert drawn > 1                       # the loop was cut, each slice after the first adds
    assert_close(out.get().ravel(), X.sum(1), rtol=1e-5, atol=1e-5, what="Device.run")


def test_a_prepared_split_loop_outlives_the_cache(tight):
    out = tight.empty((1, 5))
    p = tight.prepare(rowsum_kernel(), out, inputs={"X": tight.array(X)})
    for _ in range(3):                     # the program of the first run is gone by the second
        p.run()
        assert_close(out.get().ravel(), X.sum(1), rtol=1e-5, atol=1e-5, what="Pass.run")


def test_a_sweep_of_accumulating_draws_outlives_the_cache(tight):
    a = np.arange(32.0).reshape(4, 8)
    out = tight.array(np.ones((4, 8)))
    p = tight.prepare(ACCUMULATE, out, inputs={"X": tight.array(a)}, uniforms={"scale": 2.0},
                      accumulate="add")
    rects = [(0, 0, 1, 1), (1, 0, 1, 1), (0, 0, 2, 1)]
    drawn = p.sweep(rects)
    assert drawn == 3 * 3                  # each draw: itself, combine, copy
    got = out.get()
    # one RGBA texel per four row-major values: (0,0,1,1) covers the first four, (1,0,1,1)
    # the next four, (0,0,2,1) both
    want = np.ones(32)
    want[:8] += 2.0 * a.ravel()[:8] * 2
    assert_close(got.ravel(), want, rtol=1e-6, atol=1e-6, what="Pass.sweep")
