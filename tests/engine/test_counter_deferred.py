"""The pass counter stays exact while the fast paths defer their counts.

A prepared pass and a cached plain :meth:`Device.run` call count their draws in a tally that
the counter folds when it is read. These tests run sequences that mix the fast paths with the
full ones (blended draws, ``repeat``, one-liners), label changes (``phase`` and a label set
directly), reads in the middle (snapshots, ``passes``, ``flops``), resets, releases, a counter
swapped and swapped back, and check every count against a model kept by hand in the test (each
call's passes, fragments, declared flops and host events are known from its arguments), and
the arrays' values against float64 numpy. The flops are the analysis's: a
:class:`~shadergpgpu.analysis.work_recorder.WorkRecorder` observing the device."""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.engine.builtin import COPY, SAXPY
from shadergpgpu.analysis.work_recorder import WorkRecorder
from shadergpgpu.engine.counter import PassCounter

from tests.reference import assert_close

SAXPY_FLOPS = 8     # the analysis's work table counts these per fragment
COPY_FLOPS = 0


class Expect:
    """The counts a sequence must leave in the counter, kept by the test."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.passes, self.frags, self.flops = {}, {}, {}
        self.kpasses, self.events = {}, {}

    def draw(self, label, kernel, path, frags, flops, n=1, events=()):
        self.passes[label] = self.passes.get(label, 0) + n
        self.frags[label] = self.frags.get(label, 0) + frags * n
        self.flops[label] = self.flops.get(label, 0.0) + flops * frags * n
        k = (label, kernel, path)
        self.kpasses[k] = self.kpasses.get(k, 0) + n
        for kind in events:
            self.events[label, kind] = self.events.get((label, kind), 0) + n

    def check(self, cnt, rec=None):
        assert dict(cnt.passes) == self.passes
        assert dict(cnt.fragments) == self.frags
        assert dict(cnt.kpasses) == self.kpasses
        if rec is not None:
            for label, f in self.flops.items():
                assert rec.flops.get(label, 0.0) == f
        ev = {k: v for k, v in cnt.events.items() if k[1] in ("run", "call")}
        assert ev == self.events
        assert cnt.total == sum(self.passes.values())
        snap = cnt.snapshot() if rec is None else rec.snapshot()
        assert {lb: s["passes"] for lb, s in snap.items()} == self.passes
        for lb, s in snap.items():
            paths = {}
            for (label, _, path), n in self.kpasses.items():
                if label == lb:
                    paths[path] = paths.get(path, 0) + n
            assert s["paths"] == paths
            if rec is not None:
                drawn = sum(d[1] for k in s["kernels"].values() for d in k["draws"])
                assert drawn == self.passes[lb]     # every pass's call logs its work


def _recorder(dev):
    rec = WorkRecorder(dev)
    dev.observe(rec)
    return rec


@pytest.fixture
def fresh():
    d = sg.Device()
    yield d
    d.release()


def _frags(a):
    w, h = a.layout.tex_size
    return w * h


def test_mixed_sequence_counts_exactly(fresh):
    dev = fresh
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 9)).astype(np.float32)
    X = dev.array(x)
    Y = dev.array(np.ones((5, 9)))
    out, cp = dev.empty_like(X), dev.empty_like(X)
    fr = _frags(X)
    p_sax = dev.prepare(SAXPY, out, inputs={"X": X, "Y": Y}, uniforms={"alpha": 2.0})
    p_cp = dev.prepare(COPY, cp, inputs={"X": out})
    cnt = dev.counter
    cnt.reset()
    rec = _recorder(dev)
    e = Expect()
    for step in range(40):
        label = ("a", "b", "default")[step % 3]
        with dev.phase(label):
            r = step % 8
            if r in (0, 3):
                p_sax.run()
                e.draw(label, "engine/saxpy", "prepared", fr, SAXPY_FLOPS)
            elif r == 1:
                p_sax.run(alpha=float(step))
                p_cp.run()
                e.draw(label, "engine/saxpy", "prepared", fr, SAXPY_FLOPS)
                e.draw(label, "engine/copy", "prepared", fr, COPY_FLOPS)
            elif r in (2, 6):
                dev.run(SAXPY, out, inputs={"X": X, "Y": Y}, uniforms={"alpha": 0.5})
                e.draw(label, "engine/saxpy", "draw", fr, SAXPY_FLOPS, events=("run",))
            elif r == 4:
                dev.run(COPY, cp, inputs={"X": X})
                e.draw(label, "engine/copy", "draw", fr, COPY_FLOPS, events=("run",))
                e.check(cnt, rec)                               # a read in the middle
            elif r == 5:
                assert p_sax.repeat("alpha", [1.0, 2.0, 3.0]) == 3
                e.draw(label, "engine/saxpy", "prepared", fr, SAXPY_FLOPS)
                e.draw(label, "engine/saxpy", "repeat", fr, SAXPY_FLOPS, n=2)
            else:
                cnt.snapshot()
                p_cp.run()
                e.draw(label, "engine/copy", "prepared", fr, COPY_FLOPS)
    e.check(cnt, rec)
    # the last step (39: r == 7) copied out into cp
    assert_close(cp.get(), out.get(), rtol=0, atol=0)
    p_sax.run(alpha=-1.5)
    assert_close(out.get(), -1.5 * x.astype(np.float64) + 1.0, rtol=1e-6, atol=1e-6)


def test_label_set_directly_and_label_objects_that_are_equal(fresh):
    """A label set by assignment (as the SVM's issue loop does), and an equal string that is
    another object: the counts land under the label's value."""
    dev = fresh
    X = dev.array(np.arange(8.0))
    out = dev.empty_like(X)
    p = dev.prepare(COPY, out, inputs={"X": X})
    cnt = dev.counter
    cnt.reset()
    rec = _recorder(dev)
    e = Expect()
    fr = _frags(X)
    outer = cnt.label
    for k in range(6):
        cnt.label = "svm/select"
        p.run()
        dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
        cnt.label = "".join(["svm/", "update"])     # equal value, another object each time
        p.run()
        p.run()
        dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
        e.draw("svm/select", "engine/copy", "prepared", fr, COPY_FLOPS)
        e.draw("svm/select", "engine/saxpy", "draw", fr, SAXPY_FLOPS, events=("run",))
        e.draw("svm/update", "engine/copy", "prepared", fr, COPY_FLOPS, n=2)
        e.draw("svm/update", "engine/saxpy", "draw", fr, SAXPY_FLOPS, events=("run",))
    cnt.label = outer
    e.check(cnt, rec)
    np.testing.assert_array_equal(out.get(), 2 * np.arange(8.0))


def test_reset_drops_what_was_counted_before_it(fresh):
    dev = fresh
    X = dev.array(np.ones(16))
    out = dev.empty_like(X)
    p = dev.prepare(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
    cnt = dev.counter
    rec = _recorder(dev)
    fr = _frags(X)
    for _ in range(5):
        p.run()
        dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 1.0})
    cnt.reset()                        # nothing read since the draws: they are dropped too
    e = Expect()
    e.check(cnt, rec)
    with dev.phase("after"):
        p.run()
        p.run()
        dev.run(SAXPY, out, inputs={"X": X, "Y": X}, uniforms={"alpha": 3.0})
    e.draw("after", "engine/saxpy", "prepared", fr, SAXPY_FLOPS, n=2)
    e.draw("after", "engine/saxpy", "draw", fr, SAXPY_FLOPS, events=("run",))
    e.check(cnt, rec)
    cnt.reset()
    e.reset()
    e.check(cnt, rec)
    np.testing.assert_array_equal(out.get(), np.full(16, 4.0))


def test_a_swapped_counter_and_the_original_both_stay_exact(fresh):
    """Calibration swaps the device's counter for a fresh one and puts it back: draws in
    between count in the fresh one only, and the tallies held by passes follow the swap."""
    dev = fresh
    X = dev.array(np.ones((3, 4)))
    out = dev.empty_like(X)
    p = dev.prepare(COPY, out, inputs={"X": X})
    fr = _frags(X)
    saved = dev.counter
    saved.reset()
    e_saved, e_new = Expect(), Expect()
    p.run()
    dev.run(COPY, out, inputs={"X": X})
    e_saved.draw("default", "engine/copy", "prepared", fr, COPY_FLOPS)
    e_saved.draw("default", "engine/copy", "draw", fr, COPY_FLOPS, events=("run",))
    dev.counter = PassCounter()
    try:
        for _ in range(3):
            p.run()
            dev.run(COPY, out, inputs={"X": X})
        e_new.draw("default", "engine/copy", "prepared", fr, COPY_FLOPS, n=3)
        e_new.draw("default", "engine/copy", "draw", fr, COPY_FLOPS, n=3, events=("run",))
        e_new.check(dev.counter)
    finally:
        dev.counter = saved
    p.run()
    e_saved.draw("default", "engine/copy", "prepared", fr, COPY_FLOPS)
    e_saved.check(saved)


def test_released_arrays_are_refused_and_not_counted(fresh):
    dev = fresh
    X = dev.array(np.arange(12.0))
    out = dev.empty_like(X)
    p = dev.prepare(COPY, out, inputs={"X": X})
    cnt = dev.counter
    cnt.reset()
    e = Expect()
    fr = _frags(X)
    p.run()
    dev.run(COPY, out, inputs={"X": X})
    e.draw("default", "engine/copy", "prepared", fr, COPY_FLOPS)
    e.draw("default", "engine/copy", "draw", fr, COPY_FLOPS, events=("run",))
    X.release()
    with pytest.raises(ValueError, match="released"):
        p.run()
    with pytest.raises(ValueError, match="released"):
        dev.run(COPY, out, inputs={"X": X})
    e.events["default", "run"] += 1     # the refused call was a Device.run call all the same
    e.check(cnt)
    Z = dev.array(np.arange(12.0) * 2)
    p.bind(X=Z)
    p.run()
    dev.run(COPY, out, inputs={"X": Z})
    e.draw("default", "engine/copy", "prepared", fr, COPY_FLOPS)
    e.draw("default", "engine/copy", "draw", fr, COPY_FLOPS, events=("run",))
    e.check(cnt)
    np.testing.assert_array_equal(out.get(), np.arange(12.0) * 2)


def test_one_liner_calls_count_their_call_and_run(fresh):
    dev = fresh
    k = sg.ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z", "z = x * a + y",
                             name="deferred_fma")
    x, y = np.random.default_rng(3).standard_normal((2, 4, 6)).astype(np.float32)
    X, Y = dev.array(x), dev.array(y)
    out = dev.empty_like(X)
    cnt = dev.counter
    cnt.reset()
    for j in range(7):
        with dev.phase("ew" if j % 2 else "other"):
            assert k(X, Y, float(j), out) is out
    snap = cnt.snapshot()
    assert snap["ew"]["passes"] == 3 and snap["other"]["passes"] == 4
    assert snap["ew"]["events"]["call"] == 3 and snap["ew"]["events"]["run"] == 3
    assert snap["other"]["events"]["call"] == 4 and snap["other"]["events"]["run"] == 4
    assert list(snap["ew"]["events"]) == ["call", "run"]   # the order the events came in
    assert cnt.kpasses["ew", "elementwise/deferred_fma", "draw"] == 3
    assert_close(out.get(), 6.0 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)


def test_a_counter_never_read_keeps_a_bounded_list_of_tallies(fresh):
    """Passes made and dropped in a loop, under many labels, with the counter never read:
    the tallies waiting to be folded stay bounded and the total is exact."""
    from shadergpgpu.engine import counter as C
    dev = fresh
    X = dev.array(np.ones(4))
    out = dev.empty_like(X)
    cnt = dev.counter
    cnt.reset()
    n = C.TALLIES_CAP + 50
    for j in range(n):
        cnt.label = f"L{j}"
        dev.prepare(COPY, out, inputs={"X": X}).run()
        assert len(cnt._tallies) <= C.TALLIES_CAP
    cnt.label = "default"
    assert cnt.total == n
    assert len(cnt.passes) == n and all(v == 1 for v in cnt.passes.values())
