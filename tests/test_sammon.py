"""Sammon mapping on the engine against float64 numpy / scipy references."""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.engine import plans
from shadergpgpu.algorithms.sammon import Sammon, min_chunks, pca_init


# ---- an independent float64 reference of eq. 1, 3 and 4 -------------------------------------
def _dn(X):
    X = np.asarray(X, dtype=np.float64)
    return np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))


def _stress_and_dir(Dn, Y):
    d = Y[:, None, :] - Y[None, :, :]
    Dm = np.sqrt((d ** 2).sum(-1))
    off = ~np.eye(len(Y), dtype=bool) & (Dn > 0)
    E = ((Dn[off] - Dm[off]) ** 2 / Dn[off]).sum() / Dn[off].sum()
    W = np.zeros_like(Dn)
    with np.errstate(divide="ignore", invalid="ignore"):  # dm = 0: the term is 0 (see module)
        W[off] = (Dn[off] - Dm[off]) / (Dn[off] * Dm[off])
    W[~np.isfinite(W)] = 0.0
    G = (W[:, :, None] * d).sum(1)
    return E, G


def _fixed_steps(X, Y0, lam, n_iter):
    Dn = _dn(X)
    mu = 2.0 * lam / Dn.sum()             # eq. 4: sum over i != j (the diagonal is 0)
    Y = np.asarray(Y0, dtype=np.float64).copy()
    hist = []
    for _ in range(n_iter):
        E, G = _stress_and_dir(Dn, Y)
        hist.append(E)
        Y = Y + mu * G                      # eq. 3
    hist.append(_stress_and_dir(Dn, Y)[0])
    return Y, hist


@pytest.fixture(scope="module")
def random500():
    rng = np.random.default_rng(7)
    return rng.uniform(0, 1, (500, 20)), rng.uniform(0, 1, (500, 2))


@pytest.mark.parametrize("layout,cache,split", [("rows", False, 1), ("columns", False, 3),
                                                ("rows", True, 2)])
def test_fixed_step_matches_float64(dev, random500, layout, cache, split):
    X, Y0 = random500
    lam = 250.0   # eq. 4's mu with lambda = 0.5 barely moves 500 points; this moves them
    Yr, hist = _fixed_steps(X, Y0, lam, 10)
    assert np.abs(Yr - Y0).max() > 0.05          # the reference really moved
    s = Sammon(n_iter=10, step="source", learning_rate=lam, init=Y0, layout=layout,
               cache=cache, split=split, tol=None, device=dev).fit(X)
    assert s.cached_ is cache
    assert s.embedding_.dtype == np.float32 and s.embedding_.shape == (500, 2)
    err = np.abs(s.embedding_ - Yr).max() / np.abs(Yr).max()
    assert err < 1e-4, err
    np.testing.assert_allclose(s.stress_history_, hist, rtol=1e-4)
    assert s.n_iter_ == 11


def test_stress_decreases(dev):
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(c, 1.0, (60, 8)) for c in (0.0, 6.0, 12.0)])
    s = Sammon(n_iter=60, init="random", random_state=0, device=dev).fit(X)
    h = np.array(s.stress_history_)
    assert np.all(np.diff(h) <= 1e-7 * h[:-1]) and h[-1] < 0.5 * h[0]
    # fixed step from the source, with a step that does move: also monotone here
    s2 = Sammon(n_iter=15, step="source", learning_rate=60.0, init=pca_init(X, 2), tol=None,
                device=dev).fit(X)
    h2 = np.array(s2.stress_history_)
    assert np.all(np.diff(h2) < 0)
    Dn = _dn(X)
    assert abs(s2.stress_ - _stress_and_dir(Dn, s2.embedding_.astype(np.float64))[0]) \
        < 1e-4 * s2.stress_


def test_duplicates_and_coincident_targets(dev):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 5))
    X[10] = X[3]
    X[20] = X[3]              # three identical source points (dn = 0)
    Y0 = rng.normal(size=(40, 2))
    Y0[7] = Y0[8]             # coinciding targets with dn > 0 (dm = 0)
    for step in ("source", "adaptive"):
        s = Sammon(n_iter=20, step=step, learning_rate=5.0, init=Y0, device=dev).fit(X)
        assert np.isfinite(s.embedding_).all()
        assert np.isfinite(s.stress_history_).all()
        Dn = _dn(X)
        E0 = _stress_and_dir(Dn, Y0)[0]    # pairs with dn = 0 skipped
        assert abs(s.stress_history_[0] - E0) < 1e-5 * E0


@pytest.mark.parametrize("layout", ["rows", "columns"])
def test_wrapped_textures(layout, random500):
    """Textures wrap past a small MAX_TEXTURE_SIZE; results are unchanged."""
    X, Y0 = random500
    X, Y0 = X[:300, :24], Y0[:300]
    Yr, _ = _fixed_steps(X, Y0, 100.0, 3)
    for cap, cache in ((64, False), (256, True)):
        d = sg.Device(max_texture_size=cap)
        try:
            s = Sammon(n_iter=3, step="source", learning_rate=100.0, init=Y0, layout=layout,
                       cache=cache, tol=None, device=d).fit(X)
        finally:
            d.release()
        assert np.abs(s.embedding_ - Yr).max() < 1e-4 * np.abs(Yr).max()


def test_digits_default_within_5pct_of_converged_reference(dev):
    """Defaults on scikit-learn's digits (64-D -> 2-D, PCA start) against L-BFGS in float64.

    The float64 reference is converged on the first 500 digits (the full 1,797 take ~30 s in
    scipy here; the demo runs those).
    """
    from scipy.optimize import minimize
    from sklearn.datasets import load_digits
    X = load_digits().data[:500].astype(np.float64)
    Y0 = pca_init(X, 2)
    Dn = _dn(X)
    off = ~np.eye(len(X), dtype=bool)
    c = Dn[off].sum()

    def f(v):
        Y = v.reshape(-1, 2)
        E, G = _stress_and_dir(Dn, Y)
        return E, (-4.0 / c * G).ravel()     # dE/dY = -(4 / sum_{i != j} dn) * G
    ref = minimize(f, Y0.ravel(), jac=True, method="L-BFGS-B",
                   options={"maxiter": 3000, "ftol": 1e-13, "gtol": 1e-10}).fun
    s = Sammon(device=dev).fit(X)
    assert s.stress_ <= 1.05 * ref, (s.stress_, ref)
    assert s.stress_ < 0.7 * s.stress_history_[0]
    E = _stress_and_dir(Dn, s.embedding_.astype(np.float64))[0]
    assert abs(E - s.stress_) < 1e-4 * E


def test_pass_plan_matches_counter(dev, random500):
    X, Y0 = random500
    X, Y0 = X[:200], Y0[:200]
    plan = plans.get_plan("sammon/fit")
    for step, cache, layout in (("source", False, "columns"), ("adaptive", True, "rows")):
        dev.counter.reset()
        s = Sammon(n_iter=7, step=step, learning_rate=50.0, init=Y0, cache=cache,
                   layout=layout, tol=None, split=2, device=dev).fit(X)
        rows = plans.compare(plan, dev.counter.snapshot(), n=200, n_features=20, layout=layout,
                             n_evals=s.n_iter_, split=s.split_, cached=cache,
                             n_rejects=s.n_rejected_, adaptive=step == "adaptive")
        assert all(r["match"] for r in rows), rows
        if step == "source":
            # Hard-coded, independent of the plan helpers: n_iter=7 gives E = 8 evaluations (the
            # final stress included). setup: 1 row-sum chunk (20 inner iterations x 50 blocks
            # of 4 points = 1,000 < LOOP_BUDGET) + 2 reduce passes (50 texels -> 4 -> 1, fan-in
            # 16) = 3; update: 8 evaluations x 2 chunks = 16; stress: 8 x 2 reduce passes = 16.
            snap = dev.counter.snapshot()
            assert s.n_iter_ == 8
            assert sum(v["passes"] for k, v in snap.items() if k.startswith("sammon/")) \
                == 3 + 16 + 16 == 35


def test_min_chunks_respects_loop_budget():
    assert min_chunks(10_000, 200, "columns") > min_chunks(10_000, 200, "rows") >= 2
    assert min_chunks(1000, 8, "cached") == 1


def test_fit_transform_and_params(dev):
    X = np.random.default_rng(0).normal(size=(30, 6))
    s = Sammon(n_components=3, n_iter=5, device=dev)
    Y = s.fit_transform(X)
    assert Y.shape == (30, 3) and Y is s.embedding_
    assert s.get_params()["n_components"] == 3
    with pytest.raises(ValueError, match="invalid parameter"):
        s.set_params(bogus=1)


@pytest.mark.parametrize("kwargs,X,exc,msg", [
    ({"n_components": 5}, None, ValueError, "n_components"),
    ({"n_components": 0}, None, ValueError, "n_components"),
    ({"n_components": 2.0}, None, TypeError, "n_components"),
    ({"n_iter": 0}, None, ValueError, "n_iter"),
    ({"learning_rate": -1.0}, None, ValueError, "learning_rate"),
    ({"learning_rate": float("nan")}, None, ValueError, "learning_rate"),
    ({"layout": "diag"}, None, ValueError, "layout"),
    ({"step": "newton"}, None, ValueError, "step"),
    ({"init": "spectral"}, None, ValueError, "init"),
    ({"init": np.zeros((3, 2))}, None, ValueError, "init"),
    ({"split": 0}, None, ValueError, "split"),
    ({"cache": "yes"}, None, ValueError, "cache"),
    ({"tol": -1.0}, None, ValueError, "tol"),
    ({}, np.array([[1.0, np.nan], [0.0, 1.0]]), ValueError, "NaN"),
    ({}, np.ones(5), ValueError, "2-D"),
    ({}, np.ones((1, 3)), ValueError, "at least 2"),
    ({}, np.array([["a", "b"], ["c", "d"]]), TypeError, "X"),
    ({}, np.ones((4, 3)), ValueError, "coincide"),
])
def test_validation(dev, kwargs, X, exc, msg):
    if X is None:
        X = np.random.default_rng(0).normal(size=(10, 4))
    with pytest.raises(exc, match=msg):
        Sammon(device=dev, **dict({"n_iter": 2}, **kwargs)).fit(X)


def test_failed_setup_releases_textures(dev):
    X = np.ones((40, 3))                    # all samples coincide: setup raises
    for cache in (True, False):
        with pytest.raises(ValueError, match="coincide"):    # warm the device's reduce cache
            Sammon(n_iter=2, cache=cache, device=dev).fit(X)
        live = dev.pool.live
        with pytest.raises(ValueError, match="coincide"):
            Sammon(n_iter=2, cache=cache, device=dev).fit(X)
        assert dev.pool.live == live


def test_report_quick(tmp_path):
    from shadergpgpu.frontends.reports import sammon as report
    assert report.main(["--quick", "--out", str(tmp_path), "--no-plots", "--no-progress"]) == 0
    import json
    rows = json.loads((tmp_path / "sammon.json").read_text())["rows"]
    assert len(rows) == 6 and all(r["plan matches"] for r in rows)
    # the fixed-step runs follow the float64 rule to float32 accuracy
    for r in rows:
        if r["config"].endswith("/source"):
            assert abs(r["stress end"] - r["numpy float64 end"]) < 1e-4 * r["numpy float64 end"]
