"""Backpropagation on render passes: equations vs float64 numpy, pass counts, API, demos, report."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shadergpgpu.algorithms import backprop as bp
from shadergpgpu.analysis.plans import backprop as bplan
from tests.conftest import LEGACY_PROFILES

from tests.reference import assert_close

ROOT = Path(__file__).resolve().parents[3]
XOR_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float64)
XOR_Y = np.array([0, 1, 1, 0], dtype=np.float64)

# (layer sizes, N): N % 4 != 0, widths of 1, deeper nets, wrapping not needed
SHAPES = [([2, 4, 1], 4), ([3, 5, 2], 7), ([1, 1, 1], 5), ([1, 3, 1], 1), ([4, 3, 2, 3], 9),
          ([2, 16, 1], 33)]
VARIANTS = [("paper", True), ("paper", False), ("fused", True), ("fused", False)]

# Tolerances: weights after a step, relative to the largest weight (the bound), and the
# weight change of the step, relative to the largest change (float32 sums of N products).
W_RTOL = 1e-5
DW_RTOL = 1e-4


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def _net_data(sizes, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, sizes[0]))
    T = rng.uniform(0.0, 1.0, (n, sizes[-1]))
    return X, T, bp.init_weights(sizes, seed + 7)


@pytest.mark.parametrize("schedule,packed", VARIANTS)
@pytest.mark.parametrize("sizes,n", SHAPES)
def test_two_steps_match_float64_numpy(dev, sizes, n, schedule, packed):
    X, T, W0 = _net_data(sizes, n, seed=len(sizes) * 10 + n)
    lr = min(0.9, 4.0 / n)
    ref1, loss0 = bp.numpy_step(W0, X, T, lr)
    ref2, loss1 = bp.numpy_step(ref1, X, T, lr)
    with bp.BackpropNet(dev, sizes, X, T, weights=W0, lr=lr, schedule=schedule,
                        packed=packed) as net:
        net.step()
        got1 = net.weights()
        assert_close(net.loss(), loss0, rtol=1e-5, atol=0)
        net.step()                       # second step: the ping-pong weight buffers
        got2 = net.weights()
        assert_close(net.outputs(), bp.numpy_forward(ref1, X)[-1], rtol=0, atol=1e-5)
    for m in range(len(W0)):
        assert got1[m].shape == W0[m].shape
        assert _rel(got1[m], ref1[m]) <= W_RTOL
        assert _rel(got2[m], ref2[m]) <= W_RTOL
        assert _rel(got1[m] - W0[m], ref1[m] - W0[m]) <= DW_RTOL


def _measured(dev, net):
    dev.counter.reset()
    net.step()
    return {k: v["passes"] for k, v in dev.counter.snapshot().items()}


@pytest.mark.parametrize("mi,mh,mo,n", [(2, 64, 1, 1024), (2, 4, 1, 4), (1, 1, 1, 5),
                                        (3, 7, 2, 10), (5, 3, 4, 2)])
@pytest.mark.float_blend("the paper's pass-count formulas")
def test_paper_pass_counts_match_the_formulas(dev, mi, mh, mo, n):
    X, T, W0 = _net_data([mi, mh, mo], n, 1)
    for packed in (True, False):
        with bp.BackpropNet(dev, [mi, mh, mo], X, T, weights=W0, schedule="paper",
                            packed=packed) as net:
            got = _measured(dev, net)
        counted = got["forward"] + got["backprop"] + got["update"]
        if packed:      # N/2 when 4 divides N; ceil(N/4) passes per weight layer otherwise
            assert counted == mi + mh + mo + 2 * ((n + 3) // 4) + 4
            if n % 4 == 0:
                assert counted == mi + mh + mo + n // 2 + 4
        else:
            assert counted == mi + mh + mo + 2 * n + 4
        assert got["forward"] == mi + mh + 4 and got["backprop"] == mo
        # the passes the paper does not count, under their own labels
        assert got["output-error"] == 1 and got["apply"] == 2
        assert set(got) == {"forward", "backprop", "update", "output-error", "apply"}


@pytest.mark.float_blend("the paper's pass counts")
def test_deeper_paper_counts_and_plans(dev):
    sizes, n = [3, 5, 4, 2], 6
    X, T, W0 = _net_data(sizes, n, 2)
    with bp.BackpropNet(dev, sizes, X, T, weights=W0, schedule="paper", packed=True) as net:
        got = _measured(dev, net)
        assert got == bplan.passes_per_step(net)
    assert got["forward"] == (3 + 2) + (5 + 2) + (4 + 2)
    assert got["backprop"] == 4 + 2
    assert got["update"] == 3 * 2
    plan = bplan.plan_for("paper", True)
    assert plan.name == "backprop/paper-packed"
    assert plan.expected(sizes=sizes, N=n) == got


@pytest.mark.parametrize("choice", [dict(fuse_delta=True, recompute=True, buffers=False),
                                    dict(fuse_delta=True, recompute=False, buffers=True),
                                    dict(fuse_delta=False, recompute=False, buffers=False)])
def test_hardware_choices_are_exact(dev, choice):
    # the choices of a hardware rasteriser (BackpropTuning: the default and the alternatives
    # measured), run here on this device: weights within W_RTOL of float64, the plan equal to
    # the counter, no buffer mirrors without "buffers"
    with dev.tuned(bp.BackpropTuning, **choice):
        _hardware_choices(dev, choice)
    fd, rc = choice["fuse_delta"], choice["recompute"]
    # the texture path's plans (with uniform blocks 2-64-1 takes 4: tests/algorithms/backprop/test_backprop_ubo.py)
    hw = bp.BackpropTuning(ubo=False, **choice)
    # 2-64-1: 5 passes with both, 6 with the errors made inside the gradient, 7 with neither
    assert sum(bplan.fused_phases([2, 64, 1], 1024, tuning=hw).values()) == \
        (5 if rc else 6 if fd else 7)
    # a software rasteriser keeps all three by default
    assert sum(bplan.fused_phases([2, 64, 1], 1024, software=True).values()) == 5


def _hardware_choices(dev, choice):
    for sizes, n in (([2, 64, 1], 61), ([3, 5, 2], 7), ([4, 9, 3, 2], 37)):
        X, T, W0 = _net_data(sizes, n, 9)
        lr = min(0.9, 4.0 / n)
        ref = bp.numpy_step(bp.numpy_step(W0, X, T, lr)[0], X, T, lr)[0]
        for packed in (True, False):
            with bp.BackpropNet(dev, sizes, X, T, weights=W0, lr=lr, schedule="fused",
                                packed=packed) as net:
                assert _measured(dev, net) == bplan.passes_per_step(net)
                net.step()
                got = net.weights()
                if not choice["buffers"]:
                    assert all(mi is None for ms in net._mirrors for mi in ms)
            for m in range(len(W0)):
                assert _rel(got[m], ref[m]) <= W_RTOL, (sizes, packed, m)


#: the texture path (no uniform blocks) on any device
TEXTURES = bp.BackpropTuning(ubo=False)


def test_fused_pass_count_is_independent_of_n(dev):
    # the paper's shape (at most 3 inputs, at most 4 outputs): the hidden layer and its errors
    # are never stored (the output layer's forward pass and both gradients make them), so
    # forward 1, update 2, apply 2 = 5 passes whatever N and MH; [5, 64, 4]: the hidden errors
    # are made inside the first gradient (no backprop pass), the output layer's 65 inputs run
    # register-tiled plus a gather pass: 1 + 2 forward, 2 update, 2 apply = 7 ([5, 12, 2]:
    # all direct, 6); [16, 20, 9]: 2 + 2 forward, 2 backprop (tiled + gather), 2 update,
    # 2 apply = 10
    for sizes, total in (([2, 4, 1], 5), ([2, 64, 1], 5), ([5, 64, 4], 7), ([5, 12, 2], 6),
                         ([16, 20, 9], 10)):
        counts = set()
        for n in (4, 61, 1024):
            X, T, W0 = _net_data(sizes, n, 3)
            for packed in (True, False):
                with bp.BackpropNet(dev, sizes, X, T, weights=W0, schedule="fused",
                                    packed=packed) as net:
                    got = _measured(dev, net)
                    assert got == bplan.passes_per_step(net)
                counts.add(tuple(sorted(got.items())))
                # the plan of a hardware rasteriser (a software one gathers a hidden layer's
                # tiles one render target per pass: [16, 20, 9] then takes 7 gathers, not 1),
                # on the texture path (uniform blocks: tests/algorithms/backprop/test_backprop_ubo.py)
                assert sum(bplan.fused_phases(sizes, n, packed, tuning=TEXTURES).values()) == \
                    total, sizes
        assert len(counts) == 1, sizes


def test_tile_rows_choice():
    # fewest fetches per K-quad over all rows, then the fewest wasted rows; within the outputs
    assert [bp.tile_rows(8, r) for r in (1, 2, 3, 4, 8, 10, 64, 256)] == [1, 4, 4, 4, 8, 4, 8, 8]
    assert bp.tile_rows(4, 256) == 4 and bp.tile_rows(1, 256) == 1
    # the tiled kernels share SGEMM's micro-tile step (one include, not a copy)
    tiled = sorted((ROOT / "shaders/algorithms/backprop").glob("tile_*.frag"))
    users = [f.name for f in tiled if '#include "ops/product/tile.glsl"' in f.read_text()]
    assert users == ["tile_backprop.frag", "tile_forward.frag", "tile_partial.frag"]


def test_xor_every_seed_0_to_9(dev):
    # the demo's defaults: 2-4-1, paper schedule, packed, lr 2, 1000 steps
    for seed in range(10):
        with bp.BackpropNet(dev, [2, 4, 1], XOR_X, XOR_Y[:, None], lr=2.0, schedule="paper",
                            weights=bp.init_weights([2, 4, 1], seed)) as net:
            net.step(1000)
            out = bp.device_forward(dev, net.weights(), XOR_X)[:, 0]
            assert np.array_equal(out >= 0.5, XOR_Y >= 0.5), seed
            assert net.loss() < 0.05


def test_backprop_net_validation(dev):
    # the trainer itself: targets of sigmoid units, weights of the right shapes
    with pytest.raises(ValueError, match=r"T: .*\[0, 1\]"):
        bp.BackpropNet(dev, [2, 3, 1], XOR_X, XOR_Y * 2)
    with pytest.raises(ValueError, match=r"weights do not chain"):
        bp.BackpropNet(dev, [2, 3, 1], XOR_X, XOR_Y, weights=[np.zeros((3, 3)), np.zeros((3, 1))])
    with pytest.raises(ValueError, match=r"weights\[0\]: expected shape"):
        bp.BackpropNet(dev, [2, 3, 1], XOR_X, XOR_Y, weights=[np.zeros((3, 2)), np.zeros((3, 1))])
    with pytest.raises(ValueError, match="X: expected 2 columns"):
        bp.BackpropNet(dev, [2, 3, 1], XOR_X[:, :1], XOR_Y)
    with pytest.raises(ValueError, match=r"sizes\[1\]"):
        bp.BackpropNet(dev, [2, 0, 1], XOR_X, XOR_Y)


# ---- device_forward validation ----------------------------------------------------------------
def test_device_forward_matches_numpy_and_validates(dev):
    rng = np.random.default_rng(4)
    W = bp.init_weights([3, 5, 2], 1)
    X = rng.uniform(-1, 1, (6, 3))
    for packed in (True, False):
        assert_close(bp.device_forward(dev, W, X, packed=packed), bp.numpy_forward(W, X)[-1],
                     rtol=1e-7, atol=1e-6)
    with pytest.raises(ValueError, match="X has 4 features but weights\\[0\\] expects 3"):
        bp.device_forward(dev, W, rng.uniform(size=(6, 4)))
    with pytest.raises(ValueError, match="X must be 2-D"):
        bp.device_forward(dev, W, X[0])
    with pytest.raises(TypeError, match="X: complex"):
        bp.device_forward(dev, W, X + 1j)
    with pytest.raises(ValueError, match="weights do not chain: weights\\[0\\] has 5 outputs"):
        bp.device_forward(dev, [W[0], np.zeros((4, 2))], X)
    with pytest.raises(TypeError, match="weights must be a list"):
        bp.device_forward(dev, W[0], X)
    with pytest.raises(ValueError, match="weights\\[1\\] must be 2-D"):
        bp.device_forward(dev, [W[0], np.zeros(6)], X)
    with pytest.raises(ValueError, match="weights\\[0\\] contains NaN"):
        bp.device_forward(dev, [np.full((4, 5), np.nan), W[1]], X)


# ---- the loop budget: layers wider than the device's loop cap -----------------------------------
@pytest.fixture(scope="module")
def capped():
    """capped(N): a device whose loop cap is forced to N (one per cap, released at the end)."""
    import shadergpgpu as sg

    made = {}

    def get(cap):
        if cap not in made:
            made[cap] = sg.Device(limits=sg.Limits(loop_cap=cap))
        return made[cap]

    yield get
    for d in made.values():
        d.release()


# Loop caps forced small so that small layers exceed them, plus the llvmpipe cap (65,535) with a
# layer of 300,000 inputs (75,001 K-quads: an unsplit loop would stop early and return wrong
# weights). The tiled products loop over K-quads (four inputs per iteration):
# [300, 4, 250] at cap 50: the 76 K-quads of layer 1 and the 63 of the 250 errors propagated
#   back exceed it (tiled products cut over accumulating passes; the loss loop too);
# [210, 230, 3] at cap 40: both forward layers split; [5, 7, 3] with N = 1200 at cap 16: the
#   update's chunk is cut to the cap and the apply loop over 19-75 chunks splits.
CAPPED = [([300, 4, 250], 9, 50), ([210, 230, 3], 6, 40), ([5, 7, 3], 1200, 16),
          ([300000, 2, 1], 8, 65535)]


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("sizes,n,cap", CAPPED)
def test_fused_schedule_splits_loops_over_the_cap(capped, sizes, n, cap, packed):
    d = capped(cap)
    X, T, W0 = _net_data(sizes, n, seed=n)
    lr = min(0.9, 4.0 / n)
    ref1, loss0 = bp.numpy_step(W0, X, T, lr)
    with bp.BackpropNet(d, sizes, X, T, weights=W0, lr=lr, schedule="fused",
                        packed=packed) as net:
        got = _measured(d, net)
        w = net.weights()
        assert_close(net.loss(), loss0, rtol=1e-5, atol=0)   # the split loss loop too
        assert got == bplan.passes_per_step(net)                    # the plan stays exact
        # the registered plan's parameters describe a device with float blending
        assert not d.float_blending or got == bplan.plan_for("fused", packed).expected(sizes=sizes, N=n, packed=packed,
                                                                 loop_cap=cap,
                                                                 software=d.is_software)
    for m in range(len(W0)):
        assert _rel(w[m], ref1[m]) <= W_RTOL, m                # float64 reference, 1e-5
        assert _rel(w[m] - W0[m], ref1[m] - W0[m]) <= DW_RTOL, m
    # more passes than the normal path (no cap), which stays within 4K - 3 .. 6K - 2 (the
    # texture path; the uniform-block path adds a draw per weight window past the first)
    normal = bplan.fused_phases(sizes, n, packed, tuning=TEXTURES)
    K = len(sizes) - 1
    assert sum(got.values()) > sum(normal.values())
    assert 4 * K - 3 <= sum(normal.values()) <= 6 * K - 2
    assert_close(bp.device_forward(d, ref1, X, packed=packed), bp.numpy_forward(ref1, X)[-1],
                 rtol=1e-7, atol=1e-5)


def test_split_plan_counts():
    # layer 1: 301 inputs = 76 K-quads of a 4-row tile: ceil(76 / 50) = 2 product passes +
    # 1 gather; layer 2 (5 inputs): direct. Backprop: 63 K-quads, 2 passes + 1 gather.
    assert bplan.fused_phases([300, 4, 250], 9, loop_cap=50) == \
        {"forward": 2 + 1 + 1, "backprop": 2 + 1, "update": 2, "apply": 2}
    assert bplan.fused_phases([300, 4, 250], 9) == {"forward": 3, "backprop": 2, "update": 2,
                                                  "apply": 2}
    # without float blending (the 7800 GTX) each extra slice of an R-target product is
    # 1 + 2R ping-pong passes; its loop cap of 255 splits nothing here
    assert bplan.fused_phases([300, 4, 250], 9, loop_cap=50, profile="geforce-7800gtx") == \
        {"forward": (1 + 9) + 1 + 1, "backprop": (1 + 9) + 1, "update": 2, "apply": 2}


@pytest.mark.float_blend("the paper's pass counts")
def test_paper_schedule_is_unaffected_by_the_cap(capped):
    sizes, n = [250, 3, 2], 7
    X, T, W0 = _net_data(sizes, n, 5)
    d = capped(200)
    ref1, _ = bp.numpy_step(W0, X, T, 0.3)
    with bp.BackpropNet(d, sizes, X, T, weights=W0, lr=0.3, schedule="paper") as net:
        got = _measured(d, net)
        w = net.weights()
    assert got == bplan.paper_phases(sizes, n)
    for m in range(2):
        assert _rel(w[m], ref1[m]) <= W_RTOL


# ---- programs: sizes are uniforms ------------------------------------------------------------
def test_random_shapes_compile_a_bounded_number_of_programs():
    import shadergpgpu as sg
    from shadergpgpu.engine.kernels import REGISTRY

    rng = np.random.default_rng(11)
    # every backprop kernel (both packings, every tile height R) in at most two layout kinds
    # (an output layer or partial sums wrapped into a squarer texture, or not): a bound that
    # does not grow with the shapes trained
    BOUND = 2 * sum(1 for k in REGISTRY.kernels if k.startswith("backprop/"))
    with sg.Device() as d:
        def fit(sizes, n, schedule, packed):
            X, T, W0 = _net_data(sizes, n, int(rng.integers(1000)))
            with bp.BackpropNet(d, sizes, X, T, weights=W0, lr=0.1, schedule=schedule,
                                packed=packed) as net:
                net.step()
                net.loss()
            bp.device_forward(d, W0, X, packed=packed)

        # a spread of kernels and tile heights: direct, R = 4 and R = 8 products
        for schedule, packed in VARIANTS:
            for sizes in ([3, 4, 2], [3, 4, 5, 2], [9, 12, 9, 12], [9, 16, 9, 16], [9, 3, 9, 1],
                          [9, 16, 2], [9, 2, 1], [9, 1, 1], [2, 16, 2], [2, 16, 1], [2, 1, 1],
                          [2, 16, 16], [2, 10, 3]):
                fit(sizes, 6, schedule, packed)
        shapes = []
        for _ in range(20):
            depth = int(rng.integers(2, 5))
            sizes = [int(v) for v in rng.integers(1, 40, depth)]
            shapes.append((sizes, VARIANTS[int(rng.integers(4))]))
        for sizes, (schedule, packed) in shapes:
            fit(sizes, int(rng.integers(1, 60)), schedule, packed)
        warm = d.shaders.compiles
        # the same networks on other numbers of training vectors: the kernels and tile heights
        # depend on the widths only, and every size is a uniform: no new program
        for sizes, (schedule, packed) in shapes:
            fit(sizes, int(rng.integers(1, 60)), schedule, packed)
        assert d.shaders.compiles == warm
        assert warm <= BOUND
        assert d.n_programs <= BOUND


# ---- device profiles --------------------------------------------------------------------------
PROFILES = list(LEGACY_PROFILES)


@pytest.fixture(scope="module")
def profiled():
    import shadergpgpu as sg

    made = {}

    def get(name):
        if name not in made:
            made[name] = sg.Device(profile=name)
        return made[name]

    yield get
    for d in made.values():
        d.release()


# small nets that still reach every path: direct and tiled products (R = 4 and 8 where the
# profile has 8 draw buffers), a deeper net, N not divisible by 4
PROFILE_SHAPES = [([3, 5, 2], 7), ([9, 12, 3], 10), ([4, 9, 10, 1], 9)]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("schedule,packed", VARIANTS)
def test_schedules_adapt_to_device_profiles(profiled, profile, schedule, packed):
    d = profiled(profile)
    for sizes, n in PROFILE_SHAPES:
        X, T, W0 = _net_data(sizes, n, seed=n)
        lr = min(0.9, 4.0 / n)
        ref1, loss0 = bp.numpy_step(W0, X, T, lr)
        with bp.BackpropNet(d, sizes, X, T, weights=W0, lr=lr, schedule=schedule,
                            packed=packed) as net:
            got = _measured(d, net)
            w = net.weights()
            assert_close(net.loss(), loss0, rtol=1e-5, atol=0)
            # the plan from the device, and from the profile's name alone, equal the counter
            assert got == bplan.passes_per_step(net)
            assert got == bplan.plan_for(schedule, packed).expected(
                sizes=sizes, N=n, packed=packed, profile=profile, software=d.is_software)
        for m in range(len(W0)):
            assert _rel(w[m], ref1[m]) <= W_RTOL, (sizes, m)
        if schedule == "paper" and not d.float_blending:
            # every accumulating pass of the paper's count is drawn as 3 ping-pong passes
            counted = got["forward"] + got["backprop"] + got["update"]
            assert counted > bplan.paper_formula_total(sizes, n, packed)


@pytest.mark.parametrize("packed", [True, False])
def test_fused_schedule_wraps_at_the_profile_texture_size(profiled, packed):
    # WebGL2's 2048-texel textures: 9,000 training vectors wrap every activation array (and
    # its render targets and partial sums); no buffer textures there, so no buffer mirrors
    d = profiled("webgl2")
    sizes, n = [9, 20, 3], 9000
    X, T, W0 = _net_data(sizes, n, 6)
    lr = 1.0 / n
    ref1, _ = bp.numpy_step(W0, X, T, lr)
    with bp.BackpropNet(d, sizes, X, T, weights=W0, lr=lr, schedule="fused",
                        packed=packed) as net:
        got = _measured(d, net)
        assert all(a.layout.wrapped for a in net.A)
        assert got == bplan.passes_per_step(net)
        w = net.weights()
    for m in range(2):
        assert _rel(w[m], ref1[m]) <= W_RTOL


def test_paper_count_under_the_7800_gtx(profiled):
    # the paper's 2-64-1, N = 1024 packed: 583 passes counted with one pass per accumulation
    # (blending); the 7800 GTX has no float32 blending, so forward (2 + 64 accumulating
    # passes), backprop (none for MO = 1) and update (2 x 255) take 3 passes each
    ph = bplan.paper_phases([2, 64, 1], 1024, True, profile="geforce-7800gtx")
    assert bplan.paper_formula_total([2, 64, 1], 1024, True) == 583
    assert ph["forward"] == (1 + 2 * 3 + 1) + (1 + 64 * 3 + 1)
    assert ph["backprop"] == 1 and ph["update"] == 2 * (1 + 255 * 3)
    # the fused schedule has no accumulating pass here: as a native device's texture path (the
    # 7800 GTX has no uniform blocks)
    assert bplan.fused_phases([2, 64, 1], 1024, True, profile="geforce-7800gtx") == \
        bplan.fused_phases([2, 64, 1], 1024, True, tuning=TEXTURES)


def test_fused_schedule_under_the_7800_gtx_loop_cap(profiled):
    # 300 inputs: 76 K-quads fit the cap of 255; 1100 inputs (276 quads) do not: the product
    # is cut in two, the second slice accumulated by 1 + 2R ping-pong passes (R = 4 there)
    d = profiled("geforce-7800gtx")
    sizes, n = [1100, 6, 2], 5
    X, T, W0 = _net_data(sizes, n, 4)
    ref1, _ = bp.numpy_step(W0, X, T, 0.2)
    with bp.BackpropNet(d, sizes, X, T, weights=W0, lr=0.2, schedule="fused") as net:
        got = _measured(d, net)
        w = net.weights()
    assert got == bplan.fused_phases(sizes, n, profile="geforce-7800gtx", software=d.is_software)
    # layer 1: 6 neurons in a 4-row tile (2 rows per target): 1 gather pass, or on a software
    # rasteriser one per non-empty target (3); layer 2 direct
    assert got["forward"] == (1 + (1 + 2 * 4)) + (3 if d.is_software else 1) + 1
    for m in range(2):
        assert _rel(w[m], ref1[m]) <= W_RTOL


def _run(args, env=None, timeout=120):
    e = dict(os.environ, PYTHONUNBUFFERED="1")
    e.update(env or {})
    return subprocess.run([sys.executable] + args, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=e)


@pytest.mark.float_blend("the demo's printed paper pass counts")
def test_xor_demo_default_prints_loss_table_and_passes():
    r = _run(["demos/backprop_xor.py"])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "loss" in out and "truth table" in out and "XOR learned" in out
    assert "MI + MH + MO + N/2 + 4 = 13" in out and "(match)" in out
    assert "MISMATCH" not in out


@pytest.mark.float_blend("the demo's printed paper pass counts")
def test_xor_demo_unpacked_option():
    r = _run(["demos/backprop_xor.py", "--unpacked", "--hidden", "3", "--steps", "1500",
              "--seed", "4"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "MI + MH + MO + 2N + 4 = 18" in r.stdout and "(match)" in r.stdout


@pytest.mark.slow
def test_digits_demo_reaches_95_percent():
    r = _run(["demos/backprop_digits.py"], timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    acc = float(r.stdout.split("held-out accuracy")[1].split()[0])
    assert acc >= 0.95


@pytest.mark.window
def test_xor_demo_window_under_xvfb():
    pytest.importorskip("glfw")
    xvfb_run = shutil.which("xvfb-run")
    if xvfb_run is None and not os.environ.get("DISPLAY"):
        pytest.skip("no DISPLAY and no xvfb-run")
    cmd = [sys.executable, "demos/backprop_xor.py", "--window", "--steps", "200", "--lr", "4"]
    if not os.environ.get("DISPLAY"):
        cmd = [xvfb_run, "-a"] + cmd
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "XOR learned" in r.stdout


def test_report_profile_shows_the_forced_pass_structure(tmp_path):
    from shadergpgpu.analysis.reports import backprop as rep

    rc = rep.main(["--quick", "--out", str(tmp_path), "--no-progress", "--no-timing",
                   "--profile", "geforce-7800gtx"])
    assert rc == 0
    md = (tmp_path / "backprop.md").read_text()
    assert "under profile geforce-7800gtx" in md
    assert "The paper's count assumes something this GPU lacks" in md
    assert "All measured counts match their plans: **yes**" in md
    import json
    rows = json.loads((tmp_path / "passes.json").read_text())["rows"]
    r = [r for r in rows if r["net"] == "2-64-1" and r["variant"] == "paper-packed"][0]
    assert r["paper formula"] == 583
    assert r["measured (counted)"] == 583 + 2 * (2 + 64 + 2 * 255) == 1735


@pytest.mark.float_blend("the report's paper pass counts")
def test_report_quick(tmp_path):
    from shadergpgpu.analysis.reports import backprop as rep

    rc = rep.main(["--quick", "--out", str(tmp_path), "--no-progress", "--mh-max", "64",
                   "--n-max", "64"])
    assert rc == 0
    for f in ("backprop.md", "passes.csv", "passes.json", "fig3.csv", "fig4.json"):
        assert (tmp_path / f).is_file(), f
    md = (tmp_path / "backprop.md").read_text()
    assert "All measured counts match their plans: **yes**" in md
    import json
    rows = json.loads((tmp_path / "passes.json").read_text())["rows"]
    paper = [r for r in rows if r["net"] == "2-64-1" and r["N"] == 1024]
    by = {r["variant"]: r for r in paper}
    assert by["paper-packed"]["measured (counted)"] == 2 + 64 + 1 + 1024 // 2 + 4
    assert by["paper-unpacked"]["measured (counted)"] == 2 + 64 + 1 + 2 * 1024 + 4
    # 2-64-1: the hidden layer recomputed; where the uniform-block path is taken (hardware
    # with 64 KiB blocks) one pass runs forward through both layers: 4 passes, else 5
    from shadergpgpu import Device
    from shadergpgpu.algorithms.backprop import geometry
    d = Device()
    ubo = geometry.ubo_recompute([2, 64, 1], geometry.limits(device=d), 1024)
    d.release()
    assert by["fused"]["total measured"] == (4 if ubo else 5)
    fig3 = json.loads((tmp_path / "fig3.json").read_text())["rows"]
    # the quick Fig. 3 sweep: MH in {4, 64} at N = 1024, every implementation timed, and the
    # speed-up columns are the ratios of those timings
    assert sorted((r["MH"], r["N"]) for r in fig3) == [(4, 1024), (64, 1024)]
    for r in fig3:
        for impl in rep.IMPLS:
            assert np.isfinite(r[f"{impl} s"]), (impl, r)
        for impl in rep.IMPLS[:3]:
            assert r[f"speed-up {impl} vs numpy"] == pytest.approx(r["numpy s"] / r[f"{impl} s"])
