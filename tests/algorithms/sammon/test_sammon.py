"""Sammon mapping on the engine against float64 numpy / scipy references."""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.analysis import plans
from shadergpgpu.algorithms import sammon as sm
from shadergpgpu.analysis.plans import sammon as smplan
from shadergpgpu.algorithms.sammon import Sammon, pca_init

from tests.reference import assert_close


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
    assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)
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
    assert_close(s2.stress_, _stress_and_dir(Dn, s2.embedding_.astype(np.float64))[0], rtol=0,
                 atol=1e-4 * s2.stress_)


@pytest.mark.parametrize("step", ["source", "adaptive"])
def test_duplicates_and_coincident_targets(dev, step):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 5))
    X[10] = X[3]
    X[20] = X[3]              # three identical source points (dn = 0)
    Y0 = rng.normal(size=(40, 2))
    Y0[7] = Y0[8]             # coinciding targets with dn > 0 (dm = 0)
    s = Sammon(n_iter=20, step=step, learning_rate=5.0, init=Y0, device=dev).fit(X)
    assert np.isfinite(s.embedding_).all()
    assert np.isfinite(s.stress_history_).all()
    Dn = _dn(X)
    E0 = _stress_and_dir(Dn, Y0)[0]    # pairs with dn = 0 skipped
    assert_close(s.stress_history_[0], E0, rtol=1e-5, atol=0)


@pytest.mark.parametrize("cap,cache", [(64, False), (256, True)])
@pytest.mark.parametrize("layout", ["rows", "columns"])
def test_wrapped_textures(layout, cap, cache, random500):
    """Textures wrap past a small MAX_TEXTURE_SIZE; results are unchanged."""
    X, Y0 = random500
    X, Y0 = X[:300, :24], Y0[:300]
    Yr, _ = _fixed_steps(X, Y0, 100.0, 3)
    d = sg.Device(limits=sg.Limits(max_texture_size=cap))
    try:
        s = Sammon(n_iter=3, step="source", learning_rate=100.0, init=Y0, layout=layout,
                   cache=cache, tol=None, device=d).fit(X)
    finally:
        d.release()
    assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max(),
                 what=f"{layout}, texture cap {cap}")


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
    assert_close(s.stress_, E, rtol=1e-4, atol=0)


def _plan_rows(dev, s, n, n_features, **kw):
    plan = plans.get_plan("sammon/fit")
    params = smplan.plan_params(s, dev)
    assert (params["n"], params["n_features"]) == (n, n_features)
    return plans.compare(plan, dev.counter.snapshot(), **dict(params, **kw))


def test_pass_plan_matches_counter(dev, random500):
    X, Y0 = random500
    X, Y0 = X[:200], Y0[:200]
    for step, cache, layout in (("source", False, "columns"), ("adaptive", True, "rows")):
        dev.counter.reset()
        s = Sammon(n_iter=7, step=step, learning_rate=50.0, init=Y0, cache=cache,
                   layout=layout, tol=None, split=2, device=dev).fit(X)
        rows = _plan_rows(dev, s, 200, 20)
        assert all(r["match"] for r in rows), rows
        if step == "source" and dev.float_blending:   # (else ping-pong accumulation's counts)
            # Hard-coded, independent of the plan helpers: n_iter=7 gives E = 8 evaluations (the
            # final stress included). setup: 1 row-sum pass (50 blocks of 4 points x (1 + 20 +
            # 4) loop iterations = 1,250 < the loop cap) + 2 reduce passes over the 200-texel
            # stress vector (200 -> 13 -> 1, fan-in 16) = 3; update: 8 evaluations x 2 chunks =
            # 16; stress: 8 x 2 reduce passes = 16 where the device sums it, none where the
            # host does (the default on GPUs, step.stress_on_host).
            snap = dev.counter.snapshot()
            assert s.n_iter_ == 8 and s.split_ == 2
            stress = 0 if sm.step.stress_on_host(dev) else 16
            assert sum(v["passes"] for k, v in snap.items() if k.startswith("sammon/")) \
                == 3 + 16 + stress


def test_pass_plan_at_report_size(dev):
    """The report's configurations at N = 1,000 (the reduce of a 1,000-texel vector takes 3
    passes, 1000 -> 63 -> 4 -> 1), a few iterations: plan == counter, phase by phase."""
    from sklearn.datasets import load_digits
    X = load_digits().data[:1000]
    Y0 = pca_init(X, 2)
    snaps = {}
    for step in ("source", "adaptive"):
        for layout, cache in (("rows", False), ("columns", False), ("rows", True)):
            dev.counter.reset()
            s = Sammon(n_iter=2, step=step, learning_rate=500.0, init=Y0, layout=layout,
                       cache=cache, tol=None, device=dev).fit(X)
            rows = _plan_rows(dev, s, 1000, 64)
            assert all(r["match"] for r in rows), (layout, cache, step, rows)
            snaps[(layout, cache, step)] = dev.counter.snapshot()
    # independent: 3 reduce passes per stress sum; per evaluation one tiled update pass and
    # its finishing pass (rows), one pair-kernel pass (columns)
    snap = snaps[("rows", False, "source")]
    assert snaps[("rows", False, "source")]["sammon/update"]["passes"] == 3 * 2
    snap = snaps[("columns", False, "source")]
    if sm.step.stress_on_host(dev):     # summed on the host (GPUs): no reduction passes
        assert "sammon/stress" not in snap
    else:
        assert snap["sammon/stress"]["passes"] == 3 * 3
    assert snap["sammon/update"]["passes"] == 3
    assert snap["sammon/setup"]["passes"] == 1 + 3


def test_sweep_chunks_respect_pass_work():
    for n, d, src in ((100_000, 200, "rows"), (100_000, 200, "columns"), (30_000, 8, "cached")):
        chunks = sm.sweep_chunks(n, d, src)
        units = sm.sweep_units(n, src)
        assert sum(nb for _, nb in chunks) == units
        assert all(b0 % sm.sweep_align(src) == 0 for b0, _ in chunks)
        points = 1 if src == "rows" else 4
        texels = {"rows": sm.ceil_div(d, 4), "columns": d, "cached": 1}[src]
        for _, nb in chunks:   # pair-texel fetches of one pass, within one unit's rounding
            assert n * nb * points * texels <= 4 * sm.SammonTuning().pass_work + \
                8 * n * points * texels
    assert len(sm.sweep_chunks(100_000, 200, "columns")) > len(sm.sweep_chunks(100_000, 200,
                                                                                  "rows")) >= 2
    assert sm.sweep_chunks(1000, 8, "cached") == [(0, 250)]
    assert sm.sweep_chunks(1001, 8, "rows", split=3) == [(0, 332), (332, 336), (668, 333)]


def test_forced_loop_cap_gives_the_uncapped_fit(dev, random500):
    """A device with a small loop cap cuts every sweep into more passes; the fit is the same."""
    X, Y0 = random500
    X, Y0 = X[:120], Y0[:120]
    small = sg.Device(limits=sg.Limits(loop_cap=100))
    try:
        for layout, cache in (("rows", False), ("columns", False), ("rows", True)):
            kw = dict(n_iter=6, step="adaptive", learning_rate=50.0, init=Y0, layout=layout,
                      cache=cache, tol=None)
            a = Sammon(device=dev, **kw).fit(X)
            small.counter.reset()
            b = Sammon(device=small, **kw).fit(X)
            assert b.split_ > a.split_   # really cut: rows 3 x 120 points, columns 25 x 30 blocks,
            #                             cached 5 x 30 blocks > 100
            assert b.cached_ is cache
            assert_close(b.embedding_, a.embedding_, rtol=0,
                         atol=1e-5 * np.abs(a.embedding_).max())
            assert_close(b.stress_history_, a.stress_history_, rtol=1e-5, atol=0)
            assert all(r["match"] for r in _plan_rows(small, b, 120, 20))
    finally:
        small.release()


def test_loop_cap_too_small_is_refused_by_argument():
    X = np.random.default_rng(4).normal(size=(40, 120))
    tiny = sg.Device(limits=sg.Limits(loop_cap=100))
    try:
        # columns: one block of four points runs 1 + 120 + 4 iterations: no cut can fit
        with pytest.raises(ValueError, match="fewer features"):
            Sammon(n_iter=2, layout="columns", cache=False, device=tiny).fit(X)
        # the distance cache needs 4 x (1 + 30) iterations per texel
        with pytest.raises(ValueError, match="cache=False"):
            Sammon(n_iter=2, layout="rows", cache=True, device=tiny).fit(X)
        # "auto" does not cache then, and the tiled rows sweep (blocks of 16 points, at most
        # 1 + 2 x 30 = 61 iterations a block) is cut into parts of one block: 40 points -> 3
        s = Sammon(n_iter=3, layout="rows", step="source", learning_rate=20.0, tol=None,
                   device=tiny).fit(X)
        assert s.cached_ is False and s.tiled_
        if tiny.float_blending:   # (3 parts; their passes count ping-pong passes without it)
            assert s.split_ == 3
        r = Sammon(n_iter=3, layout="rows", step="source", learning_rate=20.0, tol=None,
                   cache=False).fit(X)
        assert_close(s.stress_history_, r.stress_history_, rtol=1e-5, atol=0)
    finally:
        tiny.release()


def test_programs_bounded(dev):
    """Sizes are uniforms: 20 fits of random shapes compile a bounded number of programs."""
    rng = np.random.default_rng(11)
    before = dev.shaders.compiles
    for t in range(20):
        n, d = int(rng.integers(5, 90)), int(rng.integers(1, 40))
        layout = ("rows", "columns")[t % 2]
        cache = bool((t // 2) % 2)
        Sammon(n_components=int(rng.integers(1, 5)), n_iter=3, layout=layout, cache=cache,
               step=("source", "adaptive")[(t // 4) % 2], device=dev).fit(rng.normal(size=(n, d)))
    # update (2 sources + cached) x wrapped or not, rowsum x 2, dist x 2, sqnorm, saxpy and
    # the reduce kernels, each for at most two layout kinds of the inputs
    assert dev.shaders.compiles - before <= 24, dev.shaders.compiles - before


def test_sklearn_estimator_checks():
    from sklearn.utils.estimator_checks import check_estimator
    # device=None: the process-wide default device (a Device cannot be pickled, and
    # check_estimator pickles the estimator)
    check_estimator(Sammon(n_iter=4))


def test_pipeline_and_clone(dev):
    from sklearn.base import clone
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X = np.random.default_rng(2).normal(size=(40, 5)) * [1, 10, 100, 1, 1]
    pipe = make_pipeline(StandardScaler(), Sammon(n_iter=20, device=dev))
    Y = pipe.fit_transform(X)
    assert Y.shape == (40, 2) and np.isfinite(Y).all()
    s = pipe[-1]
    assert s.n_features_in_ == 5
    Dn = _dn(StandardScaler().fit_transform(X))
    assert_close(s.stress_, _stress_and_dir(Dn, Y.astype(np.float64))[0], rtol=0,
                 atol=1e-4 * s.stress_)
    c = clone(s)
    assert c.device is dev and not hasattr(c, "embedding_")


def test_fit_transform_and_params(dev):
    X = np.random.default_rng(0).normal(size=(30, 6))
    s = Sammon(n_components=3, n_iter=5, device=dev)
    Y = s.fit_transform(X)
    assert Y.shape == (30, 3) and Y is s.embedding_
    assert s.get_params()["n_components"] == 3
    with pytest.raises(ValueError, match="Invalid parameter"):
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
    ({}, np.ones(5), ValueError, "2D"),
    ({}, np.ones((1, 3)), ValueError, "minimum of 2"),
    ({}, np.array([["a", "b"], ["c", "d"]]), ValueError, "string"),
    ({"split": 1.5}, None, TypeError, "split"),
    ({"tol": "small"}, None, TypeError, "tol"),
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
    from shadergpgpu.analysis.reports import sammon as report
    assert report.main(["--quick", "--out", str(tmp_path), "--no-plots", "--no-progress"]) == 0
    import json
    rows = json.loads((tmp_path / "sammon.json").read_text())["rows"]
    assert len(rows) == 6 and all(r["plan matches"] for r in rows)
    # the fixed-step runs follow the float64 rule to float32 accuracy
    for r in rows:
        if r["config"].endswith("/source"):
            assert_close(r["stress end"], r["numpy float64 end"], rtol=1e-4, atol=0,
                         what=r["config"])


def test_report_plan_mismatch_is_loud(tmp_path, monkeypatch, capsys):
    from shadergpgpu.analysis.reports import sammon as report
    plan = plans.get_plan("sammon/fit")
    wrong = plan.phases
    monkeypatch.setattr(plan, "phases", lambda **kw: dict(wrong(**kw), **{"sammon/update": 0}))
    assert report.main(["--quick", "--out", str(tmp_path), "--no-plots", "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "MISMATCH" in err and "sammon/update" in err


# ---- device profiles ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def native_fits(dev, random500):
    X, Y0 = random500
    X, Y0 = X[:150], Y0[:150]
    out = {}
    for layout, cache in (("rows", False), ("columns", False), ("rows", True)):
        kw = dict(n_iter=5, step="adaptive", learning_rate=50.0, init=Y0, layout=layout,
                  cache=cache, split=2, tol=None)
        out[(layout, cache)] = (kw, Sammon(device=dev, **kw).fit(X))
    return X, out


@pytest.mark.parametrize("profile", ["geforce-7800gtx", "webgl2", "mali-gles31",
                                     "raspberrypi4"])
def test_builtin_profiles_give_the_native_fit(profile, native_fits):
    """Under every built-in profile (no float32 blending: accumulation by ping-pong passes;
    4 render targets: 3 points per tiled fragment; the 7800 GTX's 255-iteration loop cap) the
    fit is the native one and the plan matches the counter."""
    from shadergpgpu.engine import profiles
    assert profile in profiles.names()
    X, fits = native_fits
    # one profile also with a small texture limit: every array wraps
    d = sg.Device(profile=profile,
                  limits=sg.Limits(max_texture_size=128 if profile == "webgl2" else None))
    try:
        assert not d.float_blending
        for (layout, cache), (kw, a) in fits.items():
            d.counter.reset()
            b = Sammon(device=d, **kw).fit(X)
            assert b.cached_ is cache and b.tiled_ is a.tiled_
            assert_close(b.embedding_, a.embedding_, rtol=0, atol=1e-5 * np.abs(a.embedding_).max())
            assert_close(b.stress_history_, a.stress_history_, rtol=1e-5, atol=0)
            assert b.n_iter_ == a.n_iter_ and b.n_rejected_ == a.n_rejected_
            rows = _plan_rows(d, b, 150, 20)
            assert all(r["match"] for r in rows), (profile, layout, cache, rows)
            if a.device.float_blending:    # (a native device without it ping-pongs too)
                assert b.split_ > a.split_  # accumulating parts cost 1 + 2 x outputs passes
            if profile == "geforce-7800gtx" and layout == "columns":
                # loop cap 255: 1 + 20 + 4 iterations per column of 4 points, so the two
                # chunks of 19 columns are cut in two parts each (3 outputs: 7 passes a part)
                assert b.split_ == 1 + 3 * 7
    finally:
        d.release()


def test_profile_plan_is_independent():
    """Hard-coded pass counts under the 7800 GTX profile (loop cap 255, no float blending,
    4 render targets -> 3 points per tiled fragment, 4 targets per tiled pass), N = 150,
    n = 400, split=1, blocks of 16 points: a block runs at most 1 + 2 x 100 = 201 iterations;
    the 10 blocks are shared by n_part = 10 fragments per tile, counted as ceil(201 / 160) = 2
    iterations per point plus one block (201) for the rounding, so a pass holds
    (255 - 201) // (2 x 16) = 1 block: 10 parts; the 9 after the first accumulate (1 + 2 x 4
    passes each); + 1 finishing pass = 83 per evaluation. Natively: 1 + 1."""
    plan = smplan.plan_phases(150, 400, layout="rows", n_evals=1, split=1, loop_cap=255,
                          float_blend=False, max_outputs=4, tile_jb=16, tile_s_lane=False,
                          tile_unroll=1)
    assert sm.tile_points(4, s_lane=False) == 3
    assert sm.tile_parts(150, 3, [(0, 150)], 16) == 10
    assert plan["sammon/update"] == 1 + 9 * 9 + 1
    native = smplan.plan_phases(150, 400, layout="rows", n_evals=1, split=1, tile_jb=16)
    assert native["sammon/update"] == 2


@pytest.mark.parametrize("jb,tiled", [(8, True), (16, True), (16, False)])
def test_tile_variants_match_float64(dev, random500, jb, tiled):
    """Blocks of 8 or 16 points j, and the one-point-per-fragment pair kernel (tile_rows off,
    the benchmark's comparison): eq. 3 steps follow float64."""
    X, Y0 = random500
    X, Y0 = X[:203], Y0[:203]            # not a multiple of the block or the tile
    Yr, hist = _fixed_steps(X, Y0, 100.0, 4)
    dev.counter.reset()
    with dev.tuned(sm.SammonTuning, tile_jb=jb, tile_rows=tiled):
        s = Sammon(n_iter=4, step="source", learning_rate=100.0, init=Y0, cache=False,
                   split=2, tol=None, device=dev).fit(X)
    assert s.tiled_ is tiled and s.tile_jb_ == jb
    assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max())
    assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)
    assert all(r["match"] for r in _plan_rows(dev, s, 203, 20))


def test_tiled_exact_fallback_near_points(dev):
    """Tight clusters far from the centroid: |x_i|^2 + |x_j|^2 - 2 x_i.x_j would cancel, so
    those tiles are recomputed as sum (x_j - x_i)^2; with duplicates (dn = 0 skipped). The
    stress and direction follow float64."""
    rng = np.random.default_rng(9)
    centres = rng.normal(0, 1000.0, (3, 12))
    X = np.vstack([c + rng.normal(0, 1e-2, (40, 12)) for c in centres])
    X[5] = X[17]                              # a duplicate inside a cluster
    X = X.astype(np.float32)
    Y0 = rng.normal(size=(120, 2))
    Yr, hist = _fixed_steps(X, Y0, 20.0, 3)
    s = Sammon(n_iter=3, step="source", learning_rate=20.0, init=Y0, cache=False, tol=None,
               device=dev).fit(X)
    assert s.tiled_
    assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)
    assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max())


def test_blocked_source_and_parts():
    X = np.arange(30 * 6, dtype=np.float32).reshape(30, 6)
    xb, per_row, pt = sm.blocked_source(X, max_size=8)   # 30 rows > 8: 4 points a row
    assert (per_row, pt) == (4, 2) and xb.shape == (8, 4 * 8)
    for p in range(30):                                   # point p: row p // 4, texels 2 each
        r, k = divmod(p, per_row)
        np.testing.assert_array_equal(xb[r, 8 * k:8 * k + 6], X[p])
        assert not xb[r, 8 * k + 6:8 * k + 8].any()       # padded coordinates are 0
    assert sm.blocked_source(X, 64)[1] == 1
    # about tile_fragments fragments, at most tile_parts_max parts or the blocks of a chunk
    t = sm.SammonTuning()
    assert sm.tile_parts(20_000, 4, [(0, 6667)] * 3, 16) == \
        min(t.tile_parts_max, sm.ceil_div(t.tile_fragments, 5000))
    assert sm.tile_parts(100, 4, [(0, 100)], 16) == 7


def test_setup_spot_check_refuses_a_dropped_pass(dev):
    """A renderer that drops a long pass (row sums left at 0) raises instead of fitting."""
    from shadergpgpu.algorithms.sammon.checks import spot_check_rowsums
    from shadergpgpu.engine.errors import ShaderGPGPUError

    X = np.random.default_rng(0).standard_normal((50, 6))
    Xc = X - X.mean(axis=0)
    good = np.sqrt(((Xc[:, None, :] - Xc[None, :, :]) ** 2).sum(axis=2)).sum(axis=1)
    V = dev.array(good[:, None], packed=False)
    spot_check_rowsums(dev, V, Xc)                       # right sums pass
    V.set(np.zeros((50, 1)))
    with pytest.raises(ShaderGPGPUError, match="wrong row sum"):
        spot_check_rowsums(dev, V, Xc)
