"""The fused schedule on uniform blocks (issue 20, item 3): the weights read from uniform-block
windows, the recompute path (one hidden layer over <= 3 inputs, <= 4 outputs: forward through
both layers in one pass, the gradients of both layers in one more, nothing stored per hidden
unit) and the forward products with windowed weights, against float64 numpy; the texture path
under profiles whose uniform blocks are too small; plans equal to the counter; nets sharing a
device."""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.algorithms import backprop as bp
from shadergpgpu.analysis.plans import backprop as bplan
from shadergpgpu.engine import blocks

from tests.reference import assert_close

W_RTOL = 1e-5        # weights after the steps, relative to the largest weight (the bound)
DW_RTOL = 1e-4       # the step's change, relative to the largest change (float32 sums)

# the recompute path: widths of 1, N not a multiple of 4 nor of the gradient pass's chunk (16
# texels), several chunks, every number of inputs (1-3) and outputs (1-4)
RECOMPUTE = [([2, 64, 1], 61), ([3, 5, 2], 7), ([1, 3, 4], 9), ([2, 300, 3], 301),
             ([3, 7, 1], 1), ([1, 1, 1], 5), ([2, 6, 2], 8203)]
# the forward products with windowed weights: 64-256-10 (W1: 65 x 256, more than one 64 KiB
# window: two draws), another two-window layer, two hidden layers (every layer on blocks),
# the recompute texture path below a windowed layer, one training vector
FORWARD = [([64, 256, 10], 70), ([70, 300, 2], 5), ([9, 12, 9, 12], 13), ([16, 20, 9], 61),
           ([2, 16, 8, 1], 21), ([5, 40, 3], 1)]


def _data(sizes, n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (n, sizes[0]))
    T = rng.uniform(0.0, 1.0, (n, sizes[-1]))
    return X, T, bp.init_weights(sizes, seed + 3)


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


#: the uniform-block path whatever the rasteriser (llvmpipe keeps the texture path by default:
#: BackpropTuning.ubo), so that its passes run here; the small test nets take it too
UBO_ON = bp.BackpropTuning(ubo=True, ubo_min_pairs=0)


@pytest.fixture
def ubo_on(dev):
    """:data:`UBO_ON` on the shared device for the test (other devices take it as given)."""
    with dev.tuned(UBO_ON):
        yield UBO_ON


def _kernels(d):
    return {k for v in d.counter.snapshot().values() for k in v["kernels"]}


def _train(d, sizes, n, packed, steps=3, seed=None):
    """Trains ``steps`` steps, checking the weights after each against float64 numpy; returns
    the kernels drawn, the counted passes of one step, the plan and the weights."""
    X, T, W0 = _data(sizes, n, n + len(sizes) if seed is None else seed)
    lr = min(0.9, 4.0 / n)
    refs, W = [], W0
    for _ in range(steps):
        W, _ = bp.numpy_step(W, X, T, lr)
        refs.append(W)
    got = []
    with bp.BackpropNet(d, sizes, X, T, weights=W0, lr=lr, schedule="fused",
                        packed=packed) as net:
        d.counter.reset()
        net.step()
        counted = {k: v["passes"] for k, v in d.counter.snapshot().items()}
        kernels = _kernels(d)
        got.append(net.weights())
        loss0 = bp.numpy_step(W0, X, T, lr)[1]
        assert_close(net.loss(), loss0, rtol=1e-5, atol=0)
        for _ in range(steps - 1):
            net.step()
            got.append(net.weights())
        assert_close(net.outputs(), bp.numpy_forward(refs[-2], X)[-1], rtol=0, atol=1e-5)
        plan = bplan.passes_per_step(net)
    for g, r in zip(got, refs):
        for m in range(len(W0)):
            assert g[m].shape == W0[m].shape
            assert _rel(g[m], r[m]) <= W_RTOL, (sizes, n, packed, m)
    for m in range(len(W0)):
        assert _rel(got[0][m] - W0[m], refs[0][m] - W0[m]) <= DW_RTOL, (sizes, m)
    return kernels, counted, plan, got


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("sizes,n", RECOMPUTE)
def test_recompute_path_matches_float64_numpy(dev, ubo_on, sizes, n, packed):
    kernels, counted, plan, _ = _train(dev, sizes, n, packed)
    p = "packed" if packed else "unpacked"
    assert f"backprop/rc-forward-{p}" in kernels and f"backprop/rc-gradient-{p}" in kernels
    # forward 1, the gradients of both layers 1, apply 2: the hidden layer is never stored
    assert counted == plan == {"forward": 1, "update": 1, "apply": 2}
    assert bplan.fused_phases(sizes, n, packed, device=dev) == counted


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("sizes,n", FORWARD)
def test_windowed_forward_products_match_float64_numpy(dev, ubo_on, sizes, n, packed):
    kernels, counted, plan, _ = _train(dev, sizes, n, packed)
    lim = bp.limits(device=dev)
    layers = [bp.geometry.ubo_forward_plan(lim, sizes[m] + 1, sizes[m + 1], n, packed)
              for m in range(len(sizes) - 1)]
    assert any(layers)
    p = "packed" if packed else "unpacked"
    for u in layers:
        if u:
            assert f"backprop/forward-ubo{u[0]}-{p}" in kernels
    assert counted == plan
    assert bplan.plan_for("fused", packed).expected(sizes=sizes, N=n, packed=packed,
                                                 software=True, tuning=UBO_ON) == counted
    if sizes == [64, 256, 10]:
        assert layers[0][1] == 2          # 65 x 256 floats: two windows, two draws


def test_wrapped_arrays(small_dev, ubo_on):
    # textures of at most 16 x 16 texels: every activation, error and partial-sum array wraps,
    # so the gradient pass steps the output errors' coordinates across texture rows
    with small_dev.tuned(ubo_on):
        for sizes, n in (([2, 9, 2], 21), ([3, 12, 1], 17), ([1, 4, 4], 23)):
            for packed in (True, False):
                kernels, counted, plan, _ = _train(small_dev, sizes, n, packed, steps=2)
                assert any("rc-gradient" in k for k in kernels) and counted == plan
        kernels, counted, plan, _ = _train(small_dev, [9, 12, 3], 13, True, steps=2)
        assert counted == plan


def test_nvidia_window_alignment(dev, ubo_on, monkeypatch):
    # window offsets are multiples of GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT: 256 bytes on NVIDIA
    # (16 on llvmpipe); with 256 the windows of 64-256-10's W1 start at neuron 128 (2176 vec4)
    monkeypatch.setattr(blocks, "offset_alignment", lambda device: 256)
    lim = bp.limits(device=dev)
    assert lim.block_align == 256
    assert bp.geometry.ubo_forward_plan(lim, 65, 256) == (8, 2, 16)
    _train(dev, [64, 256, 10], 37, True, steps=2)
    _train(dev, [70, 300, 2], 9, False, steps=2)


@pytest.mark.parametrize("align", [16, 256])
def test_window_plans_cover_every_neuron(align):
    rng = np.random.default_rng(3)
    for _ in range(300):
        n_in, n_out = int(rng.integers(1, 1200)), int(rng.integers(1, 700))
        lim = bp.limits()
        lim.block_align = align
        u = bp.geometry.ubo_forward_plan(lim, n_in, n_out)
        Q = -(-n_in // 4)
        R = bp.geometry.fwd_rows(lim, n_in, n_out)
        if u is None:
            # the texture path: the direct kernel, or not even one aligned tile per window
            step = np.lcm(R, align // 16 // np.gcd(Q, align // 16))
            assert R == 1 or step * Q > 4096
            continue
        r, nw, hw = u
        per = r * hw
        assert r == R and nw * per >= n_out > (nw - 1) * per
        assert per * Q <= 4096                       # a window holds its neurons' K-quads
        assert (per * Q * 16) % align == 0           # every window starts aligned


@pytest.mark.parametrize("profile", ["webgl2", "geforce-7800gtx"])
def test_texture_path_without_big_uniform_blocks(ubo_on, profile):
    # WebGL2 guarantees 16 KiB windows, the 7800 GTX (GLSL 1.10) none: the schedule keeps the
    # texture path there, even where the uniform-block path is asked for on this rasteriser
    with sg.Device(profile=profile, tuning=ubo_on) as d:
        lim = bp.limits(device=d)
        assert lim.block_bytes < bp.geometry.UBO_BLOCK_BYTES
        for sizes, n in (([2, 64, 1], 61), ([9, 12, 3], 10)):
            kernels, counted, plan, _ = _train(d, sizes, n, True, steps=2)
            assert not any("rc-" in k or "-ubo" in k for k in kernels)
            assert counted == plan == bplan.fused_phases(sizes, n, True, profile=profile,
                                                      software=d.is_software)


def test_the_default_choice_by_device(dev):
    # a hardware rasteriser with 64 KiB blocks (a native plan) takes the uniform-block path;
    # a software one (llvmpipe: measured slower there on the paper's 2-64-1) and the legacy
    # profiles keep the texture path
    profiles = ("webgl2", "mali-gles31", "raspberrypi4", "geforce-7800gtx")
    shapes = (([2, 1024, 1], 16384), ([64, 256, 10], 4096), ([9, 12, 3], 10))
    assert bplan.fused_phases([2, 1024, 1], 16384) == {"forward": 1, "update": 1, "apply": 2}
    # below ubo_min_pairs (hidden units + 1) x N the recompute path is not taken
    assert bplan.fused_phases([2, 64, 1], 1024) != {"forward": 1, "update": 1, "apply": 2}
    assert bplan.fused_phases([2, 64, 1], 1024, tuning=bp.BackpropTuning(ubo_min_pairs=0)) == \
        {"forward": 1, "update": 1, "apply": 2}
    # 64-256-10: two windows for layer 1, one for layer 2: 2 + 1 product draws, 2 gathers
    assert bplan.fused_phases([64, 256, 10], 4096)["forward"] == 5
    on = {(p, i): bplan.fused_phases(*s, profile=p) for p in profiles for i, s in enumerate(shapes)}
    soft = [bplan.fused_phases(*s, software=True) for s in shapes]
    off = bp.BackpropTuning(ubo=False)
    assert soft == [bplan.fused_phases(*s, software=True, tuning=off) for s in shapes]
    assert bplan.fused_phases([2, 1024, 1], 16384, tuning=off) != \
        {"forward": 1, "update": 1, "apply": 2}
    assert on == {(p, i): bplan.fused_phases(*s, profile=p, tuning=off) for p in profiles
                  for i, s in enumerate(shapes)}
    # the forward products of other networks can keep their texture path alone (ubo_forward)
    own = bp.BackpropTuning(ubo_forward=False)
    assert bplan.fused_phases([2, 1024, 1], 16384, tuning=own) == \
        {"forward": 1, "update": 1, "apply": 2}
    assert bplan.fused_phases([64, 256, 10], 4096, tuning=own)["forward"] == 4   # 2 + 2 gathers
    if dev.is_software:
        X, T, W0 = _data([2, 64, 1], 61, 1)
        with bp.BackpropNet(dev, [2, 64, 1], X, T, weights=W0, schedule="fused") as net:
            dev.counter.reset()
            net.step()
            assert not any("rc-" in k for k in _kernels(dev))


def test_nets_on_one_device_do_not_share_blocks(ubo_on):
    # two nets of different shapes on one device, stepped in turn, then the first again: each
    # keeps its own weights' blocks (and programs serve both), every result equal to its own
    # float64 reference, the first net's rerun bit for bit the same
    with sg.Device(tuning=ubo_on) as d:
        a = ([2, 64, 1], 61)
        b = ([3, 9, 2], 22)
        c = ([64, 256, 10], 19)
        first = _train(d, *a, True, steps=2, seed=5)
        nets, refs = [], []
        for (sizes, n), seed in ((a, 5), (b, 6), (c, 7)):
            X, T, W0 = _data(sizes, n, seed)
            lr = min(0.9, 4.0 / n)
            nets.append(bp.BackpropNet(d, sizes, X, T, weights=W0, lr=lr, schedule="fused"))
            refs.append((W0, X, T, lr))
        want = [r[0] for r in refs]
        for _ in range(3):                           # interleaved steps
            for i, net in enumerate(nets):
                net.step()
                W0, X, T, lr = refs[i]
                want[i] = bp.numpy_step(want[i], X, T, lr)[0]
        for net, w in zip(nets, want):
            for g, r in zip(net.weights(), w):
                assert _rel(g, r) <= W_RTOL
            net.release()
        again = _train(d, *a, True, steps=2, seed=5)
        assert again[:3] == first[:3]
        assert all(np.array_equal(g, h) for x, y in zip(again[3], first[3])
                   for g, h in zip(x, y))


def test_set_weights_and_probe_on_blocks(dev, ubo_on):
    # set_weights refreshes the blocks the next step reads; a probe (texture forward passes
    # over other inputs) reads the current weights
    sizes, n = [2, 40, 2], 33
    X, T, W0 = _data(sizes, n, 8)
    W1 = bp.init_weights(sizes, 99)
    with bp.BackpropNet(dev, sizes, X, T, weights=W0, lr=0.1, schedule="fused") as net:
        net.step()
        net.set_weights(W1)
        net.step()
        for g, r in zip(net.weights(), bp.numpy_step(W1, X, T, 0.1)[0]):
            assert _rel(g, r) <= W_RTOL
        Xp = np.random.default_rng(2).uniform(-1, 1, (17, 2))
        y = net.probe(Xp).run().get()[1:].T
        assert_close(y, bp.numpy_forward(net.weights(), Xp)[-1], rtol=1e-7, atol=1e-5)


@pytest.mark.parametrize("chunk", [(4, 4), (16, 16), (128, 128)])
def test_gradient_chunks_in_runs_and_strided(dev, ubo_on, chunk):
    # the gradient pass's chunks of training vectors: every (chunks)-th texel (the default) or
    # one run each; fewer texels than a chunk, a last chunk cut short
    for strided in (True, False):
        with dev.tuned(bp.BackpropTuning, ubo_chunk=chunk, ubo_strided=strided):
            for sizes, n in (([2, 64, 1], 61), ([3, 5, 4], 203)):
                _train(dev, sizes, n, True, steps=2)


@pytest.mark.parametrize("lanes", [1, 2, 4])
def test_newton_reciprocal_lanes(dev, ubo_on, lanes):
    # the sigmoids' reciprocal by Newton's iteration in 1, 2 or 4 lanes of each vec4 (a GPU's
    # balance between its special-function and arithmetic units): the same bound
    dev.tune(bp.BackpropTuning, ubo_newton_forward=lanes, ubo_newton_gradient=lanes)
    for sizes, n in (([2, 64, 1], 61), ([3, 5, 4], 7)):
        _train(dev, sizes, n, True, steps=2)
    # saturated units (|z| up to ~40): 2^s capped in the Newton lanes, a (1 - a) = 0
    X = np.array([[40.0, -40.0], [-40.0, 40.0], [0.5, 0.1], [3.0, -2.0], [-7.0, 9.0]])
    T = np.array([[1.0], [0.0], [0.3], [0.9], [0.2]])
    W0 = [np.array([[0.1, -0.2, 0.3], [1.0, -1.0, 0.5], [-1.0, 1.0, 0.2]]),
          np.array([[0.1], [0.5], [-0.7], [0.3]])]
    ref = bp.numpy_step(W0, X, T, 0.5)[0]
    with bp.BackpropNet(dev, [2, 3, 1], X, T, weights=W0, lr=0.5, schedule="fused") as net:
        net.step()
        for g, r in zip(net.weights(), ref):
            assert _rel(g, r) <= W_RTOL


def test_declared_work(dev, ubo_on):
    # the analysis counts the passes' work: the recompute path's forward and gradient
    # passes each make every hidden activation once (a sigmoid, 16 flops per vec4)
    from shadergpgpu.analysis.work_recorder import recording
    sizes, n = [2, 64, 1], 64
    X, T, W0 = _data(sizes, n, 1)
    with bp.BackpropNet(dev, sizes, X, T, weights=W0, schedule="fused") as net, \
            recording(dev) as rec:
        dev.counter.reset()
        net.step()
        snap = rec.snapshot()
    pairs = 64 * n // 4                              # hidden units x texels of 4 vectors
    assert snap["forward"]["flops"] >= 16 * pairs
    assert snap["update"]["flops"] >= 16 * pairs
    assert snap["update"]["fetches"] >= 2 * pairs    # x1, x2 (the errors once per texel)
    assert snap["forward"]["bytes"] == 32 * 2 * (n // 4)
