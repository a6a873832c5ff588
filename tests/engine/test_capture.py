"""The engine's capture (engine/capture.py): one recorder of passes for the blur's recipes and,
through the trace, the WebGL2 bundles.

A ``with capture(dev)`` block records each ``Device.run`` call as a prepared pass under its phase
label; ``draw=False`` draws nothing; ``own_arrays=True`` keeps the arrays the block allocates
(released by the code or a scope inside the block) until the capture is released; ``replay``
draws the steps again with slots bound anew and uniforms set again. A capture replayed under an
open trace records the same draws as the block traced live, and a step's own description
(:class:`PassRecord`) names the program, textures, viewport and blend the trace reads from GL.
"""
import json

import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.algorithms.blur.api import _blur_passes
from shadergpgpu.algorithms.blur.recipes import Recipe
from shadergpgpu.engine.capture import Capture, PassRecord, capture, capturing
from shadergpgpu.engine.trace import Trace

from tests.reference import assert_close

SCALE = sg.Kernel(source="void main() { OUT = X_texel(OUT_grid().x, OUT_grid().y) * v; }",
                  inputs={"X": sg.In(like="OUT")}, uniforms={"v": "float"},
                  name="capture-scale")
FILL = sg.Kernel(source="void main() { OUT = vec4(v); }", uniforms={"v": "float"},
                 name="capture-fill")


@pytest.fixture(scope="module")
def dev():
    d = sg.Device()
    yield d
    d.release()


def test_a_capture_records_each_run_and_replays_it_with_new_arrays_and_values(dev):
    x = dev.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = dev.empty((3, 4))
    with capture(dev) as cap:
        assert capturing(dev) is cap
        with dev.phase("scale"):
            assert dev.run(SCALE, y, {"X": x}, {"v": 2.0}) == 1
    assert capturing(dev) is None
    assert [(st.label, st.pass_.kernel.name) for st in cap.steps] == [("scale", "capture-scale")]
    np.testing.assert_array_equal(y.get(), 2.0 * x.get())       # drawn while recorded
    x2, y2 = dev.array(np.ones((3, 4), np.float32)), dev.empty((3, 4))
    cap.slots(x=x, y=y)
    dev.counter.reset()
    cap.replay(lambda step: {"v": 5.0}, x=x2, y=y2)
    np.testing.assert_array_equal(y2.get(), np.full((3, 4), 5.0, np.float32))
    assert dev.counter.passes.get("scale") == 1


def test_draw_false_prepares_without_drawing(dev):
    y = dev.array(np.zeros(4, np.float32))
    dev.counter.reset()
    with capture(dev, draw=False) as cap:
        assert dev.run(FILL, y, uniforms={"v": 7.0}) == 1
    assert dev.counter.total == 0 and len(cap.steps) == 1
    np.testing.assert_array_equal(y.get(), np.zeros(4, np.float32))
    cap.replay()
    np.testing.assert_array_equal(y.get(), np.full(4, 7.0, np.float32))


def test_a_step_under_the_starting_label_replays_under_the_callers(dev):
    y = dev.empty(4)
    with dev.phase("outer"):
        with capture(dev, draw=False) as cap:
            dev.run(FILL, y, uniforms={"v": 1.0})
            with dev.phase("inner"):
                dev.run(FILL, y, uniforms={"v": 2.0})
    assert [st.label for st in cap.steps] == [None, "inner"]
    dev.counter.reset()
    with dev.phase("later"):
        cap.replay()
    assert dev.counter.passes.get("later") == 1 and dev.counter.passes.get("inner") == 1


def test_own_arrays_keeps_what_the_block_releases_until_the_capture_is_released(dev):
    before = dev.empty(4)
    with capture(dev, draw=False, own_arrays=True) as cap:
        with dev.scope() as s:
            tmp = s.empty(4)
            dev.run(FILL, tmp, uniforms={"v": 3.0})
        made = dev.empty(4)
        made.release()
        before.release()            # not the capture's: released at once
    assert before.released and not tmp.released and not made.released
    assert cap.arrays == [tmp, made] and cap.nbytes == 2 * tmp.layout.nbytes
    cap.replay()
    np.testing.assert_array_equal(tmp.get(), np.full(4, 3.0, np.float32))
    cap.release()
    assert tmp.released and made.released and cap.steps == []


def test_an_exception_in_the_block_releases_what_the_capture_owns(dev):
    with pytest.raises(RuntimeError, match="boom"):
        with capture(dev, draw=False, own_arrays=True) as cap:
            a = dev.empty(4)
            raise RuntimeError("boom")
    assert a.released and capturing(dev) is None and isinstance(cap, Capture)


def test_captures_do_not_nest_and_take_no_slices(dev):
    y = dev.empty(4)
    with capture(dev):
        with pytest.raises(RuntimeError, match="already open"):
            with capture(dev):
                pass
        with pytest.raises(ValueError, match="slices"):
            dev.run(FILL, y, uniforms={"v": 1.0}, slices=2)


def _draws(t: Trace) -> list:
    return [json.dumps({k: op[k] for k in ("kernel", "prog", "uniforms", "viewport", "blend")},
                       sort_keys=True) for op in t.ops if op["op"] == "draw"]


@pytest.mark.parametrize("method,schedule", [("recursive", "hv"), ("recursive", "vtvt"),
                                             ("exact", "hv")])
def test_a_blur_capture_replayed_under_a_trace_records_the_live_blurs_draws(method, schedule):
    dev = sg.Device(profile="webgl2")
    try:
        x = dev.array(np.random.default_rng(0).random((16, 24), dtype=np.float32))
        with sg.trace(dev) as live:
            out = _blur_passes(dev, x, True, 1.5, 2.0, method, "reflect", schedule, None)
            want = out.get()
        with capture(dev, draw=False, own_arrays=True) as cap:
            out2 = _blur_passes(dev, x, True, 1.5, 2.0, method, "reflect", schedule, None)
        with sg.trace(dev) as replayed:
            cap.replay()
        assert _draws(replayed) == _draws(live) and replayed.programs == live.programs
        np.testing.assert_array_equal(out2.get(), want)
        cap.release()
    finally:
        dev.release()


def test_a_steps_record_names_what_the_trace_reads_from_gl(dev):
    x = dev.array(np.ones((3, 4), np.float32))
    y = dev.empty((3, 4))
    with capture(dev, draw=False) as cap:
        dev.run(SCALE, y, {"X": x}, {"v": 2.0}, rect=(0, 0, 1, 1))
    mine = cap.steps[0].record()
    seen = []
    t = Trace(dev)
    t.add = seen.append                 # the trace's reading of the GL state, not serialized
    dev._set_tracer(t)
    try:
        cap.replay()
    finally:
        dev._set_tracer(None)
    gl = seen[0]
    assert isinstance(mine, PassRecord) and isinstance(gl, PassRecord)
    assert (mine.kernel, mine.program, mine.blend) == (gl.kernel, gl.program, gl.blend)
    assert tuple(mine.viewport) == tuple(gl.viewport)
    assert [t.glo for t in mine.targets] == [t.glo for t in gl.targets]
    assert [(u, t.glo) for _, u, t in mine.samplers] == [(u, t.glo) for _, u, t in gl.samplers]
    assert gl.uniforms["v"] == mine.uniforms["v"] == 2.0


def test_a_blur_recipe_is_a_capture_of_the_device_itself():
    dev = sg.Device()
    try:
        x = dev.array(np.random.default_rng(1).random((8, 8), dtype=np.float32))
        recipe = Recipe.record(dev, x, (1.0, 1.0), lambda d: _blur_passes(
            d, x, True, 1.0, 1.0, "recursive", "reflect", "hv", None))
        assert isinstance(recipe.capture, Capture) and recipe.capture.device is dev
        assert all(st.pass_.device is dev for st in recipe.steps)
        assert any(st.tag is not None for st in recipe.steps)      # the line passes' sigma
        out = recipe.run(dev, x, (1.0, 1.0))
        want = sg.gaussian_blur(x, 1.0).get()
        assert_close(out.get(), want, rtol=0, atol=1e-6)
        recipe.release()
    finally:
        dev.release()
