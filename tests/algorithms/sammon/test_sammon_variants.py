"""The tiled Sammon update's variants (sammon.TILE_VARIANTS, SammonTuning.variant): K = 4 or 8
points i per fragment, 8 / 16 / 32 points j per block, s in g's w lane, coordinate unroll; each
follows float64 and its pass plan, under the loop cap too. Also the pair update's and the
distance cache's fetch variants for CPU renderers (SammonTuning.fetch_variants)."""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.algorithms import sammon as sm
from shadergpgpu.algorithms.sammon import Sammon, SammonTuning, geometry
from shadergpgpu.engine import export

from tests.algorithms.sammon.test_sammon import _fixed_steps, _plan_rows

from tests.reference import assert_close


@pytest.fixture
def variant(dev):
    """Set a TILE_VARIANTS preset (with changes) on the shared device for one test; returns
    the preset's settings. The device's tuning goes back to the defaults after."""
    def use(name, **changes):
        dev.tune(SammonTuning.variant(name, **changes))
        return sm.TILE_VARIANTS[name]
    yield use
    dev.untune(SammonTuning)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    # 203 points: not a multiple of K, JB or the tile; 18 features: 5 texels a point (odd:
    # the unrolled variants pad to 6)
    return rng.uniform(0, 1, (203, 18)), rng.uniform(0, 1, (203, 3))


def test_the_settings_start_from_the_default_preset(dev):
    t = dev.tuning(SammonTuning)
    assert t.variant_name == SammonTuning().variant_name == sm.TILE_DEFAULT
    v = sm.TILE_VARIANTS[sm.TILE_DEFAULT]
    assert (t.tile_max, t.tile_jb, t.tile_s_lane, t.tile_unroll, t.tile_interleave) == \
        (v["k"], v["jb"], v["s_lane"], v["unroll"], v["il"])
    assert SammonTuning.variant("k4j16", tile_jb=8).variant_name == "k4j8"


@pytest.mark.parametrize("name", sorted(sm.TILE_VARIANTS))
def test_variant_matches_float64_and_its_plan(dev, data, variant, name):
    v = variant(name)
    X, Y0 = data
    Yr, hist = _fixed_steps(X, Y0, 100.0, 3)
    dev.counter.reset()
    s = Sammon(n_components=3, n_iter=3, step="source", learning_rate=100.0, init=Y0,
               cache=False, split=2, tol=None, device=dev).fit(X)
    assert s.tiled_ and s.tile_jb_ == v["jb"] and s.tile_unroll_ == v["unroll"]
    assert s.tile_points_ == v["k"] and s.tile_s_lane_ is v["s_lane"]
    assert s.tile_interleaved_ is v["il"]
    assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max())
    assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)
    assert all(r["match"] for r in _plan_rows(dev, s, 203, 18))


def test_w_lane_needs_at_most_three_coordinates(dev, data, variant):
    """4-D positions use g's w lane: the K = 8 preset falls back to 4 points and the S
    target, and still follows float64."""
    variant("k8j16wi")
    X, _ = data
    Y0 = np.random.default_rng(12).uniform(0, 1, (203, 4))
    Yr, hist = _fixed_steps(X, Y0, 100.0, 2)
    s = Sammon(n_components=4, n_iter=2, step="source", learning_rate=100.0, init=Y0,
               cache=False, tol=None, device=dev).fit(X)
    assert s.tile_points_ == 4 and s.tile_s_lane_ is False and s.tile_interleaved_
    assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max())
    assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)


def test_points_per_fragment_follow_the_render_targets():
    t = SammonTuning.variant("k8j16w")
    assert [sm.tile_points(m, True, t) for m in (1, 2, 3, 4, 6, 8)] == [1, 2, 2, 4, 4, 8]
    assert [sm.tile_points(m, False, t) for m in (2, 4, 8)] == [1, 3, 4]
    assert sm.tile_points(8, None, t) == 8 and sm.tile_s_lane(3, t) and not sm.tile_s_lane(4, t)
    t = SammonTuning.variant("k4j16")
    assert sm.tile_points(8, None, t) == 4 and not sm.tile_s_lane(3, t)
    with pytest.raises(ValueError, match="unknown tile variant"):
        SammonTuning.variant("k16")


@pytest.mark.parametrize("name", ["k8j16wiu2", "k8j16w", "k4j32"])
def test_variant_under_a_loop_cap_and_near_points(dev, variant, name):
    """Tight clusters (the exact fallback of both quads of i) and a small loop cap (the
    engine cuts every pass): the same as float64."""
    variant(name)
    rng = np.random.default_rng(9)
    centres = rng.normal(0, 1000.0, (3, 12))
    X = np.vstack([c + rng.normal(0, 1e-2, (40, 12)) for c in centres])
    X[5] = X[17]                              # a duplicate inside a cluster
    X = X.astype(np.float32)
    Y0 = rng.normal(size=(120, 3))
    Yr, hist = _fixed_steps(X, Y0, 20.0, 3)
    small = sg.Device(limits=sg.Limits(loop_cap=60), tuning=SammonTuning.variant(name))
    try:
        for d in (dev, small):
            d.counter.reset()
            s = Sammon(n_components=3, n_iter=3, step="source", learning_rate=20.0, init=Y0,
                       cache=False, tol=None, device=d).fit(X)
            assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)
            assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max())
            assert all(r["match"] for r in _plan_rows(d, s, 120, 12))
        assert s.split_ > 1
    finally:
        small.release()


@pytest.mark.skipif(export.glslang() is None, reason="glslangValidator missing")
def test_variants_compile_as_glsl_es():
    """The presets' define combinations (UNROLL is a call define, not in the registry's
    defaults) are valid GLSL ES."""
    lib = export._library()
    for name, v in sm.TILE_VARIANTS.items():
        for sl in (v["s_lane"], False):
            k = sm.tile_points(8, sl) if v["k"] == 8 else min(v["k"], 4)
            if not sl:
                k = min(k, 4)
            kern = sm.TILE[k, v["jb"], sl]
            text = export.to_es(export.final_source(kern, lib, {"UNROLL": v["unroll"],
                                                                "IL": int(v["il"])}))
            ok, msg = export.check_es(text)
            assert ok, f"{name} ({kern.name}):\n{msg}"


@pytest.mark.skipif(export.glslang() is None, reason="glslangValidator missing")
def test_cpu_fetch_variants_compile_as_glsl_es():
    """The CPU renderers' fetch variants (Y_STEP, Y_DIMS, SHARED) are valid GLSL ES too."""
    lib = export._library()
    for kern, defines in [(sm.UPDATE[src], {"Y_STEP": 1, "Y_DIMS": m}) for src in sm.SOURCES
                          for m in (1, 2, 3, 4)] + [(sm.DISTANCES, {"SHARED": 1, "SOURCE": 0})]:
        ok, msg = export.check_es(export.to_es(export.final_source(kern, lib, defines)))
        assert ok, f"{kern.name} {defines}:\n{msg}"


def test_interleaved_blocked_source():
    X = np.arange(37 * 10, dtype=np.float32).reshape(37, 10)       # 3 texels a point
    xb, per_row, pt = sm.blocked_source(X, max_size=64, group=8)
    assert (per_row, pt) == (8, 3) and xb.shape == (5, 8 * 3 * 4)
    tex = xb.reshape(5, 8 * 3, 4)
    for p in range(40):                   # texel t of point p: group run + t * 8 + p % 8
        r, q = divmod(p, per_row)
        g, b = divmod(q, 8)
        for t in range(pt):
            want = np.zeros(4, np.float32)
            if p < 37:
                want[:len(X[p, 4 * t:4 * t + 4])] = X[p, 4 * t:4 * t + 4]
            np.testing.assert_array_equal(tex[r, g * 8 * pt + t * 8 + b], want)
    with pytest.raises(ValueError, match="power of two"):
        sm.blocked_source(X, max_size=16, group=8)                # 8 x 3 texels > 16


def test_interleave_needs_k_to_divide_jb(data):
    """Under a 4-target profile without the w lane K = 3: no interleave (a tile of 3 would
    straddle blocks), the fit still follows float64."""
    four = sg.Device(profile="geforce-7800gtx", tuning=SammonTuning.variant("k4j16i"))
    try:
        X, Y0 = data
        Yr, hist = _fixed_steps(X[:90], Y0[:90], 100.0, 2)
        s = Sammon(n_components=3, n_iter=2, step="source", learning_rate=100.0,
                   init=Y0[:90], cache=False, tol=None, device=four).fit(X[:90])
        assert s.tile_points_ == 3 and not s.tile_interleaved_
        assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)
    finally:
        four.release()


@pytest.mark.parametrize("k,s_lane,il", [(1, False, False), (2, False, True), (3, False, False),
                                         (2, True, True), (3, True, False)])
def test_small_tiles(dev, data, variant, k, s_lane, il):
    """Fewer points per fragment (devices with fewer render targets): K = 1..3, s in its own
    target or in the w lane (K a power of two there: 3 -> 2)."""
    variant("k4j16", tile_max=k, tile_s_lane=s_lane, tile_interleave=il, tile_jb=8)
    X, Y0 = data
    Yr, hist = _fixed_steps(X[:90], Y0[:90], 100.0, 2)
    s = Sammon(n_components=3, n_iter=2, step="source", learning_rate=100.0, init=Y0[:90],
               cache=False, tol=None, device=dev).fit(X[:90])
    assert s.tile_points_ == (2 if s_lane and k == 3 else k) and s.tile_s_lane_ is s_lane
    assert s.tile_interleaved_ is (il and 8 % s.tile_points_ == 0)
    assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max())
    assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)


@pytest.mark.parametrize("layout,cache,split", [("rows", True, 2), ("columns", False, 2),
                                                ("rows", False, 3), ("columns", True, 1)])
def test_cpu_fetch_variants_match_float64(dev, data, monkeypatch, layout, cache, split):
    """The pair update and the distance cache in both fetch variants (fetch_variants:
    y_j's texel stepped along the sweep and the pair terms in the positions' 3 components
    (Y_STEP, Y_DIMS), a texel's four cached distances from one block (SHARED); on by default
    on every device; off: the per-pair accessors) follow float64 and their plan, also
    where a loop cap cuts the sweep mid-chunk, and give the same fit (the same texels and
    sums)."""
    X, Y0 = data
    Yr, hist = _fixed_steps(X, Y0, 100.0, 3)
    small = sg.Device(limits=sg.Limits(loop_cap=40))
    try:
        for d in (dev, small):
            seen, fits = [], []
            for calls in ("prepare", "run"):
                orig = getattr(d, calls)
                monkeypatch.setattr(d, calls, lambda k, *a, _o=orig, **kw:
                                    seen.append((k.name, dict(kw.get("defines") or {})))
                                    or _o(k, *a, **kw))
            for v in (False, True):
                seen.clear()
                d.counter.reset()
                # rows recomputed: the pair kernel too (tile_rows off)
                with d.tuned(SammonTuning, tile_rows=False, fetch_variants=v):
                    s = Sammon(n_components=3, n_iter=3, step="source", learning_rate=100.0,
                               init=Y0, layout=layout, cache=cache, split=split, tol=None,
                               device=d).fit(X)
                assert s.cached_ is cache and not s.tiled_
                upd = [df for n, df in seen if n.startswith("sammon/update")]
                assert upd and all(df["Y_STEP"] == int(v) and df["Y_DIMS"] == (3 if v else 4)
                                   for df in upd)
                if cache and layout == "rows":
                    assert [df["SHARED"] for n, df in seen if n == "sammon/dist"] == [int(v)]
                assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max())
                assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)
                assert all(r["match"] for r in _plan_rows(d, s, 203, 18))
                fits.append(s)
            assert fits[1].split_ == fits[0].split_ and (d is dev or fits[0].split_ > split)
            assert_close(fits[1].embedding_, fits[0].embedding_,
                         rtol=0, atol=1e-6 * np.abs(Yr).max())
            monkeypatch.undo()
    finally:
        small.release()
    assert dev.tuning(SammonTuning).fetch_variants is True
    # on every device by default (a GPU's per-pair accessors divide by shape uniforms)
    assert geometry.fit_geometry(dev, 203, 18, 3, Sammon()).fetch_variants is True


@pytest.mark.parametrize("layout,cache", [("rows", False), ("columns", False), ("rows", True)])
def test_stress_summed_on_host_matches_float64_and_its_plan(dev, data, layout, cache):
    """SammonTuning.stress_on_host: the per-point terms s read back and summed in float64 on
    the host instead of the device reduction: the fit still follows float64 (eq. 3 and eq. 1),
    the stress history agrees with the device sums', no reduction pass is drawn (plan ==
    counter) and each evaluation reads back once; the adaptive fit takes the same steps."""
    X, Y0 = data
    Yr, hist = _fixed_steps(X, Y0, 100.0, 3)
    fits = {}
    for host in (False, True):
        dev.counter.reset()
        with dev.tuned(SammonTuning, stress_on_host=host):
            s = Sammon(n_components=3, n_iter=3, step="source", learning_rate=100.0, init=Y0,
                       layout=layout, cache=cache, split=2, tol=None, device=dev).fit(X)
        assert s.tuning_.stress_on_host is host
        assert s.cached_ is cache
        assert_close(s.embedding_, Yr, rtol=0, atol=1e-4 * np.abs(Yr).max())
        assert_close(s.stress_history_, hist, rtol=1e-4, atol=0)
        assert all(r["match"] for r in _plan_rows(dev, s, 203, 18))
        snap = dev.counter.snapshot(host=True)
        stress = snap.get("sammon/stress", {})
        assert (stress.get("passes", 0) == 0) is host
        assert stress["events"].get("readback") == s.n_iter_
        with dev.tuned(SammonTuning, stress_on_host=host):
            a = Sammon(n_components=3, n_iter=12, init=Y0, layout=layout, cache=cache,
                       tol=None, device=dev).fit(X)
        fits[host] = (s, a)
    (s0, a0), (s1, a1) = fits[False], fits[True]
    np.testing.assert_array_equal(s1.embedding_, s0.embedding_)   # the same update passes
    assert_close(s1.stress_history_, s0.stress_history_, rtol=1e-5, atol=0)
    assert (a1.n_iter_, a1.n_rejected_) == (a0.n_iter_, a0.n_rejected_)
    assert_close(a1.stress_history_, a0.stress_history_, rtol=1e-5, atol=0)
    assert_close(a1.embedding_, a0.embedding_, rtol=0, atol=1e-4 * np.abs(a0.embedding_).max())


def test_stress_sum_default_follows_the_device_kind(dev):
    """stress_on_host None (the default): summed on the host where kernels are chosen for a
    GPU (a GPU, or counting under a GPU's calibrated profile), by the device reduction on a
    software renderer; True / False override both."""
    from shadergpgpu.algorithms.sammon import step
    assert SammonTuning().stress_on_host is None
    assert SammonTuning.defaults("hardware").stress_on_host is True
    assert SammonTuning.defaults("software").stress_on_host is False
    assert step.stress_on_host(dev) is (not dev.plans_for_software)
    for forced in (True, False):
        with dev.tuned(SammonTuning(stress_on_host=forced)):
            assert step.stress_on_host(dev) is forced
        assert SammonTuning(stress_on_host=forced).for_kind("software").stress_on_host is forced
