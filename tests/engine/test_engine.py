"""The render-pass engine: kernels vs numpy, blending, MRT, errors, pool, counters."""

import numpy as np
import pytest

import shadergpgpu as sg
from tests.kernels_for_tests import ACCUMULATE, MRT_SCALE
from shadergpgpu.engine.builtin import COPY, FILL, SAXPY
from shadergpgpu.engine import context
from shadergpgpu.engine.errors import CapabilityError, ShaderCompileError

from tests.reference import assert_close


@pytest.mark.parametrize("shape", [(1,), (5,), (17, 3), (64, 65)])
def test_saxpy_matches_numpy(dev, rng, shape):
    x = rng.standard_normal(shape)
    y = rng.standard_normal(shape)
    X, Y = dev.array(x), dev.array(y)
    Z = dev.empty_like(X)
    dev.run(SAXPY, Z, inputs={"X": X, "Y": Y}, uniforms={"alpha": -1.75})
    ref = -1.75 * x + y  # float64
    assert_close(Z.get(), ref, rtol=1e-6, atol=1e-6, what=f"saxpy {shape}")
    assert Z.get().shape == shape and Z.get().dtype == np.float32
    for a in (X, Y, Z):
        a.release()


@pytest.mark.float_blend('blend=True')
def test_blend_accumulates_100_passes(dev, rng):
    terms = rng.uniform(-1, 1, size=(100, 13, 7))
    acc = dev.zeros((13, 7))
    with dev.phase("accumulate"):
        for t in terms:
            x = dev.array(t)
            dev.run(ACCUMULATE, acc, inputs={"X": x}, uniforms={"scale": 1.0},
                    blend=True)
            x.release()
    assert dev.counter.passes["accumulate"] == 100
    assert_close(acc.get(), terms.sum(axis=0), rtol=0, atol=1e-5)


def test_prepared_pass_ping_pong(dev):
    """x_{k+1} = 2 x_k + x_k via prepared saxpy and swapped buffers: x_10 = 3^10 x_0."""
    x0 = np.linspace(-1, 1, 23)
    a, b = dev.array(x0), dev.empty((23,))
    p = dev.prepare(SAXPY, b, inputs={"X": a, "Y": a}, uniforms={"alpha": 2.0})
    for _ in range(10):
        p.run()
        a, b = b, a
        p.bind(X=a, Y=a, OUT=b)
    assert_close(a.get(), 3.0 ** 10 * x0, rtol=1e-6, atol=0)


def test_eight_render_targets(dev, rng):
    x = rng.standard_normal((9, 11))
    X = dev.array(x)
    outs = [dev.empty_like(X) for _ in range(8)]
    dev.run(MRT_SCALE, outs, inputs={"X": X})
    for k, o in enumerate(outs):
        assert_close(o.get(), (k + 1) * x, rtol=1e-6, atol=0)
    with pytest.raises(ValueError, match="1 to 8 outputs"):
        dev.run(MRT_SCALE, outs + [dev.empty_like(X)], inputs={"X": X})


def test_sub_rectangle_and_counts(dev):
    out = dev.zeros((8, 16))            # texture 4 x 8
    dev.counter.reset()
    with dev.phase("rect"):
        dev.run(FILL, out, uniforms={"value": 5.0}, rect=(1, 2, 2, 3))
    got = out.get()
    want = np.zeros((8, 16))
    want[2:5, 4:12] = 5.0
    np.testing.assert_array_equal(got, want)
    snap = dev.counter.snapshot()["rect"]
    assert snap["passes"] == 1 and snap["fragments"] == 6
    with pytest.raises(ValueError, match="not inside"):
        dev.run(FILL, out, uniforms={"value": 1.0}, rect=(3, 0, 2, 1))


@pytest.mark.parametrize("timing", [True, False])
def test_timing_records_gpu_time(timing):
    """With ``timing=True`` a timer query's result is recorded for the phase and its kernel
    (the same value in both); without, none is. What the time is belongs to benchmarks/."""
    d = sg.Device(timing=timing)
    x = d.zeros((64, 64))
    with d.phase("t"):
        d.fill(x, 1.0)
    snap = d.counter.snapshot()["t"]
    assert snap["passes"] == 1
    assert snap["gpu_ms"] == snap["kernels"]["engine/fill"]["gpu_ms"]
    assert (snap["gpu_ms"] != 0.0) is timing
    d.release()


def test_pool_does_not_grow_over_10000_passes(dev):
    x = dev.array(np.ones(32))
    created = dev.pool.created
    for _ in range(10_000):
        y = dev.empty_like(x)
        dev.run(COPY, y, inputs={"X": x})
        y.release()
    assert dev.pool.created - created <= 1
    np.testing.assert_array_equal(x.get(), np.ones(32))
    # arrays dropped without release also return to the pool
    for _ in range(100):
        dev.empty((32,))
    assert dev.pool.created - created <= 2


def test_upload_dtypes_and_errors(dev):
    for dt in (np.int8, np.uint16, np.int64, np.float16, np.float64, bool):
        a = (np.arange(6).reshape(2, 3) % 2).astype(dt)
        np.testing.assert_array_equal(dev.array(a).get(), a.astype(np.float32))
    with pytest.raises(TypeError, match="complex"):
        dev.array(np.ones(3, dtype=complex))
    with pytest.raises(TypeError, match="real numeric"):
        dev.array(np.array(["a", "b"], dtype=object))
    with pytest.raises(ValueError, match="empty"):
        dev.array(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="1-D or 2-D"):
        dev.array(np.zeros((2, 2, 2)))
    x = dev.array(np.ones(4))
    x.release()
    with pytest.raises(ValueError, match="released"):
        x.get()
    with pytest.raises(ValueError, match="released"):
        dev.run(FILL, x, uniforms={"value": 0.0})


@pytest.mark.parametrize("c", [1, 2, 3, 4])
def test_image_round_trip(dev, rng, c):
    img = rng.uniform(0, 255, size=(5, 7, c))
    a = dev.image(img)
    assert_close(a.get(), img.astype(np.float32), rtol=1e-7, atol=0, what=f"{c} channels")
    with pytest.raises(ValueError, match="1..4 channels"):
        dev.image(np.zeros((4, 4, 5)))


def test_feedback_and_uniform_errors(dev):
    x = dev.array(np.ones(8))
    with pytest.raises(ValueError, match="both an input and an output"):
        dev.run(COPY, x, inputs={"X": x})
    y = dev.empty_like(x)
    with pytest.raises(ValueError, match="unknown uniform 'alhpa'"):
        dev.run(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alhpa": 1.0})


def test_compile_error_names_file_and_line(dev, tmp_path):
    inc = tmp_path / "helpers.glsl"
    inc.write_text("// helper\nfloat twice(float v) {\n    return 2.0 * v\n}\n")
    bad = tmp_path / "bad.frag"
    bad.write_text('#include "helpers.glsl"\nvoid main() {\n    OUT = vec4(twice(1.0));\n}\n')
    with pytest.raises(ShaderCompileError) as e:
        dev.run(sg.Kernel(str(bad)), dev.empty((4,)))
    msg = str(e.value)
    assert "helpers.glsl:3" in msg or "helpers.glsl:4" in msg, msg
    assert "driver message" in msg
    bad.write_text("void main() {\n    OUT = vec4(undefined_name);\n}\n")
    with pytest.raises(ShaderCompileError, match=r"bad\.frag:2"):
        dev.run(sg.Kernel(str(bad)), dev.empty((4,)))


def test_program_cache_by_source(dev):
    x = dev.array(np.ones(4))
    y = dev.empty_like(x)
    n = dev.shaders.compiles
    for _ in range(5):
        dev.run(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 1.0})
    assert dev.shaders.compiles - n <= 1
    # another layout is another program
    x2 = dev.array(np.ones(4), packed=False)
    dev.run(SAXPY, dev.empty_like(x2), inputs={"X": x2, "Y": x2},
            uniforms={"alpha": 1.0})
    assert dev.shaders.compiles - n <= 2


def test_missing_capability_is_clear():
    caps = context.Capabilities(
        backend="egl", vendor="x", renderer="toy", version="3.3", gl_version_code=330,
        max_texture_size=4096, max_draw_buffers=8, max_color_attachments=8,
        max_texture_image_units=16, rgba32f_renderable=True, float_blending=False,
        float_precision_ok=False, timer_queries=False)
    with pytest.raises(CapabilityError) as e:
        context.check(caps)
    msg = str(e.value)
    assert "full float32 precision" in msg and "16-bit" in msg
    assert "additive blending" in msg and "libgl1-mesa-dri" in msg


def test_no_gl_is_clear(monkeypatch):
    import moderngl

    def boom(*a, **k):
        raise Exception("eglInitialize failed")

    from shadergpgpu.engine.gles import resolve_api
    if resolve_api(None) == "gles":   # the ES backend attaches moderngl to its own EGL context
        monkeypatch.setattr(moderngl.mgl, "create_context", boom)
        with pytest.raises(CapabilityError, match="libegl1 libgles2 libgl1-mesa-dri"):
            sg.Device()
    monkeypatch.setattr(moderngl, "create_context", boom)
    with pytest.raises(CapabilityError, match="libegl1 libgl1-mesa-dri"):
        sg.Device(api="gl")
    with pytest.raises(ValueError, match="unknown backend"):
        sg.Device(backend="vulkan")


def test_backend_from_environment(monkeypatch):
    monkeypatch.setenv("SHADERGPGPU_BACKEND", "nonsense")
    with pytest.raises(ValueError, match="unknown backend 'nonsense'"):
        sg.Device()
    monkeypatch.setenv("SHADERGPGPU_BACKEND", "EGL")
    d = sg.Device()
    assert d.caps.backend == "egl"
    d.release()


def test_info_command(capsys):
    from shadergpgpu.frontends.cli import main

    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for key in ("renderer", "rgba32f_renderable", "float_blending", "max_texture_size",
                "max_draw_buffers"):
        assert key in out


def test_trim_then_reallocate_writes_the_new_texture(dev):
    """Deleted texture names are reused by GL: cached framebuffers must not outlive them."""
    for k in range(3):
        a = dev.array(np.full((64, 64), float(k)))
        b = dev.empty_like(a)
        dev.run(COPY, b, inputs={"X": a})
        np.testing.assert_array_equal(b.get(), np.full((64, 64), float(k), np.float32))
        a.release()
        b.release()
        assert dev.trim() >= 2
