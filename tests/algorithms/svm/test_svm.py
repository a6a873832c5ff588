"""RBF kernel rows and SMO training against float64 numpy and scikit-learn's SVC (libsvm).

Agreement thresholds (from the issue): held-out predictions agree on >= 99.5% of points,
support-vector sets overlap >= 98% (intersection over union), intercepts within 1e-2, dual
objective (recomputed in float64 from each model's coefficients) within 1e-3 relative.
"""
import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC as SkSVC

import shadergpgpu as sg
from shadergpgpu.analysis import plans
from shadergpgpu.ops.rbf import RBFData, rbf_matrix_host, rbf_pair
from shadergpgpu.algorithms.svm import SVC
from shadergpgpu.ops import reduce as R

from tests.reference import assert_close


@pytest.fixture(scope="module")
def wrap_dev():
    d = sg.Device(limits=sg.Limits(max_texture_size=128))
    yield d


def dual_objective(X, support, coef, gamma):
    """0.5 c^T K c - sum |c| for one binary problem (float64)."""
    K = rbf_matrix_host(X[support], X[support], gamma)
    return 0.5 * coef @ K @ coef - np.abs(coef).sum()


def iou(a, b):
    a, b = set(map(int, a)), set(map(int, b))
    return len(a & b) / len(a | b)


def assert_agrees(ours, ref, X_test, X_train, binary=True):
    assert np.mean(ours.predict(X_test) == ref.predict(X_test)) >= 0.995
    assert iou(ours.support_, ref.support_) >= 0.98
    assert_close(ours.intercept_, ref.intercept_, rtol=1e-7, atol=1e-2)
    if binary:
        g = ref._gamma
        o1 = dual_objective(X_train, ours.support_, ours.dual_coef_[0], g)
        o2 = dual_objective(X_train, ref.support_, ref.dual_coef_[0], g)
        assert_close(o1, o2, rtol=1e-3, atol=0, what="dual objective")
        # the solver's own objective (from its float32 gradient) agrees too
        assert_close(ours.dual_objective_[0], o2, rtol=1e-3, atol=0,
                     what="the solver's dual objective")


# wrap_dev (128 texels): 600 x 70 wraps both layouts
@pytest.mark.parametrize("device", ["dev", "wrap_dev"])
@pytest.mark.parametrize("n,d", [(37, 1), (100, 13), (600, 70)])
def test_rbf_pair_matches_float64(request, rng, n, d, device):
    X = rng.standard_normal((n, d))
    gamma = 1.0 / d
    kh, kl = rbf_pair(request.getfixturevalue(device), X, n - 1, n // 2, gamma)
    ref = rbf_matrix_host(X, X[[n - 1, n // 2]], gamma)
    assert_close(kh, ref[:, 0], rtol=2e-5, atol=1e-7, what=f"row {n - 1} of {n} x {d}, {device}")
    assert_close(kl, ref[:, 1], rtol=2e-5, atol=1e-7, what=f"row {n // 2} of {n} x {d}, {device}")


def test_rbf_pass_count_and_errors(dev, rng):
    data = RBFData(dev, rng.standard_normal((50, 5)))
    dev.counter.reset()
    data.pair(0, 1, 0.3)
    assert dev.counter.snapshot()["rbf"]["passes"] == plans.get_plan("rbf/pair").total()
    with pytest.raises(ValueError, match="h=50"):
        data.pair(50, 1, 0.3)
    with pytest.raises(ValueError, match="gamma"):
        data.pair(0, 1, -1.0)
    with pytest.raises(ValueError, match="NaN"):
        RBFData(dev, np.array([[1.0, np.nan]]))
    data.release()


@pytest.mark.parametrize("working_set", ["second-order", "first-order"])
def test_breast_cancer_matches_sklearn(dev, working_set):
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    ours = SVC(C=1.0, gamma="scale", tol=1e-3, working_set=working_set, device=dev).fit(Xtr, ytr)
    ref = SkSVC(C=1.0, gamma="scale", tol=1e-3).fit(Xtr, ytr)
    assert_close(ours._gamma, ref._gamma, rtol=1e-6, atol=1e-12)
    assert_agrees(ours, ref, Xte, Xtr)
    assert_close(ours.decision_function(Xte), ref.decision_function(Xte), rtol=1e-7, atol=1e-2)
    assert_close(ours.score(Xte, yte), ref.score(Xte, yte), rtol=0, atol=0.006)
    assert ours.n_iter_[0] > 0 and ours.classes_.tolist() == [0, 1]


def test_digits_multiclass_one_vs_one(dev):
    X, y = load_digits(return_X_y=True)
    keep = y < 4                       # 4 classes, 6 pairs: keeps the test fast
    X, y = X[keep] / 16.0, y[keep]
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=1)
    ours = SVC(C=2.0, gamma=0.05, device=dev, decision_function_shape="ovo").fit(Xtr, ytr)
    ref = SkSVC(C=2.0, gamma=0.05, decision_function_shape="ovo").fit(Xtr, ytr)
    assert_agrees(ours, ref, Xte, Xtr, binary=False)
    np.testing.assert_array_equal(ours.n_support_, ref.n_support_)
    assert ours.dual_coef_.shape == ref.dual_coef_.shape == (3, len(ref.support_))
    assert_close(ours.decision_function(Xte), ref.decision_function(Xte), rtol=1e-7, atol=2e-2)
    assert len(ours.n_iter_) == 6


def test_synthetic_wrapped_textures(wrap_dev):
    # 900 points (padded to 1024): the 256-texel vectors and the data wrap at 128 texels
    X, y = make_classification(n_samples=1200, n_features=24, n_informative=8,
                               flip_y=0.03, random_state=3)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    ours = SVC(C=5.0, gamma=0.02, device=wrap_dev).fit(Xtr, ytr)
    ref = SkSVC(C=5.0, gamma=0.02).fit(Xtr, ytr)
    assert_agrees(ours, ref, Xte, Xtr)


@pytest.mark.parametrize("rb", [1, 8])
def test_pass_plan_matches_counter(dev, rng, rb):
    X = rng.standard_normal((300, 4))
    y = (X[:, 0] + 0.3 * rng.standard_normal(300) > 0).astype(int)
    iters = set()
    for ws, fused in (("second-order", True), ("first-order", True), ("second-order", False)):
        dev.counter.reset()
        m = SVC(device=dev, working_set=ws, fanin=4, fused_select=fused,
                readback_every=rb).fit(X, y)
        snap = {k: v["passes"] for k, v in dev.counter.snapshot().items()}
        exp = plans.get_plan("svm/smo").expected(n=300, n_iter=int(m.n_iter_[0]),
                                                  working_set=ws, fanin=4, fused=fused,
                                                  readback_every=rb)
        assert snap == exp
        # hard-coded counts, by hand: 300 points pad to 512 = 128 texels; fan-in 4 reduces
        # 128 -> 32 -> 8 -> 2 -> 1, so L = 4 passes per reduction. Per selection: fused
        # second-order = L (I_up/I_low pair) + 1 (objective) + L (arg-min) = 9; fused
        # first-order = L = 4; unfused second-order = 2L + 1 + L = 13 (SvmTuning.fuse_gain
        # computes the gain in the arg-min's first level: one pass less). Host step (rb = 1):
        # one selection per iteration plus the final one; one update pass per iteration; 2
        # init fills. Device step (rb = 8, solved inside the update pass): ceil((it + 1) / 8)
        # * 8 iterations of selection and update; 2 init fills (G, alpha and state).
        it = int(m.n_iter_[0])
        per_sel = {("second-order", True): 9, ("first-order", True): 4,
                   ("second-order", False): 13}[(ws, fused)]
        if rb == 1:
            assert snap == {"svm/init": 2, "svm/select": per_sel * (it + 1), "svm/update": it}
        else:
            runs = -(-(it + 1) // 8) * 8
            assert snap == {"svm/init": 2, "svm/select": per_sel * runs, "svm/update": runs}
        if ws == "second-order":
            iters.add(int(m.n_iter_[0]))
    assert len(iters) == 1   # fused and separate selections pick the same pairs


@pytest.mark.parametrize("ws", ["second-order", "first-order"])
def test_device_step_equals_host_step(dev, ws):
    """The step solved on the device (float32) walks the same path as the host's (float64):
    same iterations, support vectors and, within float32 rounding, alphas and intercept; the
    result does not depend on how often the state is read back."""
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::2]
    y = y[::2]
    host = SVC(device=dev, working_set=ws, readback_every=1).fit(X, y)
    fits = [SVC(device=dev, working_set=ws, readback_every=k).fit(X, y) for k in (2, 7, 64)]
    for m in fits:
        assert m.n_iter_[0] == host.n_iter_[0]
        np.testing.assert_array_equal(m.support_, host.support_)
        assert_close(m.dual_coef_, host.dual_coef_, rtol=1e-7, atol=1e-5)
        assert_close(m.intercept_, host.intercept_, rtol=1e-7, atol=1e-5)
    for m in fits[1:]:
        np.testing.assert_array_equal(m.dual_coef_, fits[0].dual_coef_)
        assert m.intercept_ == fits[0].intercept_


@pytest.mark.parametrize("ws,rb,cap", [("second-order", 16, None), ("second-order", 1, None),
                                        ("first-order", 16, None), ("second-order", 16, 16)])
def test_direct_indexing_gives_the_accessor_fit(dev, ws, rb, cap):
    """The CPU renderer's indexing in the selection, objective, update and step kernels
    (SvmTuning.direct: a fragment's own texels at its pixel, the 1-D vectors' elements at
    row_texel(); on by default where dev.is_software) and the accessors GPUs use give the
    same fit as each other and as scikit-learn. 700 points pad to 768: 192 texels wrapped at
    128 (two texture rows, a partly empty one); cap 16: the split distance path (80
    features, 20 texels)."""
    from shadergpgpu.algorithms.svm import SvmTuning, smo
    X, y = make_classification(n_samples=700, n_features=80 if cap else 12, n_informative=8,
                               flip_y=0.02, random_state=6)
    X = StandardScaler().fit_transform(X)
    ref = SkSVC(C=1.0, gamma="scale").fit(X, y)
    d = sg.Device(limits=sg.Limits(loop_cap=cap)) if cap else dev
    try:
        fits = []
        for direct in (False, True):
            with d.tuned(SvmTuning, direct=direct):
                m = SVC(C=1.0, gamma="scale", device=d, working_set=ws,
                        readback_every=rb).fit(X, y)
            assert_agrees(m, ref, X, X)
            fits.append(m)
    finally:
        if cap:
            d.release()
    a, b = fits
    assert a.n_iter_[0] == b.n_iter_[0]
    np.testing.assert_array_equal(a.support_, b.support_)
    assert_close(b.dual_coef_, a.dual_coef_, rtol=0, atol=1e-6)
    assert_close(b.intercept_, a.intercept_, rtol=0, atol=1e-6)
    b = smo.BinarySMO(dev, X[:20], np.where(y[:20] > 0, 1.0, -1.0), 1.0, 0.1, 1e-3, 100)
    b.release()
    assert b.direct == int(dev.is_software)


def test_direct_kernels_compile_as_glsl_es():
    """The kernels' DIRECT variants are valid GLSL ES too."""
    from shadergpgpu.algorithms.svm import kernels as K
    from shadergpgpu.engine import export
    if export.glslang() is None:
        pytest.skip("glslangValidator missing")
    lib = export._library()
    kerns = [K.SELECT_PAIR[False], K.SELECT_SECOND[False], K.OBJECTIVE, K.OBJECTIVE_FROM_D2,
             K.UPDATE, K.UPDATE_FROM_D2, K.UPDATE_STEP_FROM_D2, K.PAIR_D2_STEP,
             *K.UPDATE_STEP.values()]
    for kern in kerns:
        ok, msg = export.check_es(export.to_es(export.final_source(kern, lib, {"DIRECT": 1})))
        assert ok, f"{kern.name}:\n{msg}"


@pytest.mark.parametrize("rb", [1, 16])
def test_gain_in_argmin_level_equals_objective_pass(dev, rb):
    """The second-order gain computed inside the arg-min's first level (SvmTuning.fuse_gain)
    and by an objective pass of its own pick the same pairs: same iterations, support vectors,
    alphas."""
    from shadergpgpu.algorithms.svm import SvmTuning
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::2]
    y = y[::2]
    dev.counter.reset()
    with dev.tuned(SvmTuning, fuse_gain=True):
        fused = SVC(device=dev, readback_every=rb).fit(X, y)
    fused_passes = dev.counter.snapshot()["svm/select"]["passes"]
    dev.counter.reset()
    plain = SVC(device=dev, readback_every=rb).fit(X, y)
    plain_passes = dev.counter.snapshot()["svm/select"]["passes"]
    assert fused.n_iter_[0] == plain.n_iter_[0]
    # the plan follows the tuning the solve ran under
    from shadergpgpu.analysis.plans.svm import smo_phases
    kw = dict(n=len(y), n_iter=int(fused.n_iter_[0]), n_features=X.shape[1],
              loop_cap=dev.loop_cap, readback_every=rb, float_blend=dev.float_blending)
    for fuse, passes in ((True, fused_passes), (False, plain_passes)):
        assert smo_phases(**kw, fuse_gain=fuse)["svm/select"] == passes
    np.testing.assert_array_equal(fused.support_, plain.support_)
    assert_close(fused.dual_coef_, plain.dual_coef_, rtol=1e-7, atol=1e-5)
    assert_close(fused.intercept_, plain.intercept_, rtol=1e-7, atol=1e-5)
    # one selection pass less per iteration (the objective pass)
    runs = fused.n_iter_[0] + 1 if rb == 1 else -(-(fused.n_iter_[0] + 1) // rb) * rb
    assert plain_passes - fused_passes == runs


def test_max_iter_warns(dev, rng):
    X = rng.standard_normal((200, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(RuntimeWarning, match="max_iter"):
        m = SVC(device=dev, max_iter=5).fit(X, y)
    assert m.n_iter_[0] == 5


def test_sklearn_clone_and_params(dev):
    from sklearn.base import clone
    m = SVC(C=3.0, gamma=0.5, tol=1e-4, fanin=8)   # clone deep-copies params: no device
    c = clone(m)
    assert c is not m and c.get_params() == m.get_params()
    assert c.get_params()["C"] == 3.0
    assert c.set_params(C=2.0, device=dev) is c and c.C == 2.0 and c.device is dev
    with pytest.raises(ValueError, match="Invalid parameter"):
        c.set_params(bogus=1)


@pytest.mark.parametrize("kw,match", [({"tol": np.inf}, "tol"), ({"tol": np.nan}, "tol"),
                                      ({"C": np.inf}, "C must be finite"),
                                      ({"gamma": np.inf}, "gamma")])
def test_non_finite_params_rejected(dev, kw, match):
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        SVC(device=dev, **kw).fit(X, y)


def test_bad_input(dev):
    X = np.random.default_rng(0).standard_normal((20, 3))
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match="NaN"):
        SVC(device=dev).fit(np.where(X > 1.5, np.nan, X), y)
    with pytest.raises(ValueError, match="single class"):
        SVC(device=dev).fit(X, np.zeros(20))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        SVC(device=dev).fit(X, y[:19])
    with pytest.raises(ValueError, match="C == 0.0"):
        SVC(C=0.0, device=dev).fit(X, y)
    with pytest.raises(ValueError, match="kernel"):
        SVC(kernel="linear", device=dev).fit(X, y)
    with pytest.raises(ValueError, match="gamma"):
        SVC(gamma=-2.0, device=dev).fit(X, y)
    with pytest.raises(ValueError, match="readback_every"):
        SVC(readback_every=0, device=dev).fit(X, y)
    with pytest.raises(ValueError, match="not fitted"):
        SVC(device=dev).predict(X)
    m = SVC(device=dev).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])


def test_report_quick(tmp_path):
    from shadergpgpu.analysis.reports import svm as report
    assert report.main(["--quick", "--out", str(tmp_path), "--no-plots",
                        "--no-progress"]) == 0
    assert (tmp_path / "svm.json").is_file()
    text = (tmp_path / "svm.md").read_text()
    assert "reduce" in text and "svm/smo" in text


# ---- the loop budget: many features at a forced small cap ---------------------------------------
@pytest.fixture(scope="module")
def capped_dev():
    """A device that stops loops after 16 iterations: 300 features (75 texels) need 5 passes."""
    d = sg.Device(limits=sg.Limits(loop_cap=16))
    yield d
    d.release()


def test_rbf_pair_split_past_loop_cap(capped_dev, rng):
    X = rng.standard_normal((90, 300))
    gamma = 1.0 / 300
    capped_dev.counter.reset()
    kh, kl = rbf_pair(capped_dev, X, 7, 80, gamma)
    ref = rbf_matrix_host(X, X[[7, 80]], gamma)
    assert_close(kh, ref[:, 0], rtol=2e-5, atol=1e-7)
    assert_close(kl, ref[:, 1], rtol=2e-5, atol=1e-7)
    # ceil(75 / 16) = 5 distance passes + 1 exponential
    # (the 4 later distance passes accumulate: ping-pong passes without float blending)
    assert capped_dev.counter.snapshot()["rbf"]["passes"] == plans.get_plan("rbf/pair").total(
        n_features=300, loop_cap=16, float_blend=capped_dev.float_blending)
    assert plans.get_plan("rbf/pair").total(n_features=300, loop_cap=16) == 6
    assert plans.get_plan("rbf/pair").total(n_features=300) == 1


@pytest.mark.parametrize("ws,rb", [("second-order", 16), ("second-order", 1),
                                   ("first-order", 16)])
def test_svc_split_past_loop_cap_matches_sklearn(capped_dev, dev, ws, rb):
    X, y = make_classification(n_samples=160, n_features=300, n_informative=12,
                               random_state=5)
    X = StandardScaler().fit_transform(X)
    ref = SkSVC(C=1.0, gamma="scale").fit(X, y)
    capped_dev.counter.reset()
    ours = SVC(C=1.0, gamma="scale", device=capped_dev, working_set=ws,
               readback_every=rb).fit(X, y)
    assert sorted(ours.support_) == sorted(ref.support_)
    assert_close(ours.intercept_, ref.intercept_, rtol=1e-7, atol=1e-2)
    assert_close(ours.decision_function(X), ref.decision_function(X), rtol=1e-7, atol=1e-2)
    snap = {k: v["passes"] for k, v in capped_dev.counter.snapshot().items()}
    assert snap == plans.get_plan("svm/smo").expected(
        n=160, n_iter=int(ours.n_iter_[0]), n_features=300, loop_cap=16,
        fanin=R.fanin_for(capped_dev), working_set=ws, readback_every=rb,
        float_blend=capped_dev.float_blending)
    # the same fit on the uncapped device: same support vectors, fewer passes
    plain = SVC(C=1.0, gamma="scale", device=dev, working_set=ws,
                readback_every=rb).fit(X, y)
    assert sorted(plain.support_) == sorted(ours.support_)
    assert plain.n_passes_ < ours.n_passes_


# ---- scikit-learn estimator protocol ----------------------------------------------------------
def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator
    check_estimator(SVC(), expected_failed_checks={})


def test_pipeline_grid_search_cross_val(dev):
    from sklearn.model_selection import GridSearchCV, cross_val_score
    from sklearn.pipeline import make_pipeline
    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[::3], y[::3]
    pipe = make_pipeline(StandardScaler(), SVC(device=dev))
    ref = make_pipeline(StandardScaler(), SkSVC())
    s_ours = cross_val_score(pipe, X, y, cv=3)
    s_ref = cross_val_score(ref, X, y, cv=3)
    assert_close(s_ours, s_ref, rtol=1e-7, atol=0.02)
    gs = GridSearchCV(pipe, {"svc__C": [0.5, 5.0]}, cv=2).fit(X, y)
    gr = GridSearchCV(ref, {"svc__C": [0.5, 5.0]}, cv=2).fit(X, y)
    assert gs.best_params_ == gr.best_params_
    assert gs.best_estimator_[-1].n_features_in_ == X.shape[1]


def test_continuous_targets_refused_and_fitted_attributes(dev, rng):
    X = rng.standard_normal((40, 3))
    with pytest.raises(ValueError, match="Unknown label type"):
        SVC(device=dev).fit(X, rng.standard_normal(40))
    labels = np.array(["cat", "dog"])[(X[:, 0] > 0).astype(int)]
    m = SVC(device=dev).fit(X, labels)
    assert m.n_features_in_ == 3 and m.classes_.tolist() == ["cat", "dog"]
    assert set(m.predict(X)) <= {"cat", "dog"}


# ---- device profiles ----------------------------------------------------------------------------
# (the profile_dev fixture: tests/conftest.py)


def test_svc_under_profiles(profile_dev):
    """An SVC fit under each built-in profile equals scikit-learn's, and the pass plan (given
    the profile's loop cap and float blending) equals the counter."""
    d = profile_dev
    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)[::2]
    y = y[::2]
    ref = SkSVC(C=1.0).fit(X, y)
    for rb in (1, 16):
        d.counter.reset()
        ours = SVC(C=1.0, device=d, readback_every=rb).fit(X, y)
        assert_agrees(ours, ref, X, X)
        snap = {k: v["passes"] for k, v in d.counter.snapshot().items()}
        # the plan picks the fan-in from the loop cap as the solver does
        assert snap == plans.get_plan("svm/smo").expected(
            n=len(X), n_iter=int(ours.n_iter_[0]), n_features=X.shape[1],
            loop_cap=d.loop_cap, readback_every=rb, float_blend=d.float_blending)


def test_split_rbf_and_svc_without_float_blending(rng):
    """GeForce 7800 GTX: loops stop at 255 iterations and float32 targets do not blend, so
    1,100 features (275 texels) take two distance cuts added by ping-pong passes."""
    d = sg.Device(profile="geforce-7800gtx")
    assert d.loop_cap == 255 and not d.float_blending
    try:
        X = rng.standard_normal((70, 1100))
        gamma = 1.0 / 1100
        d.counter.reset()
        kh, kl = rbf_pair(d, X, 3, 69, gamma)
        ref = rbf_matrix_host(X, X[[3, 69]], gamma)
        assert_close(kh, ref[:, 0], rtol=2e-5, atol=1e-7)
        assert_close(kl, ref[:, 1], rtol=2e-5, atol=1e-7)
        # 2 cuts + 4 ping-pong passes (the second cut's two outputs) + 1 exponential
        assert d.counter.snapshot()["rbf"]["passes"] == 7 == plans.get_plan("rbf/pair").total(
            n_features=1100, loop_cap=255, float_blend=False)
        X, y = make_classification(n_samples=90, n_features=1100, n_informative=10,
                                   random_state=2)
        X = StandardScaler().fit_transform(X)
        ref = SkSVC(C=1.0).fit(X, y)
        for ws in ("second-order", "first-order"):
            d.counter.reset()
            ours = SVC(C=1.0, device=d, working_set=ws).fit(X, y)
            assert sorted(ours.support_) == sorted(ref.support_)
            assert_close(ours.decision_function(X), ref.decision_function(X), rtol=1e-7, atol=1e-2)
            snap = {k: v["passes"] for k, v in d.counter.snapshot().items()}
            assert snap == plans.get_plan("svm/smo").expected(
                n=90, n_iter=int(ours.n_iter_[0]), n_features=1100, loop_cap=255,
                fanin=R.fanin_for(d), working_set=ws, readback_every=ours.readback_every,
                float_blend=False)
    finally:
        d.release()


def test_first_order_device_step_kij_from_distances(capped_dev):
    """Loop cap 16, 40 features (10 texels): the update walks the features once within the
    cap but not twice, so the first-order device step reads K_ij from a distance pass."""
    X, y = make_classification(n_samples=150, n_features=40, n_informative=6, random_state=4)
    X = StandardScaler().fit_transform(X)
    ref = SkSVC(C=1.0).fit(X, y)
    capped_dev.counter.reset()
    ours = SVC(C=1.0, device=capped_dev, working_set="first-order", readback_every=8).fit(X, y)
    assert sorted(ours.support_) == sorted(ref.support_)
    assert_close(ours.decision_function(X), ref.decision_function(X), rtol=1e-7, atol=1e-2)
    snap = {k: v["passes"] for k, v in capped_dev.counter.snapshot().items()}
    assert snap == plans.get_plan("svm/smo").expected(
        n=150, n_iter=int(ours.n_iter_[0]), n_features=40, loop_cap=16,
        fanin=R.fanin_for(capped_dev), working_set="first-order", readback_every=8)
