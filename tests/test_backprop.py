"""Backpropagation on render passes: equations vs float64 numpy, pass counts, API, demos, report."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shadergpgpu.algorithms import backprop as bp

ROOT = Path(__file__).resolve().parent.parent
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
        assert net.loss() == pytest.approx(loss0, rel=1e-5)
        net.step()                       # second step: the ping-pong weight buffers
        got2 = net.weights()
        np.testing.assert_allclose(net.outputs(), bp.numpy_forward(ref1, X)[-1],
                                   rtol=0, atol=1e-5)
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


def test_deeper_paper_counts_and_plans(dev):
    sizes, n = [3, 5, 4, 2], 6
    X, T, W0 = _net_data(sizes, n, 2)
    with bp.BackpropNet(dev, sizes, X, T, weights=W0, schedule="paper", packed=True) as net:
        got = _measured(dev, net)
        assert got == net.passes_per_step()
    assert got["forward"] == (3 + 2) + (5 + 2) + (4 + 2)
    assert got["backprop"] == 4 + 2
    assert got["update"] == 3 * 2
    plan = bp.plan_for("paper", True)
    assert plan.name == "backprop/paper-packed"
    assert plan.expected(sizes=sizes, N=n) == got


def test_fused_pass_count_is_independent_of_n_and_widths(dev):
    counts = set()
    for sizes, n in [([2, 4, 1], 4), ([2, 64, 1], 1024), ([7, 33, 5], 61)]:
        X, T, W0 = _net_data(sizes, n, 3)
        for packed in (True, False):
            with bp.BackpropNet(dev, sizes, X, T, weights=W0, schedule="fused",
                                packed=packed) as net:
                got = _measured(dev, net)
            counts.add(tuple(sorted(got.items())))
    assert len(counts) == 1
    assert sum(dict(counts.pop()).values()) == 7


def test_xor_every_seed_0_to_9(dev):
    # the demo's defaults: 2-4-1, paper schedule, packed, lr 2, 1000 steps
    for seed in range(10):
        m = bp.MLP(hidden=(4,), lr=2.0, steps=1000, seed=seed, schedule="paper", packed=True,
                   loss_every=0, device=dev).fit(XOR_X, XOR_Y)
        assert np.array_equal(m.predict(XOR_X), XOR_Y.astype(int)), seed
        assert m.loss_curve_[-1] < 0.05


def test_estimator_attributes_and_predict(dev):
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (13, 3))
    Y = rng.uniform(0, 1, (13, 2))
    m = bp.MLP(hidden=(5, 4), schedule="paper", packed=False, lr=0.5, steps=6, seed=1,
               loss_every=2, device=dev).fit(X, Y)
    ref = bp.init_weights([3, 5, 4, 2], 1)
    losses = []
    for _ in range(6):
        ref, loss = bp.numpy_step(ref, X, Y, 0.5)
        losses.append(loss)
    assert m.loss_steps_ == [0, 2, 4, 5]
    np.testing.assert_allclose(m.loss_curve_, [losses[s] for s in m.loss_steps_], rtol=1e-5)
    for w, r in zip(m.weights_, ref):
        assert _rel(w, r) <= W_RTOL
    assert [c.shape for c in m.coefs_] == [(3, 5), (5, 4), (4, 2)]
    assert [b.shape for b in m.intercepts_] == [(5,), (4,), (2,)]
    Xn = rng.uniform(0, 1, (9, 3))
    np.testing.assert_allclose(m.predict_proba(Xn), bp.numpy_forward(m.weights_, Xn)[-1],
                               atol=1e-5)
    assert m.predict(Xn).shape == (9, 2)
    assert m.passes_per_step_ == bp.paper_phases([3, 5, 4, 2], 13, packed=False)


def test_n_iter_counts_steps_run_when_callback_stops(dev):
    stop_at = 4
    m = bp.MLP(hidden=(4,), steps=50, loss_every=2, seed=0, device=dev,
               callback=lambda s, loss, net: s < stop_at).fit(XOR_X, XOR_Y)
    assert m.loss_steps_[-1] == stop_at
    assert m.n_iter_ == stop_at + 1          # steps 0..4 ran, then the callback stopped it
    full = bp.MLP(hidden=(4,), steps=7, device=dev).fit(XOR_X, XOR_Y)
    assert full.n_iter_ == 7


def test_validation_errors(dev):
    m = bp.MLP(device=dev, steps=1)
    with pytest.raises(ValueError, match="not fitted"):
        m.predict(XOR_X)
    bad = XOR_X.copy()
    bad[1, 0] = np.nan
    with pytest.raises(ValueError, match="X: contains NaN"):
        m.fit(bad, XOR_Y)
    with pytest.raises(ValueError, match=r"y: .*\[0, 1\]"):
        m.fit(XOR_X, XOR_Y * 2)
    with pytest.raises(ValueError, match="y: has 3 rows"):
        m.fit(XOR_X, XOR_Y[:3])
    with pytest.raises(ValueError, match="X: expected a 2-D"):
        m.fit(XOR_X[:, 0], XOR_Y)
    with pytest.raises(ValueError, match="y: contains NaN"):
        m.fit(XOR_X, np.array([0, np.inf, 1, 0]))
    with pytest.raises(ValueError, match="schedule"):
        bp.MLP(schedule="cuda", device=dev).fit(XOR_X, XOR_Y)
    with pytest.raises(ValueError, match="lr"):
        bp.MLP(lr=0.0, device=dev).fit(XOR_X, XOR_Y)
    with pytest.raises(ValueError, match="hidden"):
        bp.MLP(hidden=(4, 0), device=dev).fit(XOR_X, XOR_Y)
    with pytest.raises(TypeError, match="X"):
        m.fit(np.array([["a", "b"]]), [0])
    fitted = bp.MLP(device=dev, steps=1).fit(XOR_X, XOR_Y)
    with pytest.raises(ValueError, match="X: expected 2 columns"):
        fitted.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="weights"):
        bp.BackpropNet(dev, [2, 3, 1], XOR_X, XOR_Y, weights=[np.zeros((3, 3))])


def test_classifier_on_digits_subset(dev):
    datasets = pytest.importorskip("sklearn.datasets")
    d = datasets.load_digits()
    X, y = d.data[:600] / 16.0, d.target[:600]
    m = bp.MLPClassifier(hidden=(24,), schedule="fused", lr=0.01, steps=250, seed=0,
                         loss_every=0, device=dev).fit(X[:450], y[:450])
    assert list(m.classes_) == list(range(10))
    assert m.score(X[450:], y[450:]) >= 0.85
    assert m.loss_curve_[-1] < 0.5 * 450 * 0.9 * 0.25   # well below the untrained loss


def _run(args, env=None, timeout=120):
    e = dict(os.environ, PYTHONUNBUFFERED="1")
    e.update(env or {})
    return subprocess.run([sys.executable] + args, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=e)


def test_xor_demo_default_prints_loss_table_and_passes():
    r = _run(["demos/backprop_xor.py"])
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "loss" in out and "truth table" in out and "XOR learned" in out
    assert "MI + MH + MO + N/2 + 4 = 13" in out and "(match)" in out
    assert "MISMATCH" not in out


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


def test_report_quick(tmp_path):
    from shadergpgpu.frontends.reports import backprop as rep

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
    assert by["fused"]["total measured"] == 7
    fig3 = json.loads((tmp_path / "fig3.json").read_text())["rows"]
    # the quick Fig. 3 sweep: MH in {4, 64} at N = 1024, every implementation timed, and the
    # speed-up columns are the ratios of those timings
    assert sorted((r["MH"], r["N"]) for r in fig3) == [(4, 1024), (64, 1024)]
    for r in fig3:
        for impl in rep.IMPLS:
            assert np.isfinite(r[f"{impl} s"]), (impl, r)
        for impl in rep.IMPLS[:3]:
            assert r[f"speed-up {impl} vs numpy"] == pytest.approx(r["numpy s"] / r[f"{impl} s"])
