"""What the engine reports to listeners (Device.observe): every kernel call, every pass, every
host event, on each draw path; nothing once the listener is detached; the same passes and
results whether or not anybody listens."""
import numpy as np

from shadergpgpu.engine.builtin import COPY, SAXPY


def _kinds(events, kind):
    return [e for e in events if e.kind == kind]


def test_every_path_reports_its_calls_and_passes(dev):
    x = dev.array(np.ones((4, 8)))
    y = dev.empty_like(x)
    p = dev.prepare(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 1.0})
    events = []
    with dev.observe(events.append), dev.phase("obs"):
        dev.run(COPY, y, inputs={"X": x})            # the checked path
        dev.run(COPY, y, inputs={"X": x})            # the cached fast path
        p.run()                                      # a prepared pass
        p.repeat("alpha", [1.0, 2.0, 3.0])           # its first value run, then 2 repeated
        p.sweep([(0, 0, 1, 4), (1, 0, 1, 4)])        # one call per rect
        got = y.get()
        dev.finish()
    calls = _kinds(events, "kernel")
    passes = _kinds(events, "pass")
    assert [c.name for c in calls] == ["engine/copy"] * 2 + ["engine/saxpy"] * 6
    assert [c.uniforms["alpha"] for c in calls[3:6]] == [1.0, 2.0, 3.0]   # each value's own
    assert [c.size for c in calls[6:]] == [(1, 4), (1, 4)]
    assert all(e.label == "obs" for e in events)
    assert sum(e.count for e in passes) == dev.counter.snapshot()["obs"]["passes"] == 8
    assert {e.path for e in passes} == {"draw", "prepared", "repeat"}
    assert [e for e in passes if e.path == "repeat"][0].count == 2
    assert all(e.targets == 1 for e in passes)
    host = [(e.kind, e.nbytes) for e in events if e.kind in ("readback", "finish")]
    assert host[0][0] == "readback" and host[0][1] >= 4 * 8 * 4 and host[-1] == ("finish", 0)
    np.testing.assert_array_equal(got, np.full((4, 8), 4.0, np.float32))   # alpha 3: 3 x + x


def test_a_detached_listener_hears_nothing_and_counts_stay_the_same(dev):
    x = dev.array(np.ones((2, 4)))
    y = dev.empty_like(x)
    heard = []
    obs = dev.observe(heard.append)
    dev.counter.reset()
    dev.run(COPY, y, inputs={"X": x})
    observed = dict(dev.counter.kpasses), dict(dev.counter.fragments)
    n = len(heard)
    obs.close()
    obs.close()                                      # twice: nothing more to detach
    assert dev._observers == ()
    dev.counter.reset()
    dev.run(COPY, y, inputs={"X": x})
    assert len(heard) == n
    assert (dict(dev.counter.kpasses), dict(dev.counter.fragments)) == observed


def test_reports_of_the_library_reach_the_listener_and_the_counter(dev):
    heard = []
    with dev.observe(heard.append):
        dev.counter.reset()
        with dev.phase("api"):
            dev.report("api:example")
            dev.report("upload", 64)
    assert [(e.kind, e.label, e.nbytes) for e in heard] == [("api:example", "api", 0),
                                                            ("upload", "api", 64)]
    snap = dev.counter.snapshot(host=True)["api"]
    assert snap["events"] == {"api:example": 1, "upload": 1}
    assert snap["event_bytes"] == {"upload": 64}
