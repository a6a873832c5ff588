"""The calibration's rounds and fits: calibration and checks interleaved in rounds (each keeps
its fastest), per-draw timings kept by their fastest round, a software renderer's busiest
thread, the call costs weighed by the calls' wall times and the whole-call efficiencies
fitted once the call costs are known."""
import math

import numpy as np
import pytest

from shadergpgpu.analysis import cost_model as M
from shadergpgpu.analysis.reports import calibrate as CA
from shadergpgpu.analysis.reports import calibrate_kernels as CK
from shadergpgpu.analysis.reports.calibrate_calls import _call_fit
from shadergpgpu.analysis.reports import model_cases as MC
from shadergpgpu.analysis.reports import rounds as R


def test_a_software_pass_lasts_as_long_as_its_busiest_thread():
    # two threads take the 64 x 64 tiles in raster order, each the next when it is free
    assert M.busiest_thread(64, 32, 2) == 2.0              # one tile: one thread
    assert M.busiest_thread(96, 48, 2) == pytest.approx(2 * 64 * 48 / (96 * 48))
    # 100 x 100: 64x64 and 36x64 first, then 64x36 to the second, 36x36 to the first
    assert M.busiest_thread(100, 100, 2) == pytest.approx(2 * (4096 + 1296) / 1e4)
    assert M.busiest_thread(128, 128, 2) == 1.0
    assert M.busiest_thread(4096, 1, 2) == 1.0 == M.busiest_thread(1, 4096, 2)
    assert M.busiest_thread(192, 64, 2) == pytest.approx(2 * 2 / 3)   # three tiles
    assert M.busiest_thread(50, 50, 1) == 1.0
    sp = M.Speeds(pass_overhead_us=1.0, alu_gflops=1.0, texel_rate_gtexels=1.0, write_gbs=1.0,
                  overlap="sum", threads=2)
    assert sp.occupancy(96 * 48, (96, 48)) == M.busiest_thread(96, 48, 2)


def test_call_costs_are_weighed_by_each_calls_wall_time():
    # (passes, us left unexplained, wall us): the large call's residual is mostly device
    # time the model misses, and must not price the small calls' host work
    pts = [[4.0, 600.0, 1500.0], [40.0, 1400.0, 3000.0], [400.0, 9000.0, 60000.0]]
    c0, c1 = _call_fit(pts)
    p = np.array([q[0] for q in pts])
    u = np.array([q[1] for q in pts])
    w = 1.0 / np.sqrt([q[2] for q in pts])            # weights 1 / wall: rows by its root
    ref = np.linalg.lstsq(np.c_[np.ones(3), p] * w[:, None], u * w, rcond=None)[0]
    assert (c0, c1) == pytest.approx(tuple(ref), rel=1e-9)
    # one size of call: the weighted mean, the small call counting most
    c0, c1 = _call_fit([[4.0, 600.0, 1500.0], [4.0, 4300.0, 12000.0]])
    wts = np.array([1 / 1500, 1 / 12000])
    assert c1 == 0.0 and c0 == pytest.approx((wts @ [600.0, 4300.0]) / wts.sum())
    # without wall times (a GPU's issue-time residuals): unweighted, the median per call
    assert _call_fit([[4.0, 600.0, None], [4.0, 4300.0, None], [4.0, 700.0, None]]) \
        == (700.0, 0.0)
    # never below 0
    assert _call_fit([[4.0, -50.0, 100.0]]) == (0.0, 0.0)


def test_gpu_call_residuals_are_fitted_by_their_repeated_median():
    import statistics
    # stated residuals on a line (120 us + 0.05 us per pass) but one call far above it
    line = [[p, 120.0 + 0.05 * p, None] for p in (300.0, 1000.0, 4600.0)]
    c0, c1 = _call_fit(line + [[5100.0, 5800.0, None]])
    assert c1 == pytest.approx(0.05) and c0 == pytest.approx(120.0)
    # least squares through the same four would take the far call's slope
    p = np.array([q[0] for q in line] + [5100.0])
    u = np.array([q[1] for q in line] + [5800.0])
    assert np.polyfit(p, u, 1)[0] > 0.5
    # no outlier: the repeated median of three points, checked by hand
    pts = [[2.0, 70.0, None], [9.0, 380.0, None], [13.0, 620.0, None]]
    s = {(0, 1): 310 / 7, (0, 2): 550 / 11, (1, 2): 60.0}
    slope = statistics.median([statistics.median([s[(0, 1)], s[(0, 2)]]),
                               statistics.median([s[(0, 1)], s[(1, 2)]]),
                               statistics.median([s[(0, 2)], s[(1, 2)]])])
    c0, c1 = _call_fit(pts)
    assert c1 == pytest.approx(slope)
    assert c0 == pytest.approx(max(statistics.median([u - slope * q for q, u, _ in pts]), 0))
    # a falling line: the median per call
    assert _call_fit([[2.0, 90.0, None], [9.0, 60.0, None], [13.0, 40.0, None]]) == (60.0, 0.0)
    # three smaller calls on a steep line (one H100 run's paper-schedule residuals) and the
    # call with the most passes far under it: no cost per pass, the median per call
    steep = [[298.0, 394.0, None], [1066.0, 1352.0, None], [4618.0, 6136.0, None]]
    assert _call_fit(steep + [[5130.0, -463.0, None]]) == (statistics.median(
        [394.0, 1352.0, 6136.0, -463.0]), 0.0)
    # the same calls with the largest on the line, or above half of what the slope adds
    # there: the slope stays
    def repeated_median(pts):
        slope = statistics.median(statistics.median((u2 - u) / (p2 - p) for p2, u2, _ in pts
                                                    if p2 != p) for p, u, _ in pts)
        return max(statistics.median(u - slope * p for p, u, _ in pts), 0.0), slope
    on_line = steep + [[5130.0, 6700.0, None]]
    assert _call_fit(on_line) == pytest.approx(repeated_median(on_line))
    assert _call_fit(on_line)[1] > 1.0
    c0, c1 = _call_fit(steep + [[5130.0, 4000.0, None]])
    assert c1 > 1.0 and 4000.0 > c0 + 0.5 * c1 * 5130.0
    # and just under half: dropped
    c0, c1 = _call_fit(steep + [[5130.0, 2000.0, None]])
    assert c1 == 0.0 and c0 == statistics.median([394.0, 1352.0, 6136.0, 2000.0])
    # with a scale per point (a software renderer) the weighted squares stay
    scaled = [[300.0, 135.0, 1e3], [1000.0, 170.0, 3e3], [4600.0, 350.0, 9e3]]
    w = 1.0 / np.sqrt([q[2] for q in scaled])
    ref = np.linalg.lstsq(np.c_[np.ones(3), [q[0] for q in scaled]] * w[:, None],
                          np.array([q[1] for q in scaled]) * w, rcond=None)[0]
    assert _call_fit(scaled) == pytest.approx(tuple(ref), rel=1e-9)


def test_engine_calibrations_keep_each_reading_at_the_rounds_rank():
    first = {"pass_overhead_us": 5.0, "alu_gflops": 40.0, "write_gbs": 9.0,
             "host_us": {"prepared": 4.0}}
    again = {"pass_overhead_us": 6.0, "alu_gflops": 50.0, "write_gbs": 8.0,
             "host_us": {"prepared": 3.0}}
    # a GPU's rank: the fastest reading of each (costs lowest, rates highest)
    got = CA.ranked_engine([first, again], 0.0)
    assert got is first
    assert got["alu_gflops"] == 50.0 and got["write_gbs"] == 9.0
    assert got["pass_overhead_us"] == 5.0 and got["host_us"] == {"prepared": 3.0}
    # a software renderer's eight rounds: the third lowest cost, the third highest rate; one
    # round's far lower reading is not the one kept
    costs = [7, 1, 8, 4, 6, 3, 9, 5]
    rates = [3, 6, 4, 2, 9, 5, 1, 7]
    rounds = [{"pass_overhead_us": c, "alu_gflops": a, "host_us": {"probe": c}}
              for c, a in zip(costs, rates)]
    got = CA.ranked_engine(rounds, R.rank_share(_Dev(True)))
    assert got["host_us"]["probe"] == got["pass_overhead_us"] == sorted(costs)[2] == 4
    assert got["alu_gflops"] == sorted(rates, reverse=True)[2] == 6
    # a cost only some rounds measured: ranked among those
    more = [{"pass_overhead_us": 1.0, "host_us": {"x": v}} for v in (3.0, 1.0, 2.0)]
    more.append({"pass_overhead_us": 1.0, "host_us": {}})
    assert CA.ranked_engine(more, 0.0)["host_us"]["x"] == 1.0


class _Dev:
    def __init__(self, software):
        self.is_software = software


CAL = type("Case", (), {"algo": "sgemm", "label": "96"})()
CHECK = type("Case", (), {"algo": "sgemm", "label": "128"})()


def _fake_calibration(monkeypatch, log):
    readings = iter([5.0, 3.0, 4.0, 6.0, 7.0, 8.0])

    def calibrate(dev, quick=False, save=True):
        log.append("engine")
        v = next(readings)
        return {"description": "fake", "speeds": {
            "pass_overhead_us": v, "alu_gflops": 100.0 / v, "texel_rate_gtexels": 1.0,
            "write_gbs": 1.0, "host_us": {"prepared": v}}}

    # each round's stated call lengths (nothing is timed)
    stated = {"cases": iter([3.0, 1.0, 2.0, 5.0, 0.5, 4.0]),
              "checks": iter([6.0, 4.0, 5.0, 7.0, 3.5])}

    def timed_rounds(cases, dev, rounds=1, repeat=5, device=True, best=None):
        out = []
        for c in cases:
            kind = "cases" if c is CAL else "checks"
            log.append(kind)
            w = next(stated[kind])
            out.append((w, w / 2, {"round": w}, w / 4))
        return out

    def counted_round(cases, tdev, timed, counted=None, calls=3, share=None):
        log.append(("share", share))
        log.append("counted")
        return [(counted or [0])[0] + 1]          # counts its rounds

    class TimingDevice:
        def __init__(self, timing=False):
            assert timing

        def release(self):
            log.append("released")

    monkeypatch.setattr(CA.C, "calibrate", calibrate)
    monkeypatch.setattr(MC, "timed_rounds", timed_rounds)
    monkeypatch.setattr(CA, "counted_round", counted_round)
    monkeypatch.setattr("shadergpgpu.engine.device.Device", TimingDevice)
    monkeypatch.setattr(CA, "calibration_cases", lambda software: [CAL])
    monkeypatch.setattr(CA, "call_cost_us", lambda dev: 0.0)
    fits = {}

    def kernel_efficiencies(dev, speeds, cases, progress=None, timed=None, counted=None):
        fits["efficiencies"] = (timed, counted)
        return {}, {}, {}

    monkeypatch.setattr(CA, "kernel_efficiencies", kernel_efficiencies)
    monkeypatch.setattr(CA, "call_costs", lambda *a, **k: ({}, {}))
    monkeypatch.setattr(CA, "whole_call_efficiencies", lambda *a: {})
    monkeypatch.setattr(CA, "residual_efficiencies", lambda *a: {})
    return fits


def test_software_calibration_and_checks_run_interleaved_in_rounds(monkeypatch):
    log = []
    fits = _fake_calibration(monkeypatch, log)
    prof, checks = CA.calibrate_and_time(_Dev(True), [CHECK], save=False, rounds=3)
    assert log == ["engine", "cases", "checks", ("share", 0.3), "counted"] * 3 + ["released"]
    # each side the fastest of its three rounds, with its first round's snapshot
    assert checks == [(4.0, 2.0, {"round": 6.0}, 1.0)]
    assert fits["efficiencies"] == ([(1.0, 0.5, {"round": 3.0}, 0.25)], [3])
    sp = prof["speeds"]
    # each engine reading the fastest of the three (5, 3, 4 us)
    assert sp["pass_overhead_us"] == 3.0 and sp["host_us"]["prepared"] == 3.0
    assert sp["alu_gflops"] == pytest.approx(100.0 / 3.0)
    assert prof["calibration_rounds"] == 3


def test_gpu_calibration_keeps_the_lowest_of_five_stated_rounds_and_quick_runs_one(monkeypatch):
    log = []
    fits = _fake_calibration(monkeypatch, log)
    prof, checks = CA.calibrate_and_time(_Dev(False), [CHECK], save=False)
    assert CA.calibration_rounds(_Dev(False)) == CA.GPU_ROUNDS == 5
    assert CA.calibration_rounds(_Dev(True)) == CA.SOFTWARE_ROUNDS
    share = ("share", 0.0)       # the per-draw timings keep their fastest round too
    assert log == ["engine", "cases", "checks", share, "counted"] * 5 + ["released"]
    # the fastest of five stated rounds (the software rank would keep the second fastest)
    assert checks == [(3.5, 1.75, {"round": 6.0}, 0.875)]
    assert fits["efficiencies"] == ([(0.5, 0.25, {"round": 3.0}, 0.125)], [5])
    assert prof["speeds"]["pass_overhead_us"] == 3.0
    log.clear()
    assert CA.calibrate_all(_Dev(False), quick=True, save=False)["calibration_rounds"] == 1
    assert log == ["engine", "cases", share, "counted", "released"]  # quick: one round, no checks


def test_each_algorithms_checks_follow_its_calibration_cases():
    from shadergpgpu.analysis.reports.rounds import beside, split_round

    def case(algo):
        return type("Case", (), {"algo": algo})()
    cases = [case("a"), case("a"), case("b"), case("c"), case("a")]
    checks = [case("b"), case("z"), case("a"), case("a")]
    order = beside(cases, checks)
    # a's cases (the late one too), a's checks; b's; c has none; z has no calibration: last
    assert order == [(0, 0), (0, 1), (0, 4), (1, 2), (1, 3), (0, 2), (1, 0), (0, 3), (1, 1)]
    assert sorted(order) == [(0, i) for i in range(5)] + [(1, i) for i in range(4)]
    got = [f"{'ck' if s else 'cal'}{i}" for s, i in order]
    assert split_round(order, got, (5, 4)) == ([f"cal{i}" for i in range(5)],
                                               [f"ck{i}" for i in range(4)])
    assert beside(cases, []) == [(0, 0), (0, 1), (0, 4), (0, 2), (0, 3)]
    # round r starts at the r-th algorithm (a, b, c in turn), each still beside its checks
    assert beside(cases, checks, 1) == [(0, 2), (1, 0), (0, 3), (0, 0), (0, 1), (0, 4),
                                        (1, 2), (1, 3), (1, 1)]
    assert beside(cases, checks, 2)[:1] == [(0, 3)] and beside(cases, checks, 3) == order
    assert beside([], checks, 1) == [(1, 0), (1, 1), (1, 2), (1, 3)]


def test_rounds_come_to_the_fastest_of_a_few_and_a_low_rank_of_many():
    from shadergpgpu.analysis.reports.rounds import rank, rank_share, rounds_estimate
    err = RuntimeError("refused")
    assert [rank(n) for n in (1, 2, 3, 4, 6, 7, 8, 10)] == [0, 0, 0, 1, 1, 2, 2, 3]
    # a GPU keeps the fastest of any number of rounds
    assert [rank(n, rank_share(_Dev(False))) for n in (1, 3, 5, 10)] == [0, 0, 0, 0]
    assert rank_share(_Dev(True)) == rank_share(None) == 0.3

    def rounds(*stated):
        return [[(w, 2 * w, {"r": w}, 3 * w), (w + 1, w, {}), err if w == 9 else (1, 1, {})]
                for w in stated]
    got = rounds_estimate(rounds(3.0, 1.0, 2.0))
    assert got[0] == (1.0, 2.0, {"r": 3.0}, 3.0) and got[1] == (2.0, 1.0, {})
    assert got[2] == (1, 1, {})
    # one low round the others never saw does not set the estimate alone
    six = rounds(4.0, 0.5, 3.0, 2.0, 5.0, 6.0)
    assert rounds_estimate(six)[0][:2] == (2.0, 4.0)
    # nor do two of eight: the third fastest
    eight = rounds(4.0, 0.5, 3.0, 2.0, 5.0, 6.0, 0.6, 7.0)
    assert rounds_estimate(eight)[0] == (2.0, 4.0, {"r": 4.0}, 6.0)
    assert rounds_estimate(eight, 0.0)[0] == (0.5, 1.0, {"r": 4.0}, 1.5)   # a GPU's fastest
    assert rounds_estimate(rounds(2.0, 9.0))[2] is err       # a refusal in any round
    assert rounds_estimate([]) == []


def test_per_draw_rounds_keep_each_kernels_reading_at_the_rounds_rank(monkeypatch):
    from shadergpgpu.analysis.reports.rounds import rank
    # stated readings (nothing is timed): kernel a's in eight rounds, two of them low
    stated_a = [2.0, 1.5, 0.4, 3.0, 2.5, 0.5, 4.0, 1.0]
    snaps = iter([{"p": {"kernels": {"a": {"gpu_ms": 2.0}, "b": {"gpu_ms": 1.0}}}},
                  {"p": {"kernels": {"a": {"gpu_ms": 1.5}, "b": {"gpu_ms": 3.0}}}}] +
                 [{"p": {"kernels": {"a": {"gpu_ms": v}, "b": {"gpu_ms": 1.0}}}}
                  for v in stated_a[2:]])
    stated_empty = [0.2, 0.1, 0.3, 0.05, 0.4, 0.06, 0.5, 0.7]   # case "ok"'s empty passes
    floors = iter(stated_empty[:1] + [0.5] + stated_empty[1:])     # "bad" reads one, refused

    def count_warm(case, tdev, rounds=3):
        if case == "bad":
            raise RuntimeError("refused")
        return next(snaps)

    monkeypatch.setattr(MC, "count_warm", count_warm)
    monkeypatch.setattr(CK, "_timed_floor", lambda tdev: next(floors))
    err = ValueError("too big")
    got = CK.counted_round(["ok", "bad", "skipped"], None, [(), (), err])
    assert isinstance(got[1], RuntimeError) and got[2] is err
    got = CK.counted_round(["ok", "bad", "skipped"], None, [(), (), err], got)
    snap, kept = got[0][:2]
    # two rounds: each kernel's lowest reading and the lowest empty pass
    assert kept == 0.1
    assert snap["p"]["kernels"] == {"a": {"gpu_ms": 1.5}, "b": {"gpu_ms": 1.0}}
    for _ in range(6):
        got = CK.counted_round(["ok", "bad", "skipped"], None, [(), (), err], got)
    snap, kept = got[0][:2]
    # eight rounds: the reading at the rounds' rank (the third lowest), as whole calls
    assert rank(8) == 2
    assert snap["p"]["kernels"]["a"]["gpu_ms"] == sorted(stated_a)[2] == 1.0
    assert kept == sorted(stated_empty)[2] == 0.1


def test_whole_call_efficiency_prices_its_calibration_call_at_its_wall_time(dev):
    """A kernel taking the bulk of a software renderer's call, priced by the call's wall time
    less the rest of the call: the model then gives that call the time it was handed. Nothing
    is timed: the calls' lengths are stated multiples of the model's own prediction."""
    snap = MC.count(MC.elementwise_case(64), dev)
    sp = M.Speeds(pass_overhead_us=5.0, alu_gflops=0.01, texel_rate_gtexels=0.005,
                  write_gbs=0.05, overlap="sum", threads=2,
                  host_us={"call": 3.0, "run": 1.0, "draw": 2.0})
    p0 = M.total(M.predict(snap, sp))
    for factor in (3.0, 1.5):
        stated = factor * p0
        seen = {}
        eff = CK.whole_call_efficiencies(_Dev(True), sp, ["one-liner"],
                                         [(stated, stated, snap, math.inf)], seen)
        (name, pts), = eff.items()
        assert pts[0][1] > 1.0
        got = M.predict(snap, M.Speeds(**{**M.asdict_speeds(sp), "efficiency": eff}))
        # (the efficiency is stored to 4 digits)
        assert M.total(got) == pytest.approx(stated, rel=1e-4)
    # a call faster than the rest of the model allows gives no sample
    assert CK.whole_call_efficiencies(_Dev(True), sp, ["x"], [(1e-9, 1e-9, snap, 0)], {}) == {}
    # nor one whose kernel's work is under a quarter of its wall time (mostly the rest's error)
    work = M.total(M.predict(snap, sp)) - M.total(M.predict(
        {k: dict(v, kernels={}) for k, v in snap.items()}, sp))
    stated = 1.01 * work / CK.WALL_SHARE
    assert CK.whole_call_efficiencies(_Dev(True), sp, ["x"], [(stated, stated, snap, 0)],
                                      {}) == {}
    stated = 0.99 * work / CK.WALL_SHARE
    assert CK.whole_call_efficiencies(_Dev(True), sp, ["x"], [(stated, stated, snap, 0)],
                                      {}) != {}


def test_software_diagnosis_ignores_per_draw_times_past_the_calls_wall():
    sp = M.Speeds(pass_overhead_us=10.0, alu_gflops=1.0, texel_rate_gtexels=1.0, write_gbs=1.0,
                  overlap="sum")
    snap = {"a": {"passes": 1000, "fragments": 1000, "flops": 0, "fetches": 0, "bytes": 0}}
    pred = M.predict(snap, sp)                                     # 10 ms of overhead
    # a call of 5 ms whose per-draw timing run summed 20 ms: no "device under-predicted"
    msg = M.diagnose(snap, pred, 0.005, sp, {"a": {"gpu_ms": 20.0}})
    assert msg.startswith("over-predicted x0.50") and "exceed the call's" in msg
    # per-draw times inside the wall still split it
    assert "host time over-predicted" in M.diagnose(snap, pred, 0.005, sp, {"a": {"gpu_ms": 1.0}})


def _gpu_speeds(**kw):
    base = dict(pass_overhead_us=2.0, pass_gpu_us=0.05, alu_gflops=1000.0,
                texel_rate_gtexels=10.0, write_gbs=50.0, saturation_fragments=4096.0,
                host_us={"prepared": 2.0, "draw": 4.0, "repeat": 2.0})
    base.update(kw)
    return M.Speeds(**base)


def test_a_gpu_call_of_latency_bound_passes_prices_its_kernels_together(dev):
    """A call whose draws are all under the saturation size and which no kernel dominates
    (a small fused backprop step): its device time, less the other device terms,
    over the kernels' predicted time is each kernel's factor, and the model then gives that
    call the device time it was handed (a stated multiple of the model's own; nothing is
    timed)."""
    snap = MC.count(MC.backprop_case((2, 16, 1), 256, "fused"), dev)
    sp = _gpu_speeds()
    pred = M.predict(snap, sp)
    dev_pred = sum(q["device_s"] for q in pred.values())
    stated = 0.6 * dev_pred                        # nothing is timed
    got = CK._latency_sample(sp, (stated, stated, snap, stated))
    assert got and len({f for _, _, f in got}) == 1
    eff = {name: [[frags, factor]] for name, frags, factor in got}
    again = M.predict(snap, M.Speeds(**{**M.asdict_speeds(sp), "efficiency": eff}))
    priced_again = sum(q["device_s"] for q in again.values())
    assert priced_again == pytest.approx(stated, rel=1e-9)
    # not from larger draws, a host-paced call, nor a call that waits twice
    assert CK._latency_sample(_gpu_speeds(saturation_fragments=8.0),
                              (stated, stated, snap, stated)) is None
    slow_host = _gpu_speeds(host_us={"prepared": 1e4, "draw": 1e4, "repeat": 1e4})
    assert CK._latency_sample(slow_host, (stated, stated, snap, stated)) is None
    waits = {k: dict(v) for k, v in snap.items()}
    waits.setdefault("default", {"passes": 0, "kernels": {}})
    waits["default"] = dict(waits["default"], events={"readback": 2})
    assert CK._latency_sample(sp, (stated, stated, waits, stated)) is None


def test_kernels_no_timing_priced_take_their_share_of_the_calls_residual(dev):
    """A software renderer's kernels whose draws were too short to time (the recursive blur's
    carry and interleave passes) take what a calibration call's wall time leaves beyond the
    rest of the model, up to what their per-draw timings took beyond their modelled time.
    Nothing is timed: the call's wall time and the per-draw times are stated."""
    snap = MC.count(MC.blur_case((32, 32), 2.0), dev)
    sp = M.Speeds(pass_overhead_us=5.0, alu_gflops=0.01, texel_rate_gtexels=0.005,
                  write_gbs=0.05, overlap="sum", threads=2,
                  host_us={"call": 3.0, "run": 1.0, "draw": 2.0})
    names = {n for s in snap.values() for n in (s.get("kernels") or {})}
    unpriced = {n for n in names if "carry" in n or "interleave" in n}
    assert unpriced and unpriced != names
    priced = names - unpriced
    p0 = M.total(M.predict(snap, sp))

    def per_draw(stated_each):
        # every kernel's draws stated at ``stated_each`` seconds beyond an empty pass of 0
        return [{lb: {"kernels": {n: {"gpu_ms": stated_each * 1e3, "passes": k["passes"]}
                                  for n, k in (s.get("kernels") or {}).items()}}
                 for lb, s in snap.items()}, 0.0]

    for factor in (1.5, 1.2):
        stated = factor * p0
        got = CK.residual_efficiencies(sp, ["blur"], [(stated, stated, snap)],
                                       [per_draw(1.0)], priced)
        assert set(got) == unpriced
        factors = [pts[0][1] for pts in got.values()]
        assert factors == pytest.approx([factors[0]] * len(factors), rel=1e-12)
        again = M.predict(snap, M.Speeds(**{**M.asdict_speeds(sp), "efficiency": got}))
        assert M.total(again) == pytest.approx(stated, rel=1e-9)
    # two calls of the same passes: each kernel's shares over its modelled time in both, so
    # the model gives the call the mean of the two stated times
    stated_two = (1.5 * p0, 1.2 * p0)
    got = CK.residual_efficiencies(sp, ["blur", "blur"], [(w, w, snap) for w in stated_two],
                                   [per_draw(1.0)] * 2, priced)
    again = M.predict(snap, M.Speeds(**{**M.asdict_speeds(sp), "efficiency": got}))
    assert M.total(again) == pytest.approx(sum(stated_two) / 2, rel=1e-9)
    # the per-draw timings bound the share: stated 2 ms beyond the modelled time in all
    stated_excess = 2e-3
    modelled = sum(M.kernel_device(sp, n, k)[0] for s in snap.values()
                   for n, k in (s.get("kernels") or {}).items() if n in unpriced)
    entries = sum(n in unpriced for s in snap.values() for n in (s.get("kernels") or {}))
    stated = p0 + 0.5
    got = CK.residual_efficiencies(sp, ["blur"], [(stated, stated, snap)],
                                   [per_draw((modelled + stated_excess) / entries)], priced)
    again = M.predict(snap, M.Speeds(**{**M.asdict_speeds(sp), "efficiency": got}))
    assert M.total(again) == pytest.approx(p0 + stated_excess, rel=1e-9)
    # a call that leaves no residual counts beside one that does: the kernels' factor
    # over both is half the one call's, and the model gives the two calls their mean
    stated_two = (1.5 * p0, p0)
    got = CK.residual_efficiencies(sp, ["blur", "blur"], [(w, w, snap) for w in stated_two],
                                   [per_draw(1.0)] * 2, priced)
    again = M.predict(snap, M.Speeds(**{**M.asdict_speeds(sp), "efficiency": got}))
    assert M.total(again) == pytest.approx(1.25 * p0, rel=1e-9)
    # a residual under RESIDUAL_SHARE of the wall time, or none, prices nothing
    stated = p0 / (1 - 0.9 * CK.RESIDUAL_SHARE)
    assert CK.residual_efficiencies(sp, ["b"], [(stated, stated, snap)], [per_draw(1.0)],
                                    priced) == {}
    assert CK.residual_efficiencies(sp, ["b"], [(p0, p0, snap)], [per_draw(1.0)], priced) == {}
    # every kernel priced, or a case refused: nothing
    assert CK.residual_efficiencies(sp, ["b"], [(2 * p0, 2 * p0, snap)], [per_draw(1.0)],
                                    names) == {}
    assert CK.residual_efficiencies(sp, ["b"], [RuntimeError("refused")], [per_draw(1.0)],
                                    priced) == {}
