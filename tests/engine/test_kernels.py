"""Declared kernels: call validation, generated accessors, the loop budget, bounded caches.

Each "reproducer" test is a case that returned a silently wrong number before kernels were
declared (the engine must now give the right answer or a clear error).
"""
import doctest
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import shadergpgpu as sg
from tests.kernels_for_tests import ROW_SUMS
from shadergpgpu.engine.builtin import COPY, SAXPY
from shadergpgpu.engine.errors import LoopBudgetError, ShaderCompileError, TooLargeError
from shadergpgpu.engine.glraw import BufferArray
from shadergpgpu.engine.layout import BufferLayout

from tests.reference import assert_close

ROOT = Path(__file__).resolve().parents[2]


# the same loop, declared but not splittable: over the cap it must be refused
ROWSUM_FIXED = sg.Kernel(
    source="""
void main() {
    vec4 s = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        for (int c = 0; c < X_COLS; ++c) s[l] += X_at(OUT_pos(l).y, c);
    }
    OUT = s;
}""", inputs=("X",), loop=lambda a: 4 * a.X.cols + 4, name="test/rowsum-fixed",
    hint="use fewer columns")

# OUT = 2 A + B element by element, for any input and output layouts
AXPB = sg.Kernel(
    source="""
void main() {
    vec4 v = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (OUT_live(l)) { ivec2 p = OUT_pos(l); v[l] = k * A_at(p.x, p.y) + B_at(p.x, p.y); }
    }
    OUT = v;
}""", inputs=("A", "B"), uniforms={"k": ("float", 2.0)}, name="test/axpb")


# ---- the reproducers ---------------------------------------------------------------------------
def test_missing_uniform_is_an_error_not_the_previous_value(dev):
    x = dev.array(np.arange(4.0))
    y = dev.empty_like(x)
    dev.run(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 5.0})
    np.testing.assert_array_equal(y.get(), [0, 6, 12, 18])
    with pytest.raises(ValueError, match="missing uniform 'alpha'"):
        dev.run(SAXPY, y, inputs={"X": x, "Y": x})
    p = dev.prepare(SAXPY, y, inputs={"X": x, "Y": x})
    with pytest.raises(ValueError, match="missing uniform"):
        p.run()
    p.run(alpha=1.0)
    np.testing.assert_array_equal(y.get(), [0, 2, 4, 6])


def test_packed_input_into_unpacked_output_is_refused(dev):
    x = dev.array(np.arange(6.0))
    y = dev.empty((6,), packed=False)
    with pytest.raises(ValueError, match="must have the layout of 'OUT'"):
        dev.run(COPY, y, inputs={"X": x})
    # an element-addressed kernel reads across layouts correctly
    AXPB(y, A=x, B=x, k=0.0)
    np.testing.assert_array_equal(y.get(), np.arange(6.0))


@pytest.mark.buffer_textures('a buffer input')
def test_buffer_input_needs_no_manual_attach(dev):
    m = np.arange(30.0).reshape(5, 6)
    buf = BufferArray.from_host(dev, BufferLayout(5, 6), m)
    K = sg.Kernel(source="void main() { vec4 v = vec4(0.0); for (int l = 0; l < 4; ++l) "
                         "if (OUT_live(l)) v[l] = A_at(OUT_pos(l).x, OUT_pos(l).y); OUT = v; }",
                  inputs={"A": sg.In(buffer=True)}, name="test/buffer")
    out = dev.empty((5, 6))
    K(out, A=buf)
    np.testing.assert_array_equal(out.get(), m)
    with pytest.raises(ValueError, match="must be a BufferArray"):
        K(out, A=dev.array(m))
    buf.release()


def test_inputs_of_different_lengths_are_refused(dev):
    x, y = dev.array(np.ones(20)), dev.array(np.ones(10))
    out = dev.empty_like(x)
    with pytest.raises(ValueError, match="must have the layout of 'OUT'"):
        SAXPY(out, X=x, Y=y, alpha=1.0)


def test_row_sum_over_70000_columns_is_right(dev):
    """llvmpipe stops loops at 65,535 iterations: the split range is cut across passes."""
    x = np.random.default_rng(0).standard_normal((3, 70_000))
    out = dev.empty((1, 3))
    n = ROW_SUMS(out, X=dev.array(x))
    if dev.loop_cap is not None:
        assert n >= 5
    assert_close(out.get()[0], x.sum(axis=1), rtol=0, atol=2e-3)


def test_loop_budget_at_a_forced_small_cap():
    d = sg.Device(limits=sg.Limits(loop_cap=400))
    x = np.random.default_rng(1).uniform(-1, 1, (5, 1000))
    X = d.array(x)
    out = d.empty((1, 5))
    assert d.passes_for(ROW_SUMS, {"X": X}, out) == 11      # 4 * 1000 + 4 iterations, 396 per pass
    drawn = 1 + 10 * d.accumulate_passes(1, "add")         # 11, or ping-pong without blending
    assert ROW_SUMS(out, X=X) == drawn
    assert_close(out.get()[0], x.sum(axis=1), rtol=0, atol=1e-4)
    with pytest.raises(LoopBudgetError, match="loop cap of 400.*use fewer columns"):
        ROWSUM_FIXED(out, X=X)
    small = d.array(x[:, :90])
    ROWSUM_FIXED(out, X=small)                            # 364 iterations: under the cap
    assert_close(out.get()[0], x[:, :90].sum(axis=1), rtol=0, atol=1e-4)
    # a prepared pass cuts the range too
    p = d.prepare(ROW_SUMS, out, inputs={"X": X})
    assert p.passes_per_run == drawn
    d.fill(out, 7.0)
    p.run()
    assert_close(out.get()[0], x.sum(axis=1), rtol=0, atol=1e-4)
    with pytest.raises(ValueError, match="loop_cap must be a positive integer"):
        sg.Device(limits=sg.Limits(loop_cap=0))
    d.release()


# ---- declarations and calls --------------------------------------------------------------------
def test_declaration_errors(dev):
    with pytest.raises(ValueError, match="declares uniform"):
        dev.run(sg.Kernel(source="uniform float a;\nvoid main() { OUT = vec4(a); }"),
                dev.empty((4,)))
    with pytest.raises(ValueError, match="reads input 'X' by texel"):
        dev.run(sg.Kernel(source="void main() { OUT = X_texel(0, 0); }", inputs=("X",)),
                dev.empty((4,)), inputs={"X": dev.empty((4,))})
    with pytest.raises(ValueError, match="either a shader file or source"):
        sg.Kernel()
    with pytest.raises(ValueError, match="unknown type"):
        sg.Kernel(source="", uniforms={"a": "double"})
    with pytest.raises(ValueError, match="used twice"):
        sg.Kernel(source="", inputs=("X",), uniforms={"X": "float"})
    with pytest.raises(ValueError, match="reserved"):
        sg.Kernel(source="", inputs=("sg_X",))
    with pytest.raises(ValueError, match="1 to 8 outputs"):
        sg.Kernel(source="", outputs=9)
    with pytest.raises(ValueError, match="like 'Z'"):
        sg.Kernel(source="", inputs={"X": sg.In(like="Z")})


def test_call_errors(dev):
    x = dev.array(np.ones(8))
    y = dev.empty_like(x)
    with pytest.raises(ValueError, match="unknown input"):
        dev.run(SAXPY, y, inputs={"X": x, "Y": x, "Z": x}, uniforms={"alpha": 1.0})
    with pytest.raises(ValueError, match="missing input"):
        dev.run(SAXPY, y, inputs={"X": x}, uniforms={"alpha": 1.0})
    with pytest.raises(TypeError, match="uniform 'alpha' is a float"):
        dev.run(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": "2"})
    K = sg.Kernel(source="void main() { OUT = vec4(float(n) + v.x); }",
                  uniforms={"n": "int", "v": "vec2"}, name="test/types")
    with pytest.raises(TypeError, match="'n' is an int, got 2.5"):
        K(y, n=2.5, v=(1, 2))
    with pytest.raises(ValueError, match="expected 2 numbers, got 3"):
        K(y, n=2, v=(1, 2, 3))
    K(y, n=2.0, v=(1, 2))           # an integral float is an int
    np.testing.assert_array_equal(y.get(), np.full(8, 3.0))
    with pytest.raises(TypeError, match="expected a Kernel"):
        dev.run("engine/copy.frag", y, inputs={"X": x})
    with pytest.raises(ValueError, match="unknown define"):
        dev.run(COPY, y, inputs={"X": x}, defines={"FAST": 1})


def test_defines_do_not_collide_with_inputs(dev):
    K = sg.Kernel(source="void main() { ivec2 g = OUT_grid(); OUT = X_texel(g.x, g.y) * float(X); }",
                  inputs={"X": sg.In(like="OUT")}, defines={"X": 3}, name="test/define-x")
    x = dev.array(np.arange(5.0))
    y = dev.empty_like(x)
    K(y, X=x)
    np.testing.assert_array_equal(y.get(), 3 * np.arange(5.0))
    K(y, X=x, defines={"X": 2})
    np.testing.assert_array_equal(y.get(), 2 * np.arange(5.0))


def test_kernel_files_from_user_folders(dev, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "twice.glsl").write_text("float twice(float v) { return 2.0 * v; }\n")
    (tmp_path / "k.frag").write_text('#include "lib/twice.glsl"\n'
                                     "void main() { OUT = vec4(twice(c)); }\n")
    y = dev.empty((4,))
    sg.Kernel("k.frag", root=tmp_path, uniforms={"c": "float"})(y, c=1.5)
    np.testing.assert_array_equal(y.get(), np.full(4, 3.0))
    sg.Kernel(tmp_path / "k.frag", uniforms={"c": "float"})(y, c=2.0)     # absolute path
    np.testing.assert_array_equal(y.get(), np.full(4, 4.0))
    d = sg.Device(shader_root=tmp_path)                                    # a device's folder
    y2 = d.empty((4,))
    d.run(sg.Kernel("k.frag", uniforms={"c": "float"}), y2, uniforms={"c": 0.5})
    np.testing.assert_array_equal(y2.get(), np.full(4, 1.0))
    d.fill(y2, 2.0)                                                        # package kernels too
    np.testing.assert_array_equal(y2.get(), np.full(4, 2.0))
    d.release()
    with pytest.raises(FileNotFoundError, match="not a folder"):
        sg.Device(shader_root=tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="missing.frag"):
        sg.Kernel("missing.frag")(y)


def test_inline_compile_error_quotes_the_users_line(dev):
    K = sg.Kernel(source="void main() {\n    OUT = vec4(undefined_thing);\n}", name="mine")
    with pytest.raises(ShaderCompileError, match=r"<mine>:2.*\n(.*\n)*.*OUT = vec4\(undefined_thing\)"):
        K(dev.empty((4,)))


layouts = st.tuples(st.booleans(), st.sampled_from(["row", "col"]), st.booleans())


@settings(max_examples=40, deadline=None)
@given(rows=st.integers(1, 23), cols=st.integers(1, 23), a=layouts, b=layouts, o=layouts)
def test_user_kernel_over_every_layout_equals_numpy(dev, small_dev, rows, cols, a, b, o):
    """packed/unpacked x row/col x wrapped (a device whose textures wrap at 16 texels)."""
    rng = np.random.default_rng(rows * 100 + cols)
    x, y = rng.standard_normal((rows, cols)), rng.standard_normal((rows, cols))
    # arrays of one pass live on one device: wrapping is chosen for the whole call
    d = small_dev if (a[2] or b[2] or o[2]) else dev
    try:
        A = d.array(x, packed=a[0], order=a[1])
        B = d.array(y, packed=b[0], order=b[1])
        O = d.empty((rows, cols), packed=o[0], order=o[1])
    except TooLargeError:
        return
    AXPB(O, A=A, B=B, k=-1.5)
    assert_close(O.get(), -1.5 * x + y, rtol=1e-6, atol=1e-6)
    for t in (A, B, O):
        t.release()


# ---- bounded caches ----------------------------------------------------------------------------
def test_one_program_per_layout_kind_not_per_size(dev):
    rng = np.random.default_rng(2)
    n0 = dev.shaders.compiles
    for _ in range(50):
        shape = tuple(int(v) for v in rng.integers(1, 300, size=2))
        x = dev.array(rng.standard_normal(shape))
        y = dev.empty_like(x)
        SAXPY(y, X=x, Y=x, alpha=0.5)
        assert_close(y.get(), 1.5 * x.get(), rtol=1e-6, atol=0)
        x.release()
        y.release()
    assert dev.shaders.compiles - n0 <= 1      # the saxpy program for this layout kind, once


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def test_caches_and_memory_are_bounded_over_random_shapes():
    d = sg.Device(caches=sg.CacheBounds(programs=3, pool_bytes=1 << 20))
    rng = np.random.default_rng(3)
    kernels = [sg.Kernel(source=f"void main() {{ vec4 v = vec4(0.0); for (int l = 0; l < 4; ++l) "
                                f"if (OUT_live(l)) v[l] = {k}.0 * A_at(OUT_pos(l).x, OUT_pos(l).y);"
                                f" OUT = v; }}", inputs=("A",), name=f"test/scale{k}")
               for k in range(6)]
    rss = None
    for i in range(200):
        shape = (int(rng.integers(1, 200)), int(rng.integers(1, 200)))
        packed = bool(rng.integers(0, 2))
        x = rng.standard_normal(shape)
        A = d.array(x, packed=packed)
        out = d.empty(shape)
        k = i % 6
        kernels[k](out, A=A)
        assert_close(out.get(), k * x, rtol=1e-6, atol=1e-6)
        A.release()
        out.release()
        assert d.n_programs <= 3 and len(d._compiled) <= 3
        assert d.pool.idle_bytes <= 1 << 20
        if i == 19:
            rss = _rss_mb()
    assert _rss_mb() - rss <= 50, "resident memory grew by more than 50 MB after 20 calls"
    d.release()


def test_prepared_pass_survives_eviction_of_its_program():
    d = sg.Device(caches=sg.CacheBounds(programs=1))
    x = d.array(np.arange(8.0))
    y = d.empty_like(x)
    p = d.prepare(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 1.0})
    d.run(COPY, d.empty_like(x), inputs={"X": x})       # evicts saxpy's program
    p.run()
    np.testing.assert_array_equal(y.get(), 2 * np.arange(8.0))
    d.release()


# ---- the tree ----------------------------------------------------------------------------------
LANE_ARITHMETIC = re.compile(r"4\s*\*\s*\w+(\.[xy])?\s*\+\s*(l|lane|k|c)\b|<\s*OUT\d?_COLS\b")


def test_no_hand_written_lane_arithmetic_in_shaders():
    """Lane and padding arithmetic lives in the layout layer (OUT_pos, OUT_live, X_flat...)."""
    bad = []
    for root in (ROOT / "shaders", ROOT / "tests" / "shaders", ROOT / "benchmarks" / "shaders"):
        for f in sorted(root.rglob("*")):
            if f.suffix in (".frag", ".glsl"):
                for n, line in enumerate(f.read_text().splitlines(), 1):
                    code = line.split("//")[0]
                    if LANE_ARITHMETIC.search(code):
                        bad.append(f"{f.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "hand-written lane arithmetic:\n" + "\n".join(bad)


def test_no_shader_declares_its_own_uniforms():
    bad = [str(f.relative_to(ROOT)) for f in (ROOT / "shaders").rglob("*")
           if f.suffix in (".frag", ".glsl") and f.parent.name != "common"
           and re.search(r"^\s*uniform\s", f.read_text(), re.M)]
    assert not bad, bad


def test_plans_need_no_import_order():
    code = ("from shadergpgpu.analysis.plans import get_plan; "
            "print(get_plan('sgemm/tile8x4').name)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and "sgemm/tile8x4" in r.stdout, r.stderr


def test_docs_examples_run():
    """Every Python example of docs/kernels.md and the README, in order (a doc's later examples
    may use what its earlier ones made), and the engine's docstring examples."""
    for doc in ("docs/kernels.md", "README.md"):
        text = (ROOT / doc).read_text()
        blocks = re.findall(r"```python\n(.*?)```", text, re.S)
        assert blocks, doc
        names = {}
        for i, code in enumerate(blocks):
            exec(compile(code, f"{doc} (example {i + 1})", "exec"), names)
    from shadergpgpu.engine import device
    r = doctest.testmod(device, optionflags=doctest.ELLIPSIS)
    assert r.attempted > 0 and r.failed == 0


def test_declared_work_is_counted_per_phase(dev):
    """Hand count: saxpy does 2 flops per lane (8 per texel) and 2 texel fetches; bytes
    written default to 16 per output texel. The analysis counts it from the observed calls."""
    from shadergpgpu.analysis.work_recorder import recording
    x = dev.array(np.ones((6, 10)))          # packed: 6 x 3 texels
    y = dev.empty_like(x)
    with recording(dev) as rec:
        dev.counter.reset()
        with dev.phase("w"):
            SAXPY(y, X=x, Y=x, alpha=1.0)
            p = dev.prepare(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 2.0})
            p.run()
            p.repeat("alpha", [1.0, 2.0, 3.0])
        snap = rec.snapshot()["w"]
    assert snap["passes"] == 5 and snap["fragments"] == 5 * 18
    assert snap["flops"] == 5 * 18 * 8 and snap["fetches"] == 5 * 18 * 2
    assert snap["bytes"] == 5 * 18 * 16


def test_kernels_sharing_a_program_survive_each_others_eviction():
    """Two kernels whose final sources are identical share one compiled program; evicting one
    of them from a small cache must not release the program the other still draws with (a
    stale program once gave silently wrong SGEMM results in long test sessions)."""
    src = "void main() { OUT = X_texel(OUT_grid().x, OUT_grid().y) * s + vec4(1.0); }"
    kw = dict(inputs={"X": sg.In(like="OUT")}, uniforms={"s": "float"})
    k1, k2 = sg.Kernel(source=src, **kw), sg.Kernel(source=src, **kw)
    others = [sg.Kernel(source=src.replace("1.0", f"{i}.0"), **kw) for i in range(2, 6)]
    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    with sg.Device(caches=sg.CacheBounds(programs=2)) as d:
        a, out = d.array(x), d.empty((4, 8))
        d.run(k1, out, inputs={"X": a}, uniforms={"s": 2.0})
        p2 = d.prepare(k2, out, inputs={"X": a}, uniforms={"s": 3.0})
        p2.run()
        np.testing.assert_array_equal(out.get(), 3 * x + 1)
        for i, k in enumerate(others):
            # each new kernel evicts the least recently used one: k1 first, while k2 (just
            # used) stays cached and must still draw with a live program
            d.run(k, out, inputs={"X": a}, uniforms={"s": 1.0})
            np.testing.assert_array_equal(out.get(), x + i + 2)
            p2.run()
            np.testing.assert_array_equal(out.get(), 3 * x + 1)
        d.run(k1, out, inputs={"X": a}, uniforms={"s": 5.0})
        np.testing.assert_array_equal(out.get(), 5 * x + 1)
        assert d.n_programs <= 2
