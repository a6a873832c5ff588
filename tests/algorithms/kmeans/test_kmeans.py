"""sg.KMeans against scikit-learn's ``KMeans(algorithm="lloyd")`` and the float64 reference.

From the same initial centres, the labels must be identical and the centres and the inertia
within the float32 bounds ``KMeans``'s docstring states (u = 2^-24):

* centres: ``(2 m + 8) u s`` per coordinate, ``m = 4 blk + nb`` (the update's longest chain of
  additions, from ``geometry``), ``s`` the power of two at least ``max|X - mean(X)|``;
* inertia: ``gamma(d + 3 + K) I + 2^-21 max|X - mean(X)| sum_i ||x_i - c_(l_i)||_1``, ``K`` the
  rounding depth of the device sum, plus the second-order effect of the centres' own error
  (``n d`` times its square).

The data sets keep every point away from ties (asserted: the gap between the nearest and the
second-nearest final centre is far above these bounds), so a label that differs is a bug.
"""
import math
import warnings

import numpy as np
import pytest
from sklearn.cluster import KMeans as SKMeans
from sklearn.cluster import kmeans_plusplus
from sklearn.datasets import load_digits, load_iris, make_blobs
from sklearn.exceptions import NotFittedError

import shadergpgpu as sg
from shadergpgpu.algorithms.kmeans import KMeans, geometry
from shadergpgpu.algorithms.kmeans import reference as ref
from shadergpgpu.analysis.plans import get_plan
from shadergpgpu.ops.reduce import fanin_for, gamma, rounding_depth

from tests.reference import assert_close

U = 2.0 ** -24


def _blobs(n=300, d=5, k=4, seed=0):
    return make_blobs(n, n_features=d, centers=k, random_state=seed)[0]


def _datasets():
    def normal(seed, shape):
        return np.random.default_rng(seed).normal(size=shape)

    return {
        "blobs": (_blobs(), 4),
        "random": (normal(2, (400, 3)), 5),
        # offset and units far from 1 (the fit centres on the mean and scales by a power of 2)
        "offset": (normal(8, (250, 9)) * 1e6 + 1e9, 6),
        # 13 features: a partly filled last texel; 1,100 points: two blocks in the update
        "wide": (_blobs(1100, 13, 7, seed=3), 7),
    }


DATA = _datasets()


def _init(X, k, seed=0):
    return kmeans_plusplus(X, k, random_state=np.random.RandomState(seed))[0]


def _sklearn(X, init, **kw):
    return SKMeans(len(init), init=init, n_init=1, algorithm="lloyd", **kw).fit(X)


def _scale(X):
    return 2.0 ** math.ceil(math.log2(np.abs(X - X.mean(axis=0)).max()))


def _check_against(km, sk, X, dev):
    """Labels identical, centres and inertia within the stated bounds."""
    n, d = X.shape
    k = len(sk.cluster_centers_)
    D = ref.squared_distances(X, sk.cluster_centers_)
    two = np.sort(D, axis=1)[:, :2]
    np.testing.assert_array_equal(km.labels_, sk.labels_)
    g = geometry(n, d, k, dev.loop_cap)
    s = _scale(X)
    c_tol = (2 * (4 * g.blk + g.nb) + 8) * U * s
    # the contract covers points whose nearest and second-nearest centres are further apart
    # than the centres' error and float32 can move a squared distance: the data keep every
    # point so (no near ties), so a label that differs is a bug
    r = np.sqrt(d * two[:, 1])
    slack = 2 * r * c_tol + (d + 3) * U * two[:, 1] + 4 * U * s * r
    assert (two[:, 1] - two[:, 0] > slack).all(), "a point is too close to a tie"
    assert_close(km.cluster_centers_, sk.cluster_centers_, rtol=0, atol=c_tol)
    K = rounding_depth(texels=math.ceil(n / 4), fanin=fanin_for(dev))
    l1 = np.abs(X - sk.cluster_centers_[sk.labels_]).sum()
    i_tol = (gamma(d + 3 + K) * sk.inertia_ + 2.0 ** -21 * np.abs(X - X.mean(0)).max() * l1
             + n * d * c_tol ** 2)
    assert_close(km.inertia_, sk.inertia_, rtol=0, atol=i_tol, what="inertia")


@pytest.mark.parametrize("name", sorted(DATA))
def test_equals_scikit_learn_from_the_same_centres(dev, name):
    X, k = DATA[name]
    init = _init(X, k)
    tol = 0.0 if name == "random" else 1e-4      # tol=0: until no label changes
    km = KMeans(k, init=init, tol=tol, device=dev).fit(X)
    sk = _sklearn(X, init, tol=tol)
    _check_against(km, sk, X, dev)
    assert km.n_iter_ == sk.n_iter_ > 1
    labels, inertia, centers, n_iter = ref.lloyd(X, init, tol=tol)   # the package's reference
    np.testing.assert_array_equal(labels, sk.labels_)
    assert n_iter == sk.n_iter_


def _fixed_inits():
    """Data sets and fixed initial centres: scikit-learn's digits (integer pixels, 64
    features), iris and a blob set; ``tol`` large enough in some that the run ends on the
    centre shift instead of on labels that stop changing; ``max_iter`` small in one that ends
    on the iteration limit."""
    digits, y = load_digits(return_X_y=True)
    iris = load_iris().data
    blobs = make_blobs(500, n_features=6, centers=5, cluster_std=2.5, random_state=7)[0]
    means = np.array([digits[y == c].mean(axis=0) for c in range(10)])
    return {
        # rows of X as the centres (the first ten digits), or the mean image of each digit
        "digits-first-rows": (digits, digits[:10], {}),
        "digits-class-means": (digits, means, {}),
        "digits-first-rows-tol": (digits, digits[:10], {"tol": 1e-2}),
        "iris-one-per-species": (iris, iris[[0, 50, 100]], {}),
        "iris-first-rows-tol": (iris, iris[:3], {"tol": 1e-2}),
        "blobs-first-rows": (blobs, blobs[:5], {}),
        "blobs-first-rows-tol": (blobs, blobs[:5], {"tol": 1e-2}),
        "blobs-max-iter": (blobs, blobs[:5], {"max_iter": 4}),
    }


FIXED = _fixed_inits()


def _lloyd_steps(X, init, tol=1e-4, max_iter=300):
    """scikit-learn's iterations in float64 (the reference's steps, its stopping rule): per
    iteration the labels that changed and the total squared centre shift; and the tolerance
    (scikit-learn's ``_tolerance``)."""
    X = np.asarray(X, np.float64)
    tol_abs = float(np.mean(np.var(X, axis=0)) * tol) if tol else 0.0
    c = np.asarray(init, np.float64)
    old = np.full(len(X), -1)
    steps = []
    for _ in range(max_iter):
        labels, _ = ref.assign(X, c)
        new = ref.update(X, c, labels)
        steps.append((int((labels != old).sum()), float(((new - c) ** 2).sum())))
        c, old = new, labels
        if steps[-1][0] == 0 or steps[-1][1] <= tol_abs:
            break
    return steps, tol_abs


@pytest.mark.parametrize("name", list(FIXED))
def test_iterations_labels_and_inertia_equal_scikit_learn_from_fixed_centres(dev, name):
    """``n_iter_`` and ``labels_`` equal scikit-learn's ``KMeans(init=array, n_init=1,
    algorithm="lloyd")`` exactly, the centres and ``inertia_`` within the bounds of
    ``_check_against``; the stopping rule is scikit-learn's (no changed label first, then the
    centre shift against ``tol`` times the mean variance, ``n_iter_ = i + 1``, the labels
    reassigned to the final centres unless no label changed).

    Premises, checked on the float64 steps: each case ends the way its name says (on labels
    that stop changing, on the tolerance, on ``max_iter``), and no step's centre shift is
    within the device's error of the tolerance: the device's shift is the float32 sum of the
    squared differences of centres within ``c_tol`` of float64's (``_check_against``), so it
    is within ``(sqrt(shift) + sqrt(k d) e)^2 (1 + gamma(k d + 8)) - shift`` of the float64
    shift, ``e = 2 c_tol + 2 u sqrt(shift)``. The final labels are covered by the bound of
    ``_check_against``; before them, on digits some points come nearer a tie than that
    worst-case bound (which adds every rounding at its worst), and integer pixels put a point
    exactly between two initial rows, a tie each side breaks by its own rounding: there the
    equal iteration count rests on the device's centres being nearer float64's than the
    bound."""
    X, init, kw = FIXED[name]
    k, (n, d) = len(init), X.shape
    km = KMeans(k, init=init, device=dev, **kw).fit(X)
    sk = _sklearn(X, init, **kw)
    steps, tol_abs = _lloyd_steps(X, init, kw.get("tol", 1e-4), kw.get("max_iter", 300))
    changed, shift = steps[-1]
    ends = "max-iter" if "max_iter" in kw else "tol" if "tol" in kw else "labels"
    assert {"labels": changed == 0, "tol": changed > 0 and shift <= tol_abs,
            "max-iter": changed > 0 and shift > tol_abs}[ends]
    g = geometry(n, d, k, dev.loop_cap)
    c_tol = (2 * (4 * g.blk + g.nb) + 8) * U * _scale(X)
    for changed, shift in steps:
        if changed:
            r = math.sqrt(shift)
            e = 2 * c_tol + 2 * U * r
            margin = (r + math.sqrt(k * d) * e) ** 2 * (1 + gamma(k * d + 8)) - shift
            assert abs(shift - tol_abs) > margin, (shift, tol_abs, margin)
    _check_against(km, sk, X, dev)
    assert km.n_iter_ == sk.n_iter_ == len(steps)
    labels, inertia, centers, n_iter = ref.lloyd(X, init, **kw)
    np.testing.assert_array_equal(labels, sk.labels_)
    assert n_iter == sk.n_iter_


def test_float32_data_takes_the_tolerance_in_float32(dev):
    """X in float32: the tolerance is scikit-learn's ``_tolerance`` of the float32 data (its
    variances in float32); the run ends on it at scikit-learn's iteration with its labels.
    (scikit-learn keeps float32 data's centres and inertia in float32, so the bounds of
    ``_check_against``, against float64, do not apply to them.)"""
    X, init, kw = FIXED["iris-first-rows-tol"]
    X32, init32 = X.astype(np.float32), init.astype(np.float32)
    km = KMeans(len(init), init=init32, device=dev, **kw).fit(X32)
    sk = _sklearn(X32, init32, **kw)
    steps, _ = _lloyd_steps(X32, init32, kw["tol"])
    assert steps[-1][0] > 0                   # it ends on the tolerance
    np.testing.assert_array_equal(km.labels_, sk.labels_)
    assert km.n_iter_ == sk.n_iter_ == len(steps)


def test_k_means_plus_plus_and_random_follow_the_random_state(dev):
    """The seeding is scikit-learn's (host), so a random_state gives scikit-learn's runs."""
    X, k = DATA["random"]
    for init in ("k-means++", "random"):
        km = KMeans(k, init=init, random_state=11, device=dev).fit(X)
        sk = SKMeans(k, init=init, random_state=11, algorithm="lloyd").fit(X)
        _check_against(km, sk, X, dev)


def test_n_init_keeps_the_lowest_inertia(dev):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 2))
    k, runs, seed = 7, 4, 3
    # the seeds the fit draws: scikit-learn's k-means++ on the centred data, one RandomState
    rs = np.random.RandomState(seed)
    Xc = X - X.mean(axis=0)
    fits = [KMeans(k, init=kmeans_plusplus(Xc, k, random_state=rs)[0] + X.mean(axis=0),
                   device=dev).fit(X) for _ in range(runs)]
    inertias = [f.inertia_ for f in fits]
    assert max(inertias) > min(inertias) * 1.001       # the runs differ: the choice matters
    best = KMeans(k, n_init=runs, random_state=seed, device=dev).fit(X)
    i = int(np.argmin(inertias))
    assert_close(best.inertia_, inertias[i], rtol=1e-6, atol=0)
    np.testing.assert_array_equal(best.labels_, fits[i].labels_)
    _check_against(best, SKMeans(k, n_init=runs, random_state=seed, algorithm="lloyd").fit(X),
                   X, dev)


def test_empty_cluster_is_relocated_as_scikit_learn_does(dev):
    X = _blobs(300, 4, 4, seed=2)
    init = X[:4].copy()
    init[2] += 1000.0                 # never the nearest centre: empty at the first iteration
    init[3] -= 500.0
    assert set(ref.assign(X, init)[0]) <= {0, 1}
    km = KMeans(4, init=init, device=dev).fit(X)
    sk = _sklearn(X, init)
    _check_against(km, sk, X, dev)
    assert km.n_iter_ == sk.n_iter_


def test_fewer_distinct_points_than_clusters_warns_like_scikit_learn(dev):
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]]), 10, axis=0)
    init = np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0], [50.0, 50.0]])
    with pytest.warns(Warning, match=r"distinct clusters \(3\)"):
        km = KMeans(4, init=init, device=dev).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk = _sklearn(X, init)
    np.testing.assert_array_equal(km.labels_, sk.labels_)
    np.testing.assert_array_equal(km.cluster_centers_, sk.cluster_centers_)
    assert km.inertia_ == sk.inertia_ == 0.0


def test_predict_transform_and_fit_predict(dev):
    X, k = DATA["blobs"]
    init = _init(X, k)
    km = KMeans(k, init=init, device=dev).fit(X)
    sk = _sklearn(X, init)
    rng = np.random.default_rng(2)
    new = X[rng.integers(0, len(X), 80)] + rng.normal(scale=0.5, size=(80, X.shape[1]))
    labels, _ = ref.assign(new, km.cluster_centers_)
    np.testing.assert_array_equal(km.predict(new), labels)
    np.testing.assert_array_equal(km.predict(new), sk.predict(new))
    np.testing.assert_array_equal(km.predict(X), km.labels_)
    far = new * 1e3                      # beyond the fit's range: the predict rescales
    np.testing.assert_array_equal(km.predict(far), ref.assign(far, km.cluster_centers_)[0])
    assert_close(km.transform(new), np.sqrt(ref.squared_distances(new, km.cluster_centers_)),
                 rtol=1e-12, atol=0)
    np.testing.assert_array_equal(KMeans(k, init=init, device=dev).fit_predict(X), km.labels_)


def _passes(dev):
    return {k: v for k, v in dev.counter.passes.items() if k.startswith("kmeans/")}


@pytest.mark.parametrize("where", ["native", "loop-cap-40", "geforce-7800gtx"])
def test_passes_follow_the_plan(where):
    """The counter equals the plan kmeans/lloyd, also where the loop cap cuts the assignment
    and the status across passes and where ping-pong passes replace blending."""
    d = {"native": lambda: sg.Device(),
         "loop-cap-40": lambda: sg.Device(limits=sg.Limits(loop_cap=40)),
         "geforce-7800gtx": lambda: sg.Device(profile="geforce-7800gtx")}[where]()
    try:
        rng = np.random.default_rng(4)
        X, k = (rng.normal(size=(200, 13)), 20) if where == "loop-cap-40" else \
            (rng.normal(size=(150, 50)), 30) if where == "geforce-7800gtx" else DATA["blobs"]
        init = _init(X, k)
        before = dict(_passes(d))
        km = KMeans(k, init=init, device=d).fit(X)
        got = {ph: n - before.get(ph, 0) for ph, n in _passes(d).items()}
        plan = get_plan("kmeans/lloyd")
        want = plan.expected(n=len(X), n_features=X.shape[1], n_clusters=k, n_iter=km.n_iter_,
                             loop_cap=d.loop_cap, float_blend=d.float_blending)
        assert got == {ph: n for ph, n in want.items() if n}
        assert km.n_passes_ == sum(want.values())
        g = geometry(len(X), X.shape[1], k, d.loop_cap)
        if where != "native":              # the cut paths really ran
            assert len(g.assign_cuts) > 1 and len(g.status_cuts) > 1
        _check_against(km, _sklearn(X, init), X, d)
    finally:
        d.release()


def test_two_fits_then_predict_with_the_first(dev):
    """Fits of different shapes on one device, then the first model: nothing leaks between
    them (the fit releases its arrays; predict uploads its own)."""
    live = dev.memory()["live_arrays"]
    A, ka = DATA["blobs"]
    B = _blobs(150, 9, 3, seed=8)
    first = KMeans(ka, init=_init(A, ka), device=dev).fit(A)
    second = KMeans(3, init=_init(B, 3), device=dev).fit(B)
    assert dev.memory()["live_arrays"] == live
    new = A[::7] + 0.25
    np.testing.assert_array_equal(first.predict(new), ref.assign(new, first.cluster_centers_)[0])
    np.testing.assert_array_equal(first.predict(A), first.labels_)
    np.testing.assert_array_equal(second.predict(B), second.labels_)
    _check_against(second, _sklearn(B, _init(B, 3)), B, dev)
    assert dev.memory()["live_arrays"] == live


# ---- the boundary ------------------------------------------------------------------------------
X0 = _blobs(40, 3, 2)


@pytest.mark.parametrize("kwargs, X, match", [
    ({"n_clusters": 0}, X0, "n_clusters"),
    ({"n_clusters": 2.5}, X0, "n_clusters"),
    ({"n_clusters": 41}, X0, "n_clusters=41"),
    ({"init": "kmeans"}, X0, "init"),
    ({"init": lambda X, k, random_state: X[:k]}, X0, "init"),
    ({"init": np.zeros((3, 3))}, X0, r"init: .*\(3, 3\)"),
    ({"init": np.zeros((2, 4))}, X0, r"init: .*\(2, 4\)"),
    ({"init": np.array([[0.0, 0, 0], [np.nan, 0, 0]])}, X0, "init"),
    ({"n_init": 0}, X0, "n_init"),
    ({"n_init": "all"}, X0, "n_init"),
    ({"max_iter": 0}, X0, "max_iter"),
    ({"tol": -1.0}, X0, "tol"),
    ({"random_state": "seed"}, X0, "random_state"),
    ({}, np.where(X0 > 0, np.nan, X0), "X contains NaN"),
    ({}, X0[:, 0], "^X: Expected 2D array, got 1D array instead"),
    ({}, np.zeros((0, 3)), r"^X: Found array with 0 sample\(s\) \(shape=\(0, 3\)\)"),
    ({}, X0[:, :0], r"^X: Found array with 0 feature\(s\) \(shape=\(40, 0\)\)"),
    ({}, [[1.0, 2.0], [3.0, "a"]], "^X: could not convert"),
])
def test_bad_input_names_the_argument(dev, kwargs, X, match):
    kw = dict({"n_clusters": 2, "device": dev}, **kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        KMeans(**kw).fit(X)


@pytest.mark.parametrize("X", [np.zeros((12, 0)), np.zeros((0, 3)), np.zeros(5)],
                         ids=["no-features", "no-samples", "1-d"])
def test_empty_data_messages_are_scikit_learn_s(dev, X):
    """Empty or 1-D X: scikit-learn's own message (``validate_data``), as its KMeans raises
    it, after ``X:``."""
    with pytest.raises(ValueError) as theirs:
        SKMeans(2).fit(X)
    with pytest.raises(ValueError) as ours:
        KMeans(2, device=dev).fit(X)
    assert str(ours.value) == f"X: {theirs.value}"


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.SkipTestWarning")
def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    # device=None: the process-wide device (check_estimator pickles the estimator, a Device
    # cannot be pickled). No check is expected to fail.
    res = check_estimator(KMeans(n_clusters=3), on_fail=None)
    failed = [(r["check_name"], r["exception"]) for r in res if r["status"] == "failed"]
    assert not failed


def test_bad_device_and_predict_inputs(dev):
    with pytest.raises(TypeError, match="device"):
        KMeans(2, device="gpu").fit(X0)
    with pytest.raises(NotFittedError):
        KMeans(2, device=dev).predict(X0)
    km = KMeans(2, random_state=0, device=dev).fit(X0)
    with pytest.raises(ValueError, match="X has 2 features"):
        km.predict(X0[:, :2])
    with pytest.warns(RuntimeWarning, match="only one init"):
        KMeans(2, init=X0[:2], n_init=3, device=dev).fit(X0)


def test_sizes_beyond_the_texture_are_refused_up_front():
    """At a texture size of 16 (256 texels), the points or the centroids that do not fit are
    refused before anything is allocated, the error naming X or n_clusters; what fits (wrapped)
    still equals scikit-learn."""
    d = sg.Device(limits=sg.Limits(max_texture_size=16))
    try:
        live = d.memory()["live_arrays"]
        with pytest.raises(ValueError, match=r"X: 300 samples x 8 features .*max_texture_size"):
            KMeans(3, device=d).fit(np.zeros((300, 8)))
        # 200 points of 3 features fit (150 texels, wrapped); 150 centroids' partial sums of
        # 3 + 2 columns take 150 x 2 texels
        with pytest.raises(ValueError, match=r"n_clusters: 150 centroids .* 300 texels"):
            KMeans(150, init="random", device=d).fit(np.random.default_rng(0).normal(
                size=(200, 3)))
        assert d.memory()["live_arrays"] == live
        X = _blobs(60, 5, 3, seed=4)          # the row-order points wrap at 16 texels
        init = _init(X, 3)
        _check_against(KMeans(3, init=init, device=d).fit(X), _sklearn(X, init), X, d)
    finally:
        d.release()
