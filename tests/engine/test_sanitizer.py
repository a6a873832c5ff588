"""Debug mode (the kernel sanitizer): reads out of range and NaN/Inf made by a kernel raise
KernelDebugError naming the kernel, the array and the first bad index; off, nothing changes.

The expected indices come from plain Python/numpy over the same shapes: the first bad read is
the first output element, in row-major order, whose read falls outside the input (packed
row-order outputs shade their elements in that order, lane by lane), and the first non-finite
output is the first one numpy's float32 arithmetic gives.
"""
import numpy as np
import pytest

import shadergpgpu as sg
from tests.kernels_for_tests import ROW_SUMS
from shadergpgpu.engine import export
from shadergpgpu.engine.blocks import BlockArray, BlockLayout, has_uniform_blocks
from shadergpgpu.engine.builtin import COPY, FILL, SAXPY
from shadergpgpu.engine.errors import KernelDebugError, ShaderGPGPUError
from shadergpgpu.engine.glraw import BufferArray
from shadergpgpu.engine.layout import BufferLayout

from tests.reference import assert_close

# OUT[r, c] = X[r + dr, c + dc]
SHIFT_SOURCE = """
void main() {
    vec4 v = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        ivec2 p = OUT_pos(l);
        v[l] = X_at(p.x + dr, p.y + dc);
    }
    OUT = v;
}"""
SHIFT = sg.Kernel(source=SHIFT_SOURCE, inputs=("X",),
                  uniforms={"dr": ("int", 0), "dc": ("int", 0)}, name="test/shift")
SHIFT_BUF = sg.Kernel(source=SHIFT_SOURCE, inputs={"X": sg.In(buffer=True)},
                      uniforms={"dr": ("int", 0), "dc": ("int", 0)}, name="test/shift-buffer")

# OUT[i] = X[i + di] by row-major flat index
FLAT = sg.Kernel(source="""
void main() {
    vec4 v = vec4(0.0);
    for (int l = 0; l < 4; ++l)
        if (OUT_live(l)) v[l] = X_get(OUT_index(l) + di);
    OUT = v;
}""", inputs=("X",), uniforms={"di": "int"}, name="test/flat")

# OUT texel (gi, gj) = X texel (gi, gj + dj)
TEXEL = sg.Kernel(source="""
void main() {
    ivec2 g = OUT_grid();
    OUT = X_texel(g.x, g.y + dj);
}""", inputs={"X": sg.In(like="OUT")}, uniforms={"dj": "int"}, name="test/texel")

DIV = sg.Kernel(source="""
void main() {
    ivec2 g = OUT_grid();
    OUT = X_texel(g.x, g.y) / Y_texel(g.x, g.y);
}""", inputs={"X": sg.In(like="OUT"), "Y": sg.In(like="OUT")}, name="test/div")

# OUT0 = X, OUT1 = sqrt(X) (NaN where X < 0)
ROOT2 = sg.Kernel(source="""
void main() {
    ivec2 g = OUT0_grid();
    vec4 x = X_texel(g.x, g.y);
    OUT0 = x;
    OUT1 = sqrt(x);
}""", inputs={"X": sg.In(like="OUT0")}, outputs=2, name="test/sqrt2")

SCALE = sg.Kernel(source="""
void main() {
    ivec2 g = OUT_grid();
    OUT = alpha * X_texel(g.x, g.y);
}""", inputs={"X": sg.In(like="OUT")}, uniforms={"alpha": "float"}, name="test/scale")

# +inf where X > 0 (a sentinel spelled as its bit pattern), else sqrt(X)
SENTINEL = sg.Kernel(source="""
void main() {
    ivec2 g = OUT_grid();
    vec4 x = X_texel(g.x, g.y);
    OUT = mix(sqrt(x), vec4(uintBitsToFloat(0x7F800000u)), greaterThan(x, vec4(0.0)));
}""", inputs={"X": sg.In(like="OUT")}, name="test/sentinel")

# a split loop that reads one column too far: X_at(r, c + 1) for c < X_COLS
ROWSUM_BAD = sg.Kernel(source="""
void main() {
    vec4 s = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        int r = OUT_pos(l).y;
        for (int c = cols_begin; c < cols_end; ++c) s[l] += X_at(r, c + 1);
    }
    OUT = s;
}""", inputs=("X",), split=sg.Split("cols", length=lambda a: a.X.cols, cost=4, extra=4),
    name="test/rowsum-bad")


@pytest.fixture(scope="module")
def ddev():
    d = sg.Device(debug=True)
    yield d
    d.release()


@pytest.fixture(scope="module")
def ndev():
    d = sg.Device(debug=False)
    yield d
    d.release()


@pytest.fixture(scope="module")
def wdev():
    """Debug mode under the webgl2 profile: 4 draw buffers, no float blending (emulated)."""
    d = sg.Device(debug=True, profile="webgl2")
    yield d
    d.release()


def shifted(x, dr, dc):
    """Reference of SHIFT: X[r + dr, c + dc], 0 where that is outside X."""
    out = np.zeros_like(x, dtype=np.float64)
    rows, cols = x.shape
    for r in range(rows):
        for c in range(cols):
            if 0 <= r + dr < rows and 0 <= c + dc < cols:
                out[r, c] = x[r + dr, c + dc]
    return out


def first_bad_read(shape, dr, dc):
    rows, cols = shape
    for r in range(rows):
        for c in range(cols):
            if not (0 <= r + dr < rows and 0 <= c + dc < cols):
                return (r + dr, c + dc)
    return None


def first_nonfinite(a):
    where = np.argwhere(~np.isfinite(a))
    return tuple(int(i) for i in where[0])


# ---- reads out of range ------------------------------------------------------------------------
@pytest.mark.parametrize("dr, dc", [(5, 0), (1, 0), (0, 1), (0, 3), (-1, 0), (0, -2), (-4, 7)])
@pytest.mark.parametrize("packed, order", [(True, "row"), (False, "row"), (True, "col")])
def test_read_out_of_range_names_kernel_input_index(ddev, rng, dr, dc, packed, order):
    x = rng.standard_normal((3, 5))
    X = ddev.array(x, packed=packed, order=order)
    out = ddev.empty((3, 5))
    with pytest.raises(KernelDebugError) as e:
        SHIFT(out, X=X, dr=dr, dc=dc)
    err = e.value
    assert (err.kernel, err.array, err.what) == ("test/shift", "X", "read")
    assert err.index == first_bad_read(x.shape, dr, dc)
    r, c = err.index
    assert f"(row {r}, col {c})" in str(err) and "test/shift" in str(err) and "'X'" in str(err)
    assert "X is 3x5" in str(err)


def test_in_range_reads_give_the_right_result(ddev, rng):
    x = rng.standard_normal((6, 9))
    X = ddev.array(x)
    out = ddev.empty((3, 5))
    SHIFT(out, X=X, dr=2, dc=4)          # reads rows 2..4, cols 4..8: all inside X
    np.testing.assert_array_equal(out.get(), x[2:5, 4:9].astype(np.float32))


def test_non_debug_device_keeps_todays_results(ndev, rng):
    """Off, an out-of-range read raises nothing; elements read in range are right and a read
    past the columns into a packed texel's padding lanes gives the padding's 0."""
    x = rng.standard_normal((3, 5))
    X = ndev.array(x)
    out = ndev.empty((3, 5))
    SHIFT(out, X=X, dr=0, dc=1)
    assert_close(out.get(), shifted(x, 0, 1), rtol=1e-6, atol=0)
    SHIFT(out, X=X, dr=1, dc=0)
    assert_close(out.get()[:2], x[1:], rtol=1e-6, atol=0)


def test_flat_index_past_the_end(ddev, rng):
    x = rng.standard_normal((3, 5))
    X = ddev.array(x)
    out = ddev.empty((3, 5))
    FLAT(out, X=X, di=0)
    assert_close(out.get(), x, rtol=1e-6, atol=0)
    with pytest.raises(KernelDebugError) as e:
        FLAT(out, X=X, di=4)
    assert e.value.index == 15 and e.value.array == "X"      # element 11 reads 15 = 3 * 5
    assert "flat index 15" in str(e.value) and "X_get" in str(e.value)
    with pytest.raises(KernelDebugError) as e:
        FLAT(out, X=X, di=-1)
    assert e.value.index == -1


def test_texel_read_past_the_grid(ddev, rng):
    x = rng.standard_normal((2, 10))               # 3 texels a row
    X = ddev.array(x)
    out = ddev.empty((2, 10))
    with pytest.raises(KernelDebugError) as e:
        TEXEL(out, X=X, dj=1)
    assert e.value.index == (0, 3) and "grid texel (0, 3)" in str(e.value)
    assert "2x3" in str(e.value)


@pytest.mark.buffer_textures('a buffer input')
def test_buffer_input(ddev, rng):
    m = rng.standard_normal((3, 6))
    buf = BufferArray.from_host(ddev, BufferLayout(3, 6), m)
    out = ddev.empty((3, 6))
    try:
        SHIFT_BUF(out, X=buf, dr=0, dc=0)
        assert_close(out.get(), m, rtol=1e-6, atol=0)
        with pytest.raises(KernelDebugError) as e:
            SHIFT_BUF(out, X=buf, dr=2, dc=0)
        assert e.value.index == first_bad_read(m.shape, 2, 0) == (3, 0)
    finally:
        buf.release()


def test_uniform_block_input(ddev):
    if not has_uniform_blocks(ddev):
        pytest.skip("no uniform blocks")
    K = sg.Kernel(source="""
    void main() { OUT = X_vec4(OUT_grid().y + k); }""", inputs={"X": sg.In(block=True)},
        uniforms={"k": "int"}, name="test/block")
    blk = BlockArray(ddev, BlockLayout(4), data=np.arange(16.0))
    out = ddev.empty((1, 16))
    try:
        K(out, X=blk, k=0)
        np.testing.assert_array_equal(out.get()[0], np.arange(16.0))
        with pytest.raises(KernelDebugError) as e:
            K(out, X=blk, k=1)
        assert e.value.index == 4 and "X_vec4" in str(e.value)
    finally:
        blk.release()


def test_wrapped_arrays():
    """Arrays wider than the texture wrap: the indices are still logical, and the fragments
    past the last texel (wrap padding) read nothing that reaches an element: no alarm."""
    with sg.Device(debug=True, limits=sg.Limits(max_texture_size=16)) as d:
        x = np.arange(3 * 150, dtype=np.float64).reshape(3, 150)
        X = d.array(x)
        assert X.layout.wrapped
        out = d.empty_like(X)
        COPY(out, X=X)
        np.testing.assert_array_equal(out.get(), x)
        with pytest.raises(KernelDebugError) as e:
            SHIFT(out, X=X, dr=0, dc=2)
        assert e.value.index == first_bad_read(x.shape, 0, 2) == (0, 150)


def test_split_loop_under_the_loop_cap(rng):
    with sg.Device(debug=True, limits=sg.Limits(loop_cap=64)) as d:
        x = rng.standard_normal((3, 200))
        X = d.array(x)
        out = d.empty((1, 3))
        assert ROW_SUMS(out, X=X) > 1                       # cut across blended passes
        assert_close(out.get()[0], x.sum(axis=1), rtol=1e-4, atol=1e-4)
        with pytest.raises(KernelDebugError) as e:
            ROWSUM_BAD(out, X=X)
        assert e.value.index == (0, 200) and e.value.kernel == "test/rowsum-bad"


def test_prepared_pass(ddev, rng):
    x = rng.standard_normal((4, 8))
    X = ddev.array(x)
    out = ddev.empty((4, 8))
    p = SHIFT.prepare(out, X=X)
    p.run()
    assert_close(out.get(), x, rtol=1e-6, atol=0)
    with pytest.raises(KernelDebugError) as e:
        p.run(dr=4)
    assert e.value.index == (4, 0)
    p.run(dr=0, dc=0)
    with pytest.raises(KernelDebugError) as e:
        p.repeat("dc", [0, 1, 2])
    assert e.value.index == (0, 8)


def test_passes_are_counted_once(ddev, rng):
    """The check pass is not a pass of the algorithm: the counter sees the real passes."""
    X = ddev.array(rng.standard_normal((2, 4)))
    out = ddev.empty((2, 4))
    ddev.counter.reset()
    SHIFT(out, X=X)
    SAXPY(out, X=X, Y=X, alpha=1.0)
    assert ddev.counter.total == 2


# ---- NaN and Inf -----------------------------------------------------------------------------
def test_nan_from_finite_inputs(ddev):
    x = np.ones((3, 5))
    y = np.ones((3, 5))
    x[1, 2] = y[1, 2] = 0.0                       # 0 / 0
    x[2, 4] = -1.0
    y[2, 4] = 0.0                                 # -1 / 0
    out = ddev.empty((3, 5))
    with pytest.raises(KernelDebugError) as e:
        DIV(out, X=ddev.array(x), Y=ddev.array(y))
    with np.errstate(divide="ignore", invalid="ignore"):
        ref = x.astype(np.float32) / y.astype(np.float32)
    err = e.value
    assert (err.kernel, err.array, err.what) == ("test/div", "OUT", "nonfinite")
    assert err.index == first_nonfinite(ref) == (1, 2)
    assert "nan at index (1, 2)" in str(err) and "2 non-finite" in str(err)


def test_padding_lanes_are_not_elements(ddev):
    """3 x 5 packed: each row's second texel has 3 padding lanes, 0 / 0 = NaN there."""
    out = ddev.empty((3, 5))
    DIV(out, X=ddev.array(np.ones((3, 5))), Y=ddev.array(np.full((3, 5), 2.0)))
    np.testing.assert_array_equal(out.get(), np.full((3, 5), 0.5))


def test_names_the_output(ddev):
    x = np.arange(12.0).reshape(3, 4)
    x[2, 1] = -4.0
    o0, o1 = ddev.empty((3, 4)), ddev.empty((3, 4))
    with pytest.raises(KernelDebugError) as e:
        ROOT2([o0, o1], X=ddev.array(x))
    with np.errstate(invalid="ignore"):
        ref = np.sqrt(x)
    assert e.value.array == "OUT1" and e.value.index == first_nonfinite(ref) == (2, 1)


def test_overflow_to_inf(ddev):
    x = np.full((2, 4), 1e30)
    x[1, 3] = 1e38
    out = ddev.empty((2, 4))
    with pytest.raises(KernelDebugError) as e:
        SCALE(out, X=ddev.array(x), alpha=100.0)
    with np.errstate(over="ignore"):
        ref = np.float32(100.0) * x.astype(np.float32)
    assert e.value.index == first_nonfinite(ref) == (1, 3) and "inf" in str(e.value)


def test_nan_or_inf_in_an_input_does_not_raise(ddev):
    x = np.ones((3, 5))
    x[0, 1] = np.nan
    y = np.ones((3, 5))
    y[2, 2] = 0.0
    out = ddev.empty((3, 5))
    DIV(out, X=ddev.array(x), Y=ddev.array(y))     # NaN comes in; 1 / 0 rides along
    with np.errstate(divide="ignore"):
        ref = x / y
    np.testing.assert_array_equal(out.get(), ref.astype(np.float32))
    SCALE(out, X=ddev.array(np.ones((3, 5))), alpha=np.inf)    # an infinite uniform
    assert np.isposinf(out.get()).all()
    FILL(out, value=np.nan)
    assert np.isnan(out.get()).all()


def test_sentinel_infinity_spelled_by_the_kernel(ddev):
    """A kernel that spells +inf as its bit pattern may write it; NaN still raises."""
    x = np.array([[1.0, 4.0, 9.0, 2.0]])
    out = ddev.empty((1, 4))
    SENTINEL(out, X=ddev.array(x))
    assert np.isposinf(out.get()).all()
    with pytest.raises(KernelDebugError) as e:
        SENTINEL(out, X=ddev.array(-x))
    assert e.value.index == (0, 0) and "nan" in str(e.value)


@pytest.mark.float_blend('blend=True')
def test_blending_counts_what_the_output_held(ddev):
    acc = ddev.array(np.array([[np.nan, 1.0, 2.0, 3.0]]))
    ones = ddev.array(np.ones((1, 4)))
    DIV(acc, X=ones, Y=ones, blend=True)          # NaN + 1 where the output held NaN: fine
    np.testing.assert_array_equal(acc.get(), [[np.nan, 2.0, 3.0, 4.0]])
    zeros = ddev.array(np.zeros((1, 4)))
    with pytest.raises(KernelDebugError) as e:
        DIV(acc, X=zeros, Y=zeros, blend=True)    # 0 / 0 blended into finite elements
    assert e.value.index == (0, 1)


def test_rect_checks_only_the_drawn_texels(ddev):
    out = ddev.array(np.full((2, 8), np.nan))     # NaN outside the rectangle stays
    DIV(out, X=ddev.array(np.ones((2, 8))), Y=ddev.array(np.ones((2, 8))), rect=(0, 0, 1, 2))
    got = out.get()
    assert np.all(got[:, :4] == 1.0) and np.isnan(got[:, 4:]).all()


# ---- the webgl2 profile ------------------------------------------------------------------------
def test_webgl2_profile(wdev, rng):
    x = rng.standard_normal((3, 5))
    X = wdev.array(x)
    out = wdev.empty((3, 5))
    SHIFT(out, X=X, dr=0, dc=0)
    assert_close(out.get(), x, rtol=1e-6, atol=0)
    with pytest.raises(KernelDebugError) as e:
        SHIFT(out, X=X, dr=-2, dc=0)
    assert e.value.index == (-2, 0)
    # accumulation by ping-pong passes (no float blending): the user's kernel is named
    acc = wdev.array(np.ones((3, 5)))
    wdev.run(DIV, acc, inputs={"X": X, "Y": X}, accumulate=True)
    assert_close(acc.get(), np.full((3, 5), 2.0), rtol=1e-6, atol=0)
    z = wdev.array(np.zeros((3, 5)))
    with pytest.raises(KernelDebugError) as e:
        wdev.run(DIV, acc, inputs={"X": z, "Y": z}, accumulate=True)
    assert e.value.kernel == "test/div" and e.value.index == (0, 0)


def test_kernel_using_every_draw_buffer(wdev, ddev, rng):
    """The check pass has a render target of its own: a kernel may use all the others."""
    for d in (wdev, ddev):
        n = d.max_outputs
        K = sg.Kernel(source="""
        void main() {
            ivec2 g = OUT0_grid();
            vec4 x = X_at(g.x + dr, 0) * vec4(1.0);
            %s
        }""" % "\n".join(f"OUT{k} = x + {k}.0;" for k in range(n)),
            inputs=("X",), outputs=n, uniforms={"dr": "int"}, name=f"test/mrt{n}")
        X = d.array(rng.standard_normal((2, 1)))
        outs = [d.empty((2, 4)) for _ in range(n)]
        K(outs, X=X, dr=0)
        with pytest.raises(KernelDebugError) as e:
            K(outs, X=X, dr=1)
        assert e.value.index == (2, 0)


# ---- off by default, the environment variable, sources -----------------------------------------
def test_environment_variable(monkeypatch):
    monkeypatch.setenv("SHADERGPGPU_DEBUG", "1")
    with sg.Device() as d:
        assert d.debug
        X = d.array(np.ones((2, 4)))
        with pytest.raises(KernelDebugError):
            SHIFT(d.empty((2, 4)), X=X, dr=2)
    with sg.Device(debug=False) as d:          # the argument wins
        assert not d.debug
    monkeypatch.setenv("SHADERGPGPU_DEBUG", "0")
    with sg.Device() as d:
        assert not d.debug
    monkeypatch.delenv("SHADERGPGPU_DEBUG")
    with sg.Device() as d:
        assert not d.debug and d.sanitizer is None


def _real_sources(d):
    return sorted(c.text for c in d._compiled.values())


def test_debug_and_normal_devices_alternate(rng):
    """Used in turns, a debug and a normal device keep their own programs: the normal one
    never raises, the debug one always does, and both draw with the same real program."""
    x = rng.standard_normal((3, 5))
    a, b = sg.Device(debug=True), sg.Device(debug=False)
    try:
        for _ in range(3):
            for d in (a, b):
                X, out = d.array(x), d.empty((3, 5))
                if d.debug:
                    with pytest.raises(KernelDebugError) as e:
                        SHIFT(out, X=X, dr=1)
                    assert e.value.index == (3, 0)
                else:
                    SHIFT(out, X=X, dr=1)
                    assert_close(out.get()[:2], x[1:], rtol=1e-6, atol=0)
                SHIFT(out, X=X)
                assert_close(out.get(), x, rtol=1e-6, atol=0)
                X.release()
                out.release()
        src_a, src_b = _real_sources(a), _real_sources(b)
        assert src_a == src_b and not any("SG_DEBUG" in s or "sg_debug" in s for s in src_b)
        assert a.n_programs == b.n_programs and a.shaders.compiles == b.shaders.compiles
        check = [a.sanitizer.source(c) for c in a._compiled.values()]
        assert check and all("#define SG_DEBUG 1" in s and "sg_debug_hit" in s for s in check)
        # after a trim the debug device compiles both again and still checks
        a.trim()
        with pytest.raises(KernelDebugError):
            SHIFT(a.empty((3, 5)), X=a.array(x), dr=-1)
        SHIFT(b.empty((3, 5)), X=b.array(x), dr=-1)
    finally:
        a.release()
        b.release()


def test_real_pass_source_is_unchanged(ddev, ndev, rng):
    """The program that draws is the one a normal device compiles (byte for byte), for user
    kernels and library ones; only the check pass carries the guards."""
    x = rng.standard_normal((3, 5))
    for d in (ddev, ndev):
        X, Y = d.array(x), d.array(x + 3.0)
        out = d.empty((3, 5))
        SHIFT(out, X=X)
        DIV(out, X=X, Y=Y)
        SAXPY(out, X=X, Y=Y, alpha=2.0)
    for k in (SHIFT, DIV, SAXPY):
        keys = [key for key in ndev._compiled.keys() if key[0] is k]
        assert keys
        for key in keys:
            text = ndev._compiled.get(key).text
            assert ddev._compiled.get(key).text == text
            assert "sg_debug" not in text and "SG_DEBUG" not in text
        # the same text as the GLSL ES export assembles for these layouts (packed row-major)
        assert text == export.final_source(k, ndev.shaders)


def test_check_pass_is_glsl_es(ddev, rng):
    """The check pass of a kernel is valid GLSL ES 3.00 too (as every kernel is)."""
    if export.glslang() is None:
        pytest.skip("glslangValidator not installed")
    X = ddev.array(rng.standard_normal((3, 5)))
    SHIFT(ddev.empty((3, 5)), X=X)
    c = next(c for key, c in ddev._compiled.items() if key[0] is SHIFT)
    ok, msg = export.check_es(export.to_es(ddev.sanitizer.source(c)))
    assert ok, msg


def test_error_is_exported():
    assert sg.KernelDebugError is sg.engine.KernelDebugError is KernelDebugError
    assert issubclass(KernelDebugError, ShaderGPGPUError)
    assert "KernelDebugError" in sg.__all__ and "KernelDebugError" in sg.engine.__all__
