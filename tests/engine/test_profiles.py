"""Device profiles: limits as data, enforced by the engine on the real context."""
import json

import numpy as np
import pytest

import shadergpgpu as sg
from tests.kernels_for_tests import ACCUMULATE, MRT_SCALE, ROW_SUMS
from shadergpgpu.engine import profiles
from shadergpgpu.engine.builtin import SAXPY
from shadergpgpu.engine.glraw import BufferArray
from shadergpgpu.engine.layout import BufferLayout

from tests.reference import assert_close


TOY = {"name": "toy", "description": "a small legacy GPU for tests",
       "limits": {"max_texture_size": 16, "max_draw_buffers": 4, "float32_render": True,
                  "float32_blend": False, "loop_cap": 300, "max_fragment_uniform_components": 896,
                  "max_texture_units": 4, "buffer_textures": False, "glsl": "300 es"},
       "sources": {"max_texture_size": "test value"}}


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    p = tmp_path_factory.mktemp("prof") / "toy.json"
    p.write_text(json.dumps(TOY))
    d = sg.Device(profile=str(p))
    yield d
    d.release()


@pytest.mark.buffer_textures('a BufferArray made directly')
def test_profile_limits_are_enforced(toy):
    assert toy.max_texture_size == 16 and toy.max_outputs == 4 and not toy.float_blending
    assert toy.loop_cap == 300
    x = toy.array(np.arange(200.0))
    assert x.layout.wrapped and x.layout.tex_w <= 16
    with pytest.raises(ValueError, match="1 to 4 outputs under profile 'toy'"):
        MRT_SCALE([toy.empty((3, 4)) for _ in range(8)], X=toy.empty((3, 4)))
    acc = toy.zeros((5, 3))
    with pytest.raises(ValueError, match="float32 blending.*accumulate=True"):
        ACCUMULATE(acc, X=toy.array(np.ones((5, 3))), scale=1.0, blend=True)
    buf = BufferArray.from_host(toy, BufferLayout(2, 4), np.ones((2, 4)))
    K = sg.Kernel(source="void main() { OUT = vec4(A_at(0, 0)); }",
                  inputs={"A": sg.In(buffer="either")}, name="test/buf")
    with pytest.raises(ValueError, match="no buffer textures"):
        K(toy.empty((4,)), A=buf)
    buf.release()


def test_accumulation_by_ping_pong_without_float_blending(toy):
    rng = np.random.default_rng(0)
    terms = rng.uniform(-1, 1, size=(6, 5, 9))
    acc = toy.zeros((5, 9))
    toy.counter.reset()
    with toy.phase("acc"):
        for t in terms:
            n = toy.run(ACCUMULATE, acc, inputs={"X": toy.array(t)}, uniforms={"scale": 1.0},
                        accumulate="add")
            assert n == toy.accumulate_passes(1, "add") == 3
    assert toy.counter.passes["acc"] == 18
    assert_close(acc.get(), terms.sum(axis=0), rtol=0, atol=1e-5)
    # max by ping-pong, inside a sub-rectangle only
    m = toy.zeros((4, 8))                 # texture 2 x 4
    toy.run(ACCUMULATE, m, inputs={"X": toy.array(np.full((4, 8), 3.0))},
            uniforms={"scale": 1.0}, accumulate="max", rect=(1, 1, 1, 2))
    want = np.zeros((4, 8))
    want[1:3, 4:8] = 3.0
    np.testing.assert_array_equal(m.get(), want)
    # a prepared accumulating pass
    acc2 = toy.zeros((5, 9))
    p = toy.prepare(ACCUMULATE, acc2, inputs={"X": toy.array(terms[0])},
                    uniforms={"scale": 2.0}, accumulate="add")
    p.run()
    p.run()
    assert_close(acc2.get(), 4 * terms[0], rtol=1e-6, atol=0)


def test_split_loops_under_the_profile_cap_without_blending(toy):
    x = np.random.default_rng(1).uniform(-1, 1, (3, 200))
    out = toy.empty((1, 3))
    n = ROW_SUMS(out, X=toy.array(x))
    assert n == 3 + 2 * 2 * 1            # 3 slices; the 2 after the first by ping-pong
    assert_close(out.get()[0], x.sum(axis=1), rtol=0, atol=1e-4)


def test_profile_from_environment_and_errors(monkeypatch, tmp_path):
    p = tmp_path / "toy.json"
    p.write_text(json.dumps(TOY))
    monkeypatch.setenv("SHADERGPGPU_PROFILE", str(p))
    d = sg.Device()
    assert d.profile.name == "toy" and d.max_outputs == 4
    d.release()
    monkeypatch.delenv("SHADERGPGPU_PROFILE")
    with pytest.raises(ValueError, match="unknown device profile 'nope'"):
        sg.Device(profile="nope")
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "bad", "limits": {"max_draw_buffers": 0}}))
    with pytest.raises(ValueError, match="max_draw_buffers must be a positive integer"):
        profiles.load(str(bad))
    bad.write_text(json.dumps({"name": "bad", "limits": {"warp_size": 32}}))
    with pytest.raises(ValueError, match="unknown limit"):
        profiles.load(str(bad))
    nofloat = tmp_path / "nofloat.json"
    nofloat.write_text(json.dumps({"name": "nofloat", "limits": {"float32_render": False}}))
    with pytest.raises(sg.CapabilityError, match="no float32 render targets"):
        sg.Device(profile=str(nofloat))


def test_native_is_the_device(dev):
    assert dev.profile.name == "native" and dev.profile.is_native
    assert dev.max_outputs == min(8, dev.caps.max_draw_buffers)


def test_builtin_profiles_load_with_sources():
    for name in profiles.names():
        p = profiles.load(name)
        assert p.name == name
        if name != "native":
            missing = [k for k, v in p.limits.items() if v is not None and k not in p.sources]
            assert not missing, f"{name}: limits without a source: {missing}"


@pytest.mark.parametrize("name", profiles.names())
def test_saxpy_under_every_builtin_profile(name):
    x = np.linspace(-2, 2, 37)
    d = sg.Device(profile=name)
    X = d.array(x)
    Y = d.empty_like(X)
    SAXPY(Y, X=X, Y=X, alpha=0.5)
    assert_close(Y.get(), 1.5 * x, rtol=1e-6, atol=0, what=f"saxpy under {name}")
    d.release()


def test_repeat_with_emulated_accumulation_and_rects(toy, dev):
    """Pass.repeat equals a loop of run() when blending is emulated or a rect is set."""
    K = sg.Kernel(source="void main() { OUT = vec4(v); }", uniforms={"v": "float"},
                  name="test/const")
    for d in (toy, dev):
        acc = d.zeros((4, 8))
        p = d.prepare(K, acc, accumulate="add")
        p.repeat("v", [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(acc.get(), np.full((4, 8), 6.0))
        part = d.zeros((4, 8))                      # texture 2 x 4: rect covers one texel
        q = d.prepare(K, part, rect=(1, 1, 1, 1))
        q.repeat("v", [5.0, 7.0])
        want = np.zeros((4, 8))
        want[1, 4:8] = 7.0
        np.testing.assert_array_equal(part.get(), want)
