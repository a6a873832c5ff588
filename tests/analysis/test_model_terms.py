"""The cost model's terms: what the pass counter records for it (paths, dependent passes,
target switches, host events, per-kernel draws and device time), the prediction's arithmetic
with hand-made speeds, the efficiency by size, the calibration's second half and the held-out
rule, and the software renderer's heap settings."""
import dataclasses
import math

import numpy as np
import pytest

from shadergpgpu.analysis import cost_model as M
from shadergpgpu.analysis.work_recorder import recording
from shadergpgpu.engine import context
from shadergpgpu.engine.builtin import COPY, SAXPY

from tests.reference import assert_close


@pytest.fixture
def rec(dev):
    """The analysis's recorder of the calls' work, observing ``dev`` for the test."""
    with recording(dev) as r:
        yield r


def test_counter_records_paths_dependence_switches_and_events(rec, dev):
    a = dev.array(np.ones((4, 8)))
    b, c = dev.empty_like(a), dev.empty_like(a)
    p_ab = dev.prepare(COPY, b, inputs={"X": a})
    p_bc = dev.prepare(COPY, c, inputs={"X": b})          # reads what p_ab wrote
    acc = dev.empty_like(a)
    p_acc = dev.prepare(SAXPY, acc, inputs={"X": a, "Y": a}, uniforms={"alpha": 0.0},
                        blend=bool(dev.float_blending))
    dev.finish()
    dev.counter.reset()
    with dev.phase("t"):
        p_ab.run()
        p_bc.run()                     # dependent, and another target
        p_ab.run()                     # another target again, reads a: not dependent
        dev.run(COPY, c, inputs={"X": b})   # dependent: the previous draw wrote b
        p_acc.repeat("alpha", [1.0, 2.0, 3.0])
        a.set(np.zeros((4, 8)))
        got = c.get()
        dev.finish()
    s = rec.snapshot()["t"]
    assert s["passes"] == 7
    # 5 draws through a prepared pass or the device's path (which one depends on the GL state
    # the device holds), 2 values of Pass.repeat
    assert s["paths"].get("repeat", 0) == 2 and sum(s["paths"].values()) == 7
    assert s["events"]["run"] == 1 and s["events"]["upload"] == 1
    assert s["events"]["readback"] == 1 and s["events"]["finish"] == 1
    assert s["event_bytes"]["upload"] == 4 * 8 * 4
    assert s["event_bytes"]["readback"] >= 4 * 8 * 4
    assert s["dependent"] == 2
    assert s["kernels"]["engine/copy"]["dependent"] == 2
    assert s["switches"] >= 4
    assert s["kernels"]["engine/copy"]["passes"] == 4
    assert s["kernels"]["engine/saxpy"]["passes"] == 3
    # the draws: (fragments per pass, draws, per-fragment work); 8 texels wide packed
    frags = {d[0] for d in s["kernels"]["engine/copy"]["draws"]}
    assert frags == {4 * 2}
    assert sum(d[1] for d in s["kernels"]["engine/saxpy"]["draws"]) == 3
    np.testing.assert_array_equal(got, np.ones((4, 8), np.float32))


def test_timing_records_device_time_per_kernel(dev):
    from shadergpgpu import Device
    tdev = Device(timing=True)
    try:
        x = tdev.array(np.ones((64, 256)))
        y = tdev.empty_like(x)
        tdev.counter.reset()
        with tdev.phase("k"):
            for _ in range(3):
                tdev.run(COPY, y, inputs={"X": x})
        s = tdev.counter.snapshot()["k"]
        assert s["kernels"]["engine/copy"]["passes"] == 3
        # every timed draw attributed to its kernel, and every pending query read
        assert s["gpu_ms"] == pytest.approx(s["kernels"]["engine/copy"]["gpu_ms"])
        assert tdev.counter.pending == []
        np.testing.assert_array_equal(y.get(), x.get())
    finally:
        tdev.release()


def _speeds(**kw):
    base = dict(pass_overhead_us=5.0, alu_gflops=100.0, texel_rate_gtexels=10.0,
                write_gbs=50.0, upload_gbs=2.0, readback_gbs=4.0, pass_gpu_us=2.0,
                host_us={"prepared": 3.0, "repeat": 1.0, "draw": 4.0, "run": 6.0,
                         "upload": 10.0, "readback": 20.0, "finish": 7.0,
                         "dependent": 5.0, "switch": 1.5, "start_lag": 50.0,
                         "api:x": 100.0})
    base.update(kw)
    return M.Speeds(**base)


SNAP = {"p": {"passes": 10, "fragments": 10 * 1000, "dependent": 2, "switches": 4,
              "paths": {"prepared": 6, "repeat": 4},
              "events": {"run": 1, "upload": 1, "readback": 1, "finish": 1, "api:x": 1},
              "event_bytes": {"upload": 2e6, "readback": 4e6},
              "kernels": {"k": {"passes": 10, "dependent": 2,
                                "draws": [[1000, 10, 100.0, 2.0, 16.0, 0.0]]}}}}


def test_detailed_prediction_on_a_gpu():
    sp = _speeds()
    q = M.predict(SNAP, sp)["p"]
    host = (6 * 3 + 4 * 1 + 6) * 1e-6
    # 1e4 fragments x 100 flops = 1e6 flops: 10 us; 2e4 fetches: 2 us; 1.6e5 bytes: 3.2 us
    work = 10e-6
    floor = 10 * 2e-6
    device = max(work, floor) + 2 * 5e-6 + 4 * 1.5e-6
    serial = (10e-6 + 2e6 / 2e9) + (20e-6 + 4e6 / 4e9) + 7e-6 + 100e-6
    assert q["host_s"] == pytest.approx(host)
    assert q["device_s"] == pytest.approx(device)
    expect = max(host, device) + min(host, device, 50e-6) + serial
    assert M.total({"p": q}) == pytest.approx(expect)
    assert M.blamed({"p": q}) == "transfer"


def test_detailed_prediction_on_a_software_renderer_sums_and_counts_tiles():
    sp = _speeds(overlap="sum", threads=4)
    q = M.predict(SNAP, sp)["p"]
    # 1000 fragments: one 64 x 64 tile, one thread of four: the work takes 4x; summed terms
    t = (1e6 / 1e11 + 2e4 / 1e10 + 1.6e5 / 5e10) * 4
    # four switches, two of them right after the call's two waits (free: see below)
    assert q["device_s"] == pytest.approx(max(t, 20e-6) + 10e-6 + 2 * 1.5e-6)
    assert M.total({"p": q}) == pytest.approx(q["host_s"] + q["device_s"] + q["transfer_s"] +
                                              q["api_s"])


def test_a_software_renderers_switch_after_a_wait_hands_nothing_over():
    """A wait hands the renderer's threads the scene drawn before it; the draw after it
    counts as a switch but has no scene to hand over: one switch per wait is free on a
    software renderer, none on a GPU (its switch is the host's binding work)."""
    one = {"p": {"passes": 1, "fragments": 16, "switches": 1, "paths": {"draw": 1},
                 "events": {"finish": 1}, "kernels": {}}}
    soft, gpu = _speeds(overlap="sum", threads=4), _speeds()
    stated = soft.host_us["switch"] * 1e-6          # the stated price of one switch

    def charged(snap, speeds):
        """How many of the snapshot's switches the prediction prices: its total against the
        same speeds with switches stated free, in stated switch prices."""
        free = dataclasses.replace(speeds, host_us={**speeds.host_us, "switch": 0.0})
        extra = M.total(M.predict(snap, speeds)) - M.total(M.predict(snap, free))
        return round(extra / stated)
    assert charged(one, soft) == 0 and charged(one, gpu) == 1
    three = {"p": dict(one["p"], switches=3, events={"readback": 1})}
    assert charged(three, soft) == 2 and charged(three, gpu) == 3
    assert charged({"p": dict(one["p"], switches=0)}, soft) == 0


def test_efficiency_by_size_is_interpolated_in_log_fragments():
    sp = _speeds(efficiency={"k": [[1000, 1.0], [100000, 4.0]]})
    assert sp.efficiency_at("k", 10) == 1.0 and sp.efficiency_at("k", 1e7) == 4.0
    assert sp.efficiency_at("k", 10000) == pytest.approx(2.0)      # halfway in log
    assert sp.efficiency_at("other", 5) == 1.0
    plain = M.predict(SNAP, _speeds())["p"]["device_s"]
    slow = M.predict(SNAP, _speeds(efficiency={"k": [[1000, 3.0]]}))["p"]["device_s"]
    # 10 us of work under a 20 us floor; 3x the work (30 us) rises above the floor
    assert slow - plain == pytest.approx(3 * 10e-6 - 20e-6, rel=1e-6)
    # a profile written with one number per kernel still reads
    assert M.Speeds.from_dict({**M.asdict_speeds(_speeds()),
                               "efficiency": {"k": 2.5}}).efficiency_at("k", 1) == 2.5


def test_first_model_without_host_costs_is_unchanged():
    sp = M.Speeds(pass_overhead_us=10.0, alu_gflops=100.0, texel_rate_gtexels=10.0,
                  write_gbs=50.0)
    assert not sp.detailed
    q = M.predict(SNAP, sp)["p"]
    assert q["predicted_s"] == pytest.approx(10 * 10e-6 + max(0.0, 0.0, 0.0))


def test_calibration_cases_are_held_out_from_the_checks():
    from shadergpgpu.analysis.reports import calibrate_cases as CC
    from shadergpgpu.analysis.reports import model_cases as MC
    for sw in (True, False):
        cal = {(c.algo, c.label) for c in CC.calibration_cases(sw)}
        check = {(c.algo, c.label) for c in MC.default_cases(sw)}
        assert not cal & check
        assert {a for a, _ in check} <= {a for a, _ in cal}    # every algorithm calibrated


def test_calibrate_all_measures_efficiencies_and_call_costs(dev, tmp_path, monkeypatch):
    from shadergpgpu.analysis.reports import calibrate as CA
    from shadergpgpu.analysis.reports import model_cases as MC
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cases = [MC.sgemm_case(64), MC.elementwise_case(128)]
    monkeypatch.setattr(CA, "calibration_cases", lambda software: cases)
    prof = CA.calibrate_all(dev, quick=True)
    sp = prof["speeds"]
    assert "api:sgemm" in sp["host_us"] and sp["host_us"]["api:sgemm"] >= 0
    assert sp["host_us"]["call"] >= 0
    for name, pts in sp["efficiency"].items():
        assert pts and all(f > 0 and e > 0 and math.isfinite(e) for f, e in pts), name
    # the saved profile is the one read back, and it prices a counted call, its one-liner
    # call included
    speeds = M.measured_speeds(dev, calibrate_if_missing=False)
    assert speeds.host_us == sp["host_us"]
    snap = MC.count(MC.elementwise_case(64), dev)
    pred = M.predict(snap, speeds)
    assert snap["default"]["events"]["call"] == 1
    assert math.isfinite(M.total(pred)) and M.total(pred) > 0


def test_software_heap_settings(monkeypatch):
    monkeypatch.setattr(context, "_MALLOC_TUNED", False)
    monkeypatch.setenv("SHADERGPGPU_KEEP_MALLOC", "1")
    assert context.tune_malloc_for_software() is False
    monkeypatch.delenv("SHADERGPGPU_KEEP_MALLOC")
    import sys
    if sys.platform.startswith("linux"):
        assert context.tune_malloc_for_software() is True


def test_a_measured_gpu_profile_plans_gpu_kernels_here(tmp_path, rng):
    """Counting here under a GPU's calibrated profile runs the kernels the GPU would (the
    choices made for speed follow the profile's kind), and they are still right."""
    import json

    from shadergpgpu import Device
    from shadergpgpu.algorithms import sgemm as S
    prof = {"name": "some-gpu", "kind": "gpu", "limits": {},
            "speeds": {"pass_overhead_us": 2.0, "alu_gflops": 1000.0,
                       "texel_rate_gtexels": 10.0, "write_gbs": 50.0}}
    path = tmp_path / "gpu.json"
    path.write_text(json.dumps(prof))
    d = Device(profile=str(path))
    try:
        assert d.plans_for_software is False
        assert S.default_variant(d) == "tile16x2-ubo" or not S.Limits.of(d).uniform_blocks
        A = rng.standard_normal((40, 24)).astype(np.float32)
        B = rng.standard_normal((24, 36)).astype(np.float32)
        got = S.sgemm(A, B, device=d)
        assert_close(got, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)
    finally:
        d.release()
    with pytest.raises(ValueError, match="kind"):
        path.write_text(json.dumps(dict(prof, kind="fpga")))
        Device(profile=str(path))


def test_the_counter_stays_bounded_over_many_shapes(rec, dev, monkeypatch):
    """A long run over many distinct shapes: the draw entries are merged past the cap (the
    test forces a cap of 8) and the work totals, draws and the prediction's work are kept."""
    from shadergpgpu.analysis import work_recorder as C
    arrays = []
    for k in range(1, 25):
        x = dev.array(np.ones((k, 4 * k)))
        arrays.append((x, dev.empty_like(x)))

    def run_all():
        dev.counter.reset()
        with dev.phase("many"):
            for x, y in arrays:
                dev.run(COPY, y, inputs={"X": x})
                SAXPY(y, X=x, Y=x, alpha=2.0)
        return rec.snapshot()["many"]

    free = run_all()
    monkeypatch.setattr(C, "DRAWS_CAP", 8)
    capped = run_all()
    assert len(rec._draws) <= 8 + 2
    for k in ("passes", "fragments"):
        assert capped[k] == free[k]
    for k in ("flops", "fetches", "bytes"):
        assert capped[k] == pytest.approx(free[k])
    for name in ("engine/copy", "engine/saxpy"):
        d_free = free["kernels"][name]["draws"]
        d_cap = capped["kernels"][name]["draws"]
        assert sum(n for _, n, *_ in d_cap) == sum(n for _, n, *_ in d_free) == 24
        assert sum(f * n * fl for f, n, fl, *_ in d_cap) == \
            pytest.approx(sum(f * n * fl for f, n, fl, *_ in d_free))
    for x, y in arrays:
        x.release()
        y.release()


def test_timed_rounds_keeps_the_fastest_round_per_case(monkeypatch):
    """Rounds over all cases (round-robin): per case the fastest wall, issue and device time
    over the rounds, the first round's snapshot; a case that raises is reported, not retried,
    and the others go on."""
    from shadergpgpu.analysis.reports import model_cases as MC
    times = {"a": [(3.0, 1.0, {"s": 1}, 2.0), (1.0, 2.0, {"s": 2}, 0.5),
                   (2.0, 0.5, {"s": 3}, 1.0)],
             "b": [(5.0, 5.0, {"s": 4}, 5.0), (4.0, 6.0, {"s": 5}, 6.0),
                   (6.0, 4.0, {"s": 6}, 4.0)]}
    order = []

    def fake(case, dev, repeat=5, device=False):
        order.append(case)
        if case == "c":
            raise RuntimeError("refused")
        t = times[case].pop(0)
        return t if device else t[:3]
    monkeypatch.setattr(MC, "timed_call", fake)
    got = MC.timed_rounds(["a", "b", "c"], None, rounds=3)
    assert order == ["a", "b", "c", "a", "b", "a", "b"]       # round-robin, c not retried
    assert got[0] == (1.0, 0.5, {"s": 1}, 0.5)
    assert got[1] == (4.0, 4.0, {"s": 4}, 4.0)
    assert isinstance(got[2], RuntimeError)
    assert MC.default_rounds(type("D", (), {"is_software": True})()) == 3
    assert MC.default_rounds(type("D", (), {"is_software": False})()) == 1


def test_a_call_that_never_waits_is_priced_as_one_of_a_run():
    """No readback and no finish in a GPU snapshot: host work (the algorithm's own included)
    overlaps the device's, no start lag; with a finish, the serial form above."""
    sp = _speeds()
    free = {"p": dict(SNAP["p"], events={"run": 1, "upload": 1, "api:x": 1})}
    q = M.predict(free, sp)["p"]
    host, device = q["host_s"], q["device_s"]
    upload = 10e-6 + 2e6 / 2e9
    assert M.syncs(free) == 0 and M.syncs(SNAP) == 2
    assert M.total({"p": q}) == pytest.approx(max(host + 100e-6, device) + upload)
    waits = {"p": dict(free["p"], events={**free["p"]["events"], "finish": 1})}
    q2 = M.predict(waits, sp)["p"]
    assert M.total({"p": q2}) == pytest.approx(
        max(host, device) + min(host, device, 50e-6) + upload + 7e-6 + 100e-6)


def test_calls_are_timed_in_runs_on_a_gpu_alone_on_a_software_renderer():
    from shadergpgpu.analysis.reports import model_cases as MC
    sw = type("D", (), {"is_software": True})()
    gpu = type("D", (), {"is_software": False})()
    assert MC.run_length(sw, 1e-5) == 1
    assert MC.run_length(gpu, 1.0) == 1                      # a long call: alone
    assert MC.run_length(gpu, MC.RUN_SECONDS / 4) == 4
    assert MC.run_length(gpu, 1e-7) == MC.RUN_CALLS          # capped


def test_call_times_counts_every_call_of_a_run(monkeypatch):
    """A run issues run_length calls per repeat: on a fake GPU device whose warm-up states a
    call of 1 ms, runs are RUN_SECONDS / 1 ms calls long (calls are counted, nothing is
    timed)."""
    from shadergpgpu.analysis.reports import model_cases as MC

    class FakeGpu:
        is_software = False

        def finish(self):
            pass

    calls = []
    monkeypatch.setattr(MC, "warm", lambda call, dev, seconds=None: 1e-3)
    t = MC.call_times(lambda: calls.append(1), FakeGpu(), repeat=3, device=False)
    k = t["calls"]
    assert k == round(MC.RUN_SECONDS / 1e-3) == MC.run_length(FakeGpu(), 1e-3)
    assert len(calls) == 3 * k


def test_short_calls_on_a_software_renderer_are_timed_more_often(monkeypatch):
    """On a software renderer a call is timed alone, repeat times or enough calls for
    SOFTWARE_SECONDS (at most SOFTWARE_REPEATS); on a GPU repeat runs. The warm-up is
    replaced by a stated call length: calls are counted, nothing is timed."""
    from shadergpgpu.analysis.reports import model_cases as MC

    class FakeDevice:
        def __init__(self, software):
            self.is_software = software

        def finish(self):
            pass

    for call_s, want in ((5e-3, round(MC.SOFTWARE_SECONDS / 5e-3)), (1e-4, MC.SOFTWARE_REPEATS),
                         (0.5, 3)):
        monkeypatch.setattr(MC, "warm", lambda call, dev, seconds=None: call_s)
        calls = []
        t = MC.call_times(lambda: calls.append(1), FakeDevice(True), repeat=3)
        assert t["calls"] == 1
        assert len(calls) == MC.repeats(FakeDevice(True), call_s, 3) == want
    assert MC.repeats(FakeDevice(False), 1e-4, 3) == 3


def test_count_of_a_call_in_a_run_has_no_wait_after_it(dev):
    """count(finish=False) snapshots a call as a run's call (timed_call on a GPU): the same
    passes, one finish fewer; benchmarks/model_cross.py counts a GPU record's call that way."""
    from shadergpgpu.analysis.reports import model_cases as MC
    case = MC.elementwise_case(64)
    alone = MC.count(case, dev)
    in_run = MC.count(case, dev, finish=False)
    assert MC.finishes(alone) == MC.finishes(in_run) + 1
    assert sum(s["passes"] for s in alone.values()) == sum(s["passes"] for s in in_run.values())
    assert M.syncs(in_run) == 0
