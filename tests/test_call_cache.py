"""Device.run remembers what it validated per call signature (kernel, layouts, blend, rect,
defines, uniform names): sequences of calls must never see a stale decision. Each case runs a
known signature again after something that a remembered decision could get wrong, and checks
the result against numpy (float64) or the error it must raise."""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.engine.builtin import COPY, SAXPY
from shadergpgpu.engine.kernels import Split

# a summing loop over a uniform-dependent range, cut across passes by the loop cap
PARTIAL = sg.Kernel(source="""
void main() {
    vec4 s = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        int r = OUT_pos(l).y;   // OUT is 1 x rows: lane l's column is X's row
        for (int k = K_begin; k < K_end; ++k) s[l] += X_at(r, k);
    }
    OUT = s;
}""", inputs=("X",), uniforms={"upto": "int"},
    split=Split("K", length=lambda a: a.uniforms["upto"], cost=4, extra=4),
    name="test/partial_rowsum")


@pytest.fixture
def dev():
    d = sg.Device(loop_cap=64)
    yield d
    d.release()


def test_new_values_and_new_arrays_of_a_known_signature(dev):
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = rng.standard_normal((2, 37)).astype(np.float32)
        a = float(rng.standard_normal())
        X, Y = dev.array(x), dev.array(y)
        out = dev.empty_like(X)
        dev.run(SAXPY, out, inputs={"X": X, "Y": Y}, uniforms={"alpha": a})
        np.testing.assert_allclose(out.get(), a * x.astype(np.float64) + y, rtol=1e-6,
                                   atol=1e-6)
        for arr in (X, Y, out):
            arr.release()
    assert len(dev._calls) == 1


def test_uniform_dependent_cuts_follow_the_values(dev):
    x = np.random.default_rng(1).random((3, 200)).astype(np.float32)
    X = dev.array(x)
    out = dev.empty((1, 3))
    for upto in (10, 150, 3, 200, 150):   # cap 64 / cost 4: 1, 10, 1, 13, 10 passes
        before = dev.counter.total
        dev.run(PARTIAL, out, inputs={"X": X}, uniforms={"upto": upto})
        np.testing.assert_allclose(out.get()[0], x[:, :upto].astype(np.float64).sum(1),
                                   rtol=1e-5)
        assert dev.counter.total - before == -(-upto * 4 // 60)


def test_released_or_foreign_arrays_of_a_known_signature_are_refused(dev):
    X = dev.array(np.ones(8))
    out = dev.empty_like(X)
    dev.run(COPY, out, inputs={"X": X})
    gone = dev.array(np.ones(8))
    gone.release()
    with pytest.raises(ValueError, match="input 'X' has been released"):
        dev.run(COPY, out, inputs={"X": gone})
    with pytest.raises(ValueError, match="output 'OUT' has been released"):
        dev.run(COPY, gone, inputs={"X": X})
    with pytest.raises(ValueError, match="both an input and an output"):
        dev.run(COPY, X, inputs={"X": X})
    other = sg.Device()
    try:
        with pytest.raises(ValueError, match="another device"):
            dev.run(COPY, out, inputs={"X": other.array(np.ones(8))})
    finally:
        other.release()
    dev.run(COPY, out, inputs={"X": X})
    np.testing.assert_array_equal(out.get(), np.ones(8))


def test_bad_uniform_values_of_a_known_signature_are_refused(dev):
    X = dev.array(np.ones(4))
    out = dev.empty_like(X)
    dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
    with pytest.raises(TypeError, match="alpha"):
        dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": "2"})
    dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": np.float32(3.0)})
    np.testing.assert_array_equal(out.get(), np.full(4, 4.0))


def test_trim_and_evictions_between_calls(dev):
    small = sg.Device(cache_size=1, fbo_cache_size=1)
    try:
        X = small.array(np.arange(6.0))
        out = small.empty_like(X)
        for k in range(3):
            small.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": float(k)})
            small.run(COPY, out, inputs={"X": X})              # evicts SAXPY's program
            other = small.empty_like(X)
            small.run(COPY, other, inputs={"X": X})            # evicts out's framebuffer
            small.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": float(k)})
            np.testing.assert_array_equal(out.get(), (k + 1) * np.arange(6.0))
            small.trim()
            other.release()
    finally:
        small.release()


def test_a_program_shared_by_two_signatures_keeps_each_ones_shapes():
    """Two calls of one kernel with different layouts share its program: each call's shape
    uniforms must be in place when it draws, in any order, between prepared passes too."""
    from kernels_for_tests import ROWSUM
    dev = sg.Device()
    try:
        a = np.random.default_rng(2).random((5, 9)).astype(np.float32)
        b = np.random.default_rng(3).random((6, 30)).astype(np.float32)
        A, B = dev.array(a), dev.array(b)
        oa, ob = dev.empty((1, 5)), dev.empty((1, 6))
        for _ in range(3):
            dev.run(ROWSUM, oa, inputs={"X": A})
            dev.run(ROWSUM, ob, inputs={"X": B})
            np.testing.assert_allclose(ob.get()[0], b.astype(np.float64).sum(1), rtol=1e-5)
            dev.prepare(ROWSUM, oa, inputs={"X": A}).run()
            np.testing.assert_allclose(oa.get()[0], a.astype(np.float64).sum(1), rtol=1e-5)
            dev.run(ROWSUM, ob, inputs={"X": B})
            np.testing.assert_allclose(ob.get()[0], b.astype(np.float64).sum(1), rtol=1e-5)
            dev.run(ROWSUM, oa, inputs={"X": A})
            np.testing.assert_allclose(oa.get()[0], a.astype(np.float64).sum(1), rtol=1e-5)
    finally:
        dev.release()


def test_work_is_counted_per_call(dev):
    X = dev.array(np.ones((4, 8)))
    out = dev.empty_like(X)
    with dev.phase("a"):
        for _ in range(3):
            dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
    with dev.phase("b"):
        dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
    frags = X.layout.tex_size[0] * X.layout.tex_size[1]
    assert dev.counter.flops["a"] == 3 * 8 * frags and dev.counter.flops["b"] == 8 * frags


def test_elementwise_direct_path_equals_the_general_path(dev):
    k = sg.ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z", "z = x * a + y")
    x, y = np.random.default_rng(4).standard_normal((2, 3, 7)).astype(np.float32)
    X, Y = dev.array(x), dev.array(y)
    z = k(X, Y, 1.5)                                   # direct path
    np.testing.assert_allclose(z.get(), 1.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(k(x, y, 1.5), z.get(), rtol=0, atol=0)   # general path
    with pytest.raises(ValueError, match="released"):
        z.release()
        k(z, Y, 1.0)
    out = dev.empty_like(X)
    assert k(X, Y, 2.0, out) is out
    np.testing.assert_allclose(out.get(), 2 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    k(X, Y, 1.0, X)                                    # output aliases an input: general path
    np.testing.assert_allclose(X.get(), x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
