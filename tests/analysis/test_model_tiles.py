"""The drawn rectangle in the pass counter and what the cost model makes of it: the tiles an
accumulating pass covers on a GPU (a one-texel strip covers many more than a square of the
same fragments), the tiles a software renderer's threads share, the calibration's tile fit,
and the whole-call samples the kernels' calibration refuses (host-bound floors, calls that
wait for the device more than once)."""
import numpy as np
import pytest

from shadergpgpu.analysis import cost_model as M
from shadergpgpu.analysis.work_recorder import recording
from shadergpgpu.engine.builtin import COPY, SAXPY
from shadergpgpu.analysis.calibration import _fit_tiles


@pytest.fixture
def rec(dev):
    """The analysis's recorder of the calls' work, observing ``dev`` for the test."""
    with recording(dev) as r:
        yield r


def _draws(snap, kernel):
    return [d for s in snap.values() for d in s["kernels"].get(kernel, {}).get("draws", [])]


def test_counter_records_the_drawn_rectangle_on_every_path(rec, dev):
    strip = dev.array(np.ones((1, 64)), packed=False)          # 64 x 1 texels
    square = dev.array(np.ones((8, 8)), packed=False)          # 8 x 8 texels
    s_out, q_out = dev.empty_like(strip), dev.empty_like(square)
    acc = dev.empty_like(strip)
    p_acc = dev.prepare(SAXPY, acc, inputs={"X": strip, "Y": strip}, uniforms={"alpha": 0.0},
                        blend=bool(dev.float_blending))
    p_rect = dev.prepare(COPY, q_out, inputs={"X": square}, rect=(1, 2, 3, 4))
    dev.finish()
    dev.counter.reset()
    dev.run(COPY, s_out, inputs={"X": strip})                  # the device's path
    dev.run(COPY, s_out, inputs={"X": strip})                  # its cached fast path
    dev.run(COPY, q_out, inputs={"X": square}, rect=(0, 0, 2, 5))
    p_rect.run()
    p_rect.run()
    p_acc.repeat("alpha", [1.0, 2.0, 3.0])
    p_acc.sweep([(0, 0, 16, 1), (16, 0, 48, 1)])
    snap = rec.snapshot()
    copy = {(d[0], tuple(d[6:])): d[1] for d in _draws(snap, "engine/copy")}
    assert copy == {(64, (64, 1)): 2, (10, (2, 5)): 1, (12, (3, 4)): 2}
    sax = {(d[0], tuple(d[6:])): d[1] for d in _draws(snap, "engine/saxpy")}
    assert sax == {(64, (64, 1)): 3, (16, (16, 1)): 1, (48, (48, 1)): 1}
    # the sums the shapes rode along with are the fragments drawn
    assert snap["default"]["fragments"] == 2 * 64 + 10 + 2 * 12 + 3 * 64 + 16 + 48
    np.testing.assert_array_equal(s_out.get(), strip.get())


def test_compacted_draws_keep_one_rectangle_and_drop_mixed_ones(rec, dev, monkeypatch):
    from shadergpgpu.analysis import work_recorder as C
    monkeypatch.setattr(C, "DRAWS_CAP", 4)
    x = dev.array(np.ones((16, 16)), packed=False)
    y = dev.empty_like(x)
    dev.counter.reset()
    for w in range(1, 9):            # eight rectangles of one kernel: merged past the cap
        dev.run(COPY, y, inputs={"X": x}, rect=(0, 0, w, 1))
    d = _draws(rec.snapshot(), "engine/copy")
    assert sum(e[1] for e in d) == 8
    assert sum(e[0] * e[1] for e in d) == pytest.approx(sum(range(1, 9)))
    merged = [e for e in d if e[1] > 1]
    assert len(merged) == 1 and len(merged[0]) == 6             # several rectangles: none
    monkeypatch.setattr(C, "DRAWS_CAP", 1)
    dev.counter.reset()
    for _ in range(3):               # two kernels, one rectangle each: merged, kept
        dev.run(COPY, y, inputs={"X": x}, rect=(0, 0, 2, 1))
        dev.run(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 1.0},
                rect=(2, 3, 4, 5))
    snap = rec.snapshot()
    assert [tuple(e[6:]) for e in _draws(snap, "engine/copy")] == [(2, 1)]
    assert [tuple(e[6:]) for e in _draws(snap, "engine/saxpy")] == [(4, 5)]


def _acc_snap(size, passes=100):
    frags = size[0] * size[1]
    return {"p": {"passes": passes, "fragments": passes * frags, "dependent": 0,
                  "switches": 0, "paths": {"repeat": passes}, "events": {},
                  "event_bytes": {},
                  "kernels": {"acc": {"passes": passes, "paths": {"repeat": passes},
                                      "draws": [[frags, passes, 1.0, 1.0, 16.0, 0.0,
                                                 *size]]}}}}


def _gpu(**kw):
    base = dict(pass_overhead_us=1.0, alu_gflops=1e4, texel_rate_gtexels=1e3, write_gbs=1e4,
                pass_gpu_us=1.5, pass_gpu_us_per_kfragment=0.2, tile=(16, 16),
                pass_gpu_us_per_tile=0.05, host_us={"repeat": 0.01})
    base.update(kw)
    return M.Speeds(**base)


def test_an_accumulating_strip_pays_for_the_tiles_it_covers():
    sp = _gpu()
    strip = M.predict(_acc_snap((4096, 1)), sp)["p"]["device_s"]
    square = M.predict(_acc_snap((64, 64)), sp)["p"]["device_s"]
    # 256 tiles of 16 against 16: the same fragments, far more time
    assert strip == pytest.approx(100 * (1.5 + 0.05 * 256) * 1e-6)
    assert square == pytest.approx(100 * (1.5 + 0.05 * 16) * 1e-6)
    assert M.tiles((4096, 1), 16) == 256 and M.tiles((17, 17), 16) == 4
    # without a calibrated tile (or a draw without its rectangle) the per-fragment term prices it
    plain = M.predict(_acc_snap((4096, 1)), _gpu(tile=(0, 0)))["p"]["device_s"]
    assert plain == pytest.approx(100 * (1.5 + 0.2 * 4.096) * 1e-6)
    old = _acc_snap((64, 64))
    old["p"]["kernels"]["acc"]["draws"][0] = old["p"]["kernels"]["acc"]["draws"][0][:6]
    assert M.predict(old, sp)["p"]["device_s"] == pytest.approx(plain)
    # profiles carry the tile terms
    back = M.Speeds.from_dict(M.asdict_speeds(sp))
    assert (back.tile, back.pass_gpu_us_per_tile) == ((16, 16), 0.05)
    assert M.Speeds.from_dict({**M.asdict_speeds(sp), "tile": [1, 2]}).tile == (1, 2)
    # a strip one texel high costs as much as one two high where tiles are 1 x 2
    assert M.tiles((4096, 1), (1, 2)) == M.tiles((4096, 2), (1, 2)) == 4096
    assert M.tiles((1, 4096), (1, 2)) == 2048


def test_software_renderer_threads_share_the_tiles_of_the_rectangle():
    sp = M.Speeds(pass_overhead_us=1.0, alu_gflops=1.0, texel_rate_gtexels=1.0, write_gbs=1.0,
                  overlap="sum", threads=2)
    # 4,096 fragments: one 64 x 64 tile (one thread of two), a 4096 x 1 strip covers 64
    assert sp.occupancy(4096, (64, 64)) == 2.0
    assert sp.occupancy(4096, (4096, 1)) == 1.0
    assert sp.occupancy(4096) == 2.0                  # no rectangle: packed in whole tiles


@pytest.mark.parametrize("tile", [(8, 8), (16, 16), (1, 2), (2, 1), (32, 4)])
def test_tile_fit_finds_the_tile_and_cost(tile):
    from shadergpgpu.analysis.calibration import TILE_PROBES
    per = 0.04
    got = _fit_tiles({s: per * M.tiles(s, tile) for s in TILE_PROBES})
    assert got[0] == tile and got[1] == pytest.approx(per)
    assert _fit_tiles({s: 0.0 for s in TILE_PROBES}) == ((0, 0), 0.0)


class _Dev:
    is_software = False


def _floor_case(device, readbacks=0, host_us=0.01):
    snap = _acc_snap((4096, 1), passes=1000)
    snap["p"]["events"] = {"readback": readbacks} if readbacks else {}
    return _gpu(host_us={"repeat": host_us}), (device, device, snap, device)


def test_kernel_calibration_refuses_host_bound_floors_and_calls_that_wait_twice():
    from shadergpgpu.analysis.reports.calibrate_kernels import HOST_BOUND, _dominant_sample
    floor = 1000 * (1.5 + 0.05 * 256) * 1e-6
    sp, timed = _floor_case(1.5 * floor)
    got = _dominant_sample(_Dev(), None, sp, timed)
    assert got[:2] == ("acc", "floor") and got[3] == pytest.approx(1.5)
    # the host needs as long to issue the passes as the device took: its pace, not the floor
    host_us = HOST_BOUND * 1.5 * floor * 1e6 / 1000
    assert _dominant_sample(_Dev(), None, *_floor_case(1.5 * floor, host_us=host_us)) is None
    assert _dominant_sample(_Dev(), None,
                            *_floor_case(1.5 * floor, host_us=0.9 * host_us)) is not None
    # waits inside the call: the query spans the host's work between them
    assert _dominant_sample(_Dev(), None, *_floor_case(1.5 * floor, 2)) is None
    # one wait (the result's readback at the end): kept
    assert _dominant_sample(_Dev(), None, *_floor_case(1.5 * floor, 1)) is not None


def test_host_steal_share_reads_the_machine(monkeypatch, tmp_path):
    from shadergpgpu.analysis.reports import hostload
    assert hostload.steal_share((10, 1000), (40, 1100)) == pytest.approx(0.3)
    assert hostload.steal_share(None, (1, 2)) is None
    assert hostload.steal_share((5, 100), (5, 100)) is None
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 10 0 5 35 0 0\ncpu0 1 2 3\n")
    real_open = open
    monkeypatch.setattr("builtins.open", lambda p, *a, **k: real_open(
        stat if p == "/proc/stat" else p, *a, **k))
    assert hostload.cpu_times() == (35, 1000)
    stat.write_text("intr 1 2 3\n")
    assert hostload.cpu_times() is None


def test_two_engine_calibrations_keep_the_lower_host_cost_of_each():
    from shadergpgpu.analysis.reports.calibrate import ranked_engine
    first = {"pass_overhead_us": 5.0, "host_us": {"prepared": 4.0, "repeat": 2.0}}
    again = {"pass_overhead_us": 3.0, "host_us": {"prepared": 2.5, "repeat": 3.0, "run": 1.0}}
    got = ranked_engine([first, again], 0.0)
    assert got is first
    assert got["host_us"] == {"prepared": 2.5, "repeat": 2.0, "run": 1.0}
    assert got["pass_overhead_us"] == 3.0
