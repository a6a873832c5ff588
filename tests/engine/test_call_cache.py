"""Device.run remembers what it validated per call signature (kernel, layouts, blend, rect,
defines, uniform names): sequences of calls must never see a stale decision. Each case runs a
known signature again after something that a remembered decision could get wrong, and checks
the result against numpy (float64) or the error it must raise."""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.analysis.work_recorder import WorkRecorder
from shadergpgpu.engine.builtin import COPY, SAXPY
from shadergpgpu.engine.kernels import Split

from tests.reference import assert_close

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
    d = sg.Device(limits=sg.Limits(loop_cap=64))
    yield d
    d.release()


def _recorder(dev):
    rec = WorkRecorder(dev)
    dev.observe(rec)
    return rec


def test_new_values_and_new_arrays_of_a_known_signature(dev):
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = rng.standard_normal((2, 37)).astype(np.float32)
        a = float(rng.standard_normal())
        X, Y = dev.array(x), dev.array(y)
        out = dev.empty_like(X)
        dev.run(SAXPY, out, inputs={"X": X, "Y": Y}, uniforms={"alpha": a})
        assert_close(out.get(), a * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
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
        assert_close(out.get()[0], x[:, :upto].astype(np.float64).sum(1), rtol=1e-5, atol=0)
        cuts = -(-upto * 4 // 60)   # the later cuts accumulate: ping-pong without blending
        assert dev.counter.total - before == 1 + (cuts - 1) * dev.accumulate_passes(1, "add")


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
    small = sg.Device(caches=sg.CacheBounds(programs=1, framebuffers=1))
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
    from tests.kernels_for_tests import ROW_SUMS
    dev = sg.Device()
    try:
        a = np.random.default_rng(2).random((5, 9)).astype(np.float32)
        b = np.random.default_rng(3).random((6, 30)).astype(np.float32)
        A, B = dev.array(a), dev.array(b)
        oa, ob = dev.empty((1, 5)), dev.empty((1, 6))
        for _ in range(3):
            dev.run(ROW_SUMS, oa, inputs={"X": A})
            dev.run(ROW_SUMS, ob, inputs={"X": B})
            assert_close(ob.get()[0], b.astype(np.float64).sum(1), rtol=1e-5, atol=0)
            dev.prepare(ROW_SUMS, oa, inputs={"X": A}).run()
            assert_close(oa.get()[0], a.astype(np.float64).sum(1), rtol=1e-5, atol=0)
            dev.run(ROW_SUMS, ob, inputs={"X": B})
            assert_close(ob.get()[0], b.astype(np.float64).sum(1), rtol=1e-5, atol=0)
            dev.run(ROW_SUMS, oa, inputs={"X": A})
            assert_close(oa.get()[0], a.astype(np.float64).sum(1), rtol=1e-5, atol=0)
    finally:
        dev.release()


def test_work_is_counted_per_call(dev):
    rec = _recorder(dev)     # the analysis counts the work of each observed call
    X = dev.array(np.ones((4, 8)))
    out = dev.empty_like(X)
    with dev.phase("a"):
        for _ in range(3):
            dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
    with dev.phase("b"):
        dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
    frags = X.layout.tex_size[0] * X.layout.tex_size[1]
    assert rec.flops["a"] == 3 * 8 * frags and rec.flops["b"] == 8 * frags


def test_elementwise_direct_path_equals_the_general_path(dev):
    k = sg.ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z", "z = x * a + y")
    x, y = np.random.default_rng(4).standard_normal((2, 3, 7)).astype(np.float32)
    X, Y = dev.array(x), dev.array(y)
    z = k(X, Y, 1.5)                                   # direct path
    assert_close(z.get(), 1.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    assert_close(k(x, y, 1.5), z.get(), rtol=0, atol=0)   # general path
    with pytest.raises(ValueError, match="released"):
        z.release()
        k(z, Y, 1.0)
    out = dev.empty_like(X)
    assert k(X, Y, 2.0, out) is out
    assert_close(out.get(), 2 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
    k(X, Y, 1.0, X)                                    # output aliases an input: general path
    assert_close(X.get(), x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)


def test_one_kernel_on_alternating_layouts(dev):
    """The same kernel and argument names on arrays of several layouts, call after call (as
    the levels of a reduction do): each call draws its own shapes and counts its own work."""
    rec = _recorder(dev)     # the analysis counts the work of each observed call
    rng = np.random.default_rng(5)
    shapes = [(3, 7), (1, 40), (6, 2), (3, 7), (2, 2), (1, 1)]
    arrays = [(rng.standard_normal(s).astype(np.float32), rng.standard_normal(s).astype(
        np.float32)) for s in shapes]
    dev.counter.reset()
    frags = 0
    for rep in range(3):
        for k, (x, y) in enumerate(arrays):
            X, Y = dev.array(x), dev.array(y)
            out = dev.empty_like(X)
            a = float(k + rep)
            dev.run(SAXPY, out, inputs={"X": X, "Y": Y}, uniforms={"alpha": a})
            assert_close(out.get(), a * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
            w, h = X.layout.tex_size
            frags += w * h
            for arr in (X, Y, out):
                arr.release()
    n = 3 * len(shapes)
    assert dev.counter.passes["default"] == n
    assert dev.counter.fragments["default"] == frags
    assert rec.flops["default"] == 8 * frags
    assert dev.counter.events["default", "run"] == n


def test_defaults_and_given_values_of_one_program_alternate(dev):
    """A uniform with a default, given in one call and left out in the next (two signatures
    that share the program): each call draws with its own value."""
    k = sg.Kernel(source="void main() { OUT = X_texel(OUT_grid().x, OUT_grid().y) * s; }",
                  inputs={"X": sg.In(like="OUT")}, uniforms={"s": ("float", 2.0)},
                  name="test/scale_default")
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    X = dev.array(x)
    out = dev.empty_like(X)
    for v in (5.0, None, -1.0, None, None, 3.0):
        if v is None:
            dev.run(k, out, inputs={"X": X})
            want = 2.0 * x
        else:
            dev.run(k, out, inputs={"X": X}, uniforms={"s": v})
            want = v * x
        np.testing.assert_array_equal(out.get(), want)


def test_redeclared_work_is_counted_from_the_next_call(dev):
    rec = _recorder(dev)     # the analysis counts the work of each observed call
    k = sg.Kernel(source="void main() { OUT = X_texel(OUT_grid().x, OUT_grid().y) + s; }",
                  inputs={"X": sg.In(like="OUT")}, uniforms={"s": "float"},
                  name="test/add_work", work=lambda a: {"flops": 4, "fetches": 1})
    X = dev.array(np.ones((2, 8)))
    out = dev.empty_like(X)
    w, h = X.layout.tex_size
    with dev.phase("w1"):
        for _ in range(3):
            dev.run(k, out, inputs={"X": X}, uniforms={"s": 1.0})
    k.work = lambda a: {"flops": 10 * a.uniforms["s"], "fetches": 1}
    with dev.phase("w2"):
        for s in (1.0, 1.0, 2.0):
            dev.run(k, out, inputs={"X": X}, uniforms={"s": s})
    assert rec.flops["w1"] == 3 * 4 * w * h
    assert rec.flops["w2"] == (10 + 10 + 20) * w * h
    np.testing.assert_array_equal(out.get(), np.full((2, 8), 3.0))


def test_list_outputs_of_a_known_signature(dev):
    """Outputs given as a list (OUT0..): new arrays each call, a released one refused."""
    k = sg.Kernel(source="void main() { vec4 v = X_texel(OUT0_grid().x, OUT0_grid().y);"
                         " OUT0 = v * s; OUT1 = v + s; }",
                  inputs={"X": sg.In(like="OUT0")}, outputs=2, uniforms={"s": "float"},
                  name="test/two_outputs")
    x = np.random.default_rng(6).standard_normal((4, 5)).astype(np.float32)
    X = dev.array(x)
    for s in (1.5, -2.0, 0.25):
        a, b = dev.empty_like(X), dev.empty_like(X)
        dev.run(k, [a, b], inputs={"X": X}, uniforms={"s": s})
        assert_close(a.get(), s * x.astype(np.float64), rtol=1e-6, atol=0)
        assert_close(b.get(), x.astype(np.float64) + s, rtol=1e-6, atol=1e-6)
        b.release()
        with pytest.raises(ValueError, match="released"):
            dev.run(k, [a, b], inputs={"X": X}, uniforms={"s": s})
        with pytest.raises(ValueError, match="both an input and an output"):
            dev.run(k, [a, X], inputs={"X": X}, uniforms={"s": s})
        a.release()


SCALE_AT = sg.Kernel(source="""
void main() {
    vec4 v = vec4(0.0);
    for (int l = 0; l < 4; ++l)
        if (OUT_live(l)) { ivec2 p = OUT_pos(l); v[l] = s * X_at(p.x, p.y); }
    OUT = v;
}""", inputs=("X",), uniforms={"s": "float"}, name="test/scale_at",
    work=lambda a: {"flops": 4 * a.uniforms["s"], "fetches": 4})


def test_element_addressed_calls_of_two_layouts_between_prepared_passes(dev):
    """One kernel, the same names, two layouts whose shape uniforms differ, and a prepared
    pass of the kernel in between (all share one program): each draw uses its own shapes."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((5, 9)).astype(np.float32)
    b = rng.standard_normal((6, 30)).astype(np.float32)
    A, B = dev.array(a), dev.array(b)
    oa, ob = dev.empty((5, 9)), dev.empty((6, 30))
    p = dev.prepare(SCALE_AT, oa, inputs={"X": A}, uniforms={"s": -1.0})
    for s in (2.0, 3.0, 3.0):
        dev.run(SCALE_AT, oa, inputs={"X": A}, uniforms={"s": s})
        assert_close(oa.get(), s * a.astype(np.float64), rtol=1e-6, atol=0)
        dev.run(SCALE_AT, ob, inputs={"X": B}, uniforms={"s": s})
        assert_close(ob.get(), s * b.astype(np.float64), rtol=1e-6, atol=0)
        p.run()
        assert_close(oa.get(), -a.astype(np.float64), rtol=1e-6, atol=0)
        dev.run(SCALE_AT, ob, inputs={"X": B}, uniforms={"s": s})
        assert_close(ob.get(), s * b.astype(np.float64), rtol=1e-6, atol=0)
        dev.run(SCALE_AT, oa, inputs={"X": A}, uniforms={"s": s})
        assert_close(oa.get(), s * a.astype(np.float64), rtol=1e-6, atol=0)


def test_work_of_values_another_pass_put_in_the_program(dev):
    """A call whose value is the very object another pass of the program put there last
    draws nothing new, but its declared work is that of its own value."""
    rec = _recorder(dev)     # the analysis counts the work of each observed call
    x = np.ones((4, 4), np.float32)
    X = dev.array(x)
    out = dev.empty_like(X)
    w, h = X.layout.tex_size
    two = 2.0
    p = dev.prepare(SCALE_AT, out, inputs={"X": X}, uniforms={"s": 5.0})
    with dev.phase("v"):
        for _ in range(2):
            dev.run(SCALE_AT, out, inputs={"X": X}, uniforms={"s": 1.0})
        p.set(s=two).run()
        dev.run(SCALE_AT, out, inputs={"X": X}, uniforms={"s": two})
    assert rec.flops["v"] == 4 * (1.0 + 1.0 + 2.0 + 2.0) * w * h
    np.testing.assert_array_equal(out.get(), 2 * x)


# a loop whose range reads a uniform only where a define asks for it: what a plan depends on
# is what its functions read, per signature (the define is part of the signature)
PARTIAL_SCALED = sg.Kernel(source="""
void main() {
    vec4 s = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        int r = OUT_pos(l).y;
        for (int k = K_begin; k < K_end; ++k) s[l] += X_at(r, k);
    }
    OUT = s * scale;
}""", inputs=("X",), uniforms={"upto": "int", "scale": "float"}, defines={"ALL": 0},
    split=Split("K", length=lambda a: a.X.cols if a.defines["ALL"] else a.uniforms["upto"],
                cost=4, extra=4),
    work=lambda a: {"flops": a.uniforms.get("scale", 0.0) * 0 + 4, "fetches": 1},
    name="test/partial_scaled")


def test_plans_follow_the_values_they_read(dev):
    """Cuts and work are remembered per values of the uniforms the kernel's functions read:
    a value they do not read changes nothing, one they read is followed, in both defines."""
    x = np.random.default_rng(8).random((3, 200)).astype(np.float32)
    X = dev.array(x)
    out = dev.empty((1, 3))
    for all_cols in (0, 1):
        for upto, scale in ((10, 1.0), (150, 2.0), (150, -1.0), (3, 0.5), (200, 2.0),
                            (150, 3.0), (10, 1.0)):
            before = dev.counter.total
            dev.run(PARTIAL_SCALED, out, inputs={"X": X}, uniforms={"upto": upto, "scale": scale},
                    defines={"ALL": all_cols})
            cols = 200 if all_cols else upto
            assert_close(out.get()[0], scale * x[:, :cols].astype(np.float64).sum(1),
                         rtol=1e-5, atol=0)
            cuts = -(-cols * 4 // 60)   # later cuts accumulate (ping-pong without blending)
            assert dev.counter.total - before == \
                1 + (cuts - 1) * dev.accumulate_passes(1, "add")


ADDVEC = sg.Kernel(source="""
void main() { ivec2 g = OUT_grid(); OUT = X_texel(g.x, g.y) + v; }""",
                   inputs={"X": sg.In(like="OUT")}, uniforms={"v": "vec4"}, name="test/addvec")


def test_uniform_values_changed_in_place_are_written_again(dev):
    """A prepared pass and Device.run given the same list / array object for a vec4 uniform,
    changed in place between runs: every run uses the values at its call (a held object is
    never trusted to be unchanged)."""
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    X = dev.array(x)
    out = dev.empty_like(X)
    for v in (np.zeros(4, np.float32), [0.0, 0.0, 0.0, 0.0]):
        p = dev.prepare(ADDVEC, out, inputs={"X": X}, uniforms={"v": v})
        for k in range(3):
            v[0], v[3] = float(k), -2.0 * k
            p.run(v=v)
            want = x.reshape(4, 2, 4) + np.array([k, 0, 0, -2.0 * k], np.float32)
            np.testing.assert_array_equal(out.get(), want.reshape(4, 8))
            v[1] = 5.0 + k
            dev.run(ADDVEC, out, inputs={"X": X}, uniforms={"v": v})
            want = x.reshape(4, 2, 4) + np.array([k, 5.0 + k, 0, -2.0 * k], np.float32)
            np.testing.assert_array_equal(out.get(), want.reshape(4, 8))
            v[1] = 0.0


SCALED = sg.Kernel(source="""
void main() {
    vec4 s = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        int r = OUT_pos(l).y;
        for (int k = K_begin; k < K_end; ++k) s[l] += scale * X_at(r, k) + float(shift);
    }
    OUT = s;
}""", inputs=("X",), uniforms={"upto": "int", "scale": "float", "shift": "int"},
    split=Split("K", length=lambda a: a.uniforms["upto"], cost=4, extra=4),
    name="test/scaled_partial_rowsum")


def test_split_pass_values_outside_and_inside_its_plan(dev):
    """A prepared split pass: new values of uniforms its split does not read are written
    without planning again, one it reads cuts the loop anew; results and passes follow every
    call, and a bad value is still refused naming the uniform."""
    x = np.random.default_rng(4).standard_normal((4, 200)).astype(np.float32)
    X = dev.array(x)
    out = dev.empty((1, 4))
    p = dev.prepare(SCALED, out, inputs={"X": X}, uniforms={"upto": 200, "scale": 1.0,
                                                             "shift": 0})
    calls = [dict(scale=2.0), dict(shift=3), dict(scale=-0.5, shift=-1), dict(upto=7),
             dict(scale=4.0), dict(upto=150, scale=1.5), dict(shift=2), dict(upto=200)]
    vals = {"upto": 200, "scale": 1.0, "shift": 0}
    seen = {}
    for kw in calls:
        vals.update(kw)
        before = dev.counter.total
        p.run(**kw)
        want = vals["scale"] * x[:, :vals["upto"]].astype(np.float64).sum(1) + \
            vals["shift"] * vals["upto"]
        assert_close(out.get().ravel(), want, rtol=1e-5, atol=1e-4)
        drawn = dev.counter.total - before
        assert drawn == p.passes_per_run
        seen.setdefault(vals["upto"], drawn)
        assert seen[vals["upto"]] == drawn          # the same cut for the same length
    assert seen[7] == 1 and seen[200] > seen[150] > 1
    with pytest.raises(TypeError, match="scale"):
        p.run(scale="2")
    with pytest.raises((TypeError, ValueError), match="shift"):
        p.run(shift=2.5)


def test_work_of_values_the_same_signature_put_through_the_full_path(dev):
    """A call of a known signature that takes the full path (outputs as a dict, inputs as
    another mapping) with a new value, then the plain call given that very value object:
    each call counts the declared work of its own value."""
    rec = _recorder(dev)     # the analysis counts the work of each observed call
    from collections import OrderedDict
    x = np.ones((4, 4), np.float32)
    X = dev.array(x)
    out = dev.empty_like(X)
    w, h = X.layout.tex_size
    two, three = 2.0, 3.0
    with dev.phase("v"):
        for _ in range(2):
            dev.run(SCALE_AT, out, inputs={"X": X}, uniforms={"s": 1.0})
        dev.run(SCALE_AT, {"OUT": out}, inputs={"X": X}, uniforms={"s": two})
        dev.run(SCALE_AT, out, inputs={"X": X}, uniforms={"s": two})
        np.testing.assert_array_equal(out.get(), 2 * x)
        dev.run(SCALE_AT, out, inputs=OrderedDict(X=X), uniforms={"s": three})
        dev.run(SCALE_AT, out, inputs={"X": X}, uniforms={"s": three})
    assert rec.flops["v"] == 4 * (1.0 + 1.0 + 2.0 + 2.0 + 3.0 + 3.0) * w * h
    np.testing.assert_array_equal(out.get(), 3 * x)


def test_prepared_pass_counts_the_work_of_the_values_given_to_run(dev):
    """A prepared pass of a kernel whose declared work reads a uniform, given a new value of
    it at run(): the work counted is that of the value drawn with."""
    rec = _recorder(dev)     # the analysis counts the work of each observed call
    x = np.ones((4, 4), np.float32)
    X = dev.array(x)
    out = dev.empty_like(X)
    w, h = X.layout.tex_size
    p = dev.prepare(SCALE_AT, out, inputs={"X": X}, uniforms={"s": 1.0})
    with dev.phase("p"):
        p.run()
        p.run(s=3.0)
        np.testing.assert_array_equal(out.get(), 3 * x)
        p.run(s=3.0)
        p.run(s=-2.0)
    assert rec.flops["p"] == 4 * (1.0 + 3.0 + 3.0 - 2.0) * w * h
    np.testing.assert_array_equal(out.get(), -2 * x)
    with dev.phase("r"):                      # repeat over the uniform the work reads
        assert p.repeat("s", [1.0, 5.0, 0.5]) == 3
    assert rec.flops["r"] == 4 * (1.0 + 5.0 + 0.5) * w * h
    assert dev.counter.passes["r"] == 3
    np.testing.assert_array_equal(out.get(), 0.5 * x)
