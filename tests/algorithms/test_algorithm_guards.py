"""The algorithms' guards and numerical contracts.

* Sizes: a fit or product the device cannot hold is refused from the shapes alone, before
  anything is converted or allocated (host or device): within 1 s, < 200 MB, the error naming
  the argument (hidden[i], X, y, A, B).
* Ranges: Sammon's fit does not depend on the units of X (1e-30 .. 1e30); SVC refuses data
  whose squared distances float32 cannot hold (instead of "NaN in the gradient", or a silently
  wrong model).
* Error bounds stated in the docstrings (sgemm, MLP forward and step, SVC decision function
  and intercept, Sammon stress), checked against float64 numpy at their edges.
"""
import json
import subprocess
import sys
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.algorithms import backprop as bp
from shadergpgpu.algorithms import svm as svm_mod
from shadergpgpu.algorithms.backprop import MLP, MLPClassifier
from shadergpgpu.algorithms.sammon import Sammon
from shadergpgpu.algorithms.sgemm import sgemm
from shadergpgpu.analysis.plans.sgemm import work
from shadergpgpu.algorithms.svm import SVC
from shadergpgpu.ops.rbf import rbf_matrix_host

from tests.reference import assert_close, assert_within

U = 2.0 ** -24          # float32 unit roundoff
TINY = 2.0 ** -126      # float32's smallest normal number
MB = 1 << 20


# ---- sizes: refused at once ------------------------------------------------------------------
XOR = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], float), np.array([0, 1, 1, 0])


def _big(shape):
    """A read-only array of ``shape`` that takes no memory (one broadcast value)."""
    return np.broadcast_to(np.float64(1.0), shape)


#: the cases are too large for a device capped at this texture size (llvmpipe's own; a GPU's
#: driver may allow 32,768, where some of them fit and would really be allocated)
CAP = 16384


@pytest.fixture(scope="module")
def capped():
    d = sg.Device(limits=sg.Limits(max_texture_size=CAP))
    yield d
    d.release()


def _cases(dev):
    return {
        # 17.2 GB of weights and 72 s before the layout refused it
        "mlp-hidden": (lambda: MLP(hidden_layer_sizes=(2 ** 28,), max_iter=1,
                                   device=dev).fit(*XOR),
                       r"hidden_layer_sizes\[0\] = 268435456"),
        # 65,536 classes: the one-hot targets alone would take 34 GB
        "mlpc-classes": (lambda: MLPClassifier(max_iter=1, device=dev).fit(
            np.zeros((2 ** 16, 1)), np.arange(2 ** 16)), r"y \(its 65536 outputs\)"),
        # 2 points padded to 256 x 4,194,312 float32 features on the host: 4.3 GB
        "svc-features": (lambda: SVC(device=dev).fit(np.zeros((2, 2 ** 22 + 8)), [0, 1]),
                         r"X: 2 samples x 4194312 features"),
        "sammon-samples": (lambda: Sammon(n_iter=1, device=dev).fit(_big((2 ** 28 + 1, 1))),
                           r"X: 268435457 samples"),
        "sammon-features": (lambda: Sammon(n_iter=1, device=dev).fit(_big((2, 2 ** 30))),
                            r"X: 2 samples x 1073741824 features"),
        # the texture path (the default on llvmpipe): A and B must each fit one texture. The
        # uniform-block variants (the GPU default) read A from a buffer, where a 17 x 2^26 A
        # fits, so the case names its variant to mean the same on every device
        "sgemm-A": (lambda: sgemm(_big((17, 2 ** 26)), _big((2 ** 26, 1)), device=dev,
                                  variant="tile8x4-tex"), r"^A: too large"),
        "sgemm-B": (lambda: sgemm(np.ones((1, 1)), _big((1, 2 ** 30 + 4)), device=dev,
                                  variant="tile8x4-tex"), r"^B: too large"),
    }


@pytest.mark.parametrize("case", ["mlp-hidden", "mlpc-classes", "svc-features",
                                  "sammon-samples", "sammon-features", "sgemm-A", "sgemm-B"])
def test_too_large_is_refused_before_any_allocation(capped, case):
    dev = capped
    fn, msg = _cases(dev)[case]
    live = dev.memory()["live_arrays"]
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=msg) as err:
            fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * MB, peak
    assert dev.memory()["live_arrays"] == live            # no texture made (or leaked)
    assert "max_texture_size" in str(err.value)           # the device's limit is named


_RSS_SCRIPT = r"""
import json, resource, sys, warnings
import numpy as np
sys.path.insert(0, {root!r})              # the repository: the tests package
import shadergpgpu as sg
from tests.algorithms.test_algorithm_guards import _cases
from tests.algorithms.test_algorithm_guards import CAP
dev = sg.Device(limits=sg.Limits(max_texture_size=CAP))
cases = _cases(dev)
r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
out = {{}}
for name, (fn, msg) in cases.items():
    try:
        fn()
        out[name] = [False, "no error"]
    except ValueError as e:
        out[name] = [True, str(e)]
out["rss_growth_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0
print(json.dumps(out))
"""


def test_refusals_in_a_fresh_process_stay_within_200_mb():
    """The same refusals one after another in a fresh interpreter: its peak RSS (ru_maxrss,
    not only numpy's allocations) grows by less than 200 MB over all of them."""
    code = _RSS_SCRIPT.format(root=str(Path(__file__).resolve().parents[2]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out.pop("rss_growth_kb") < 200 * 1024
    for name, (refused, msg) in out.items():   # every case refused (times: benchmarks/guards.py)
        assert refused, (name, msg)


# ---- Sammon: the units of X do not matter ---------------------------------------------------
@pytest.fixture(scope="module")
def sammon_data():
    return np.random.default_rng(21).normal(size=(30, 5))


@pytest.mark.parametrize("init", ["pca", "random"])
def test_sammon_is_scale_invariant(dev, sammon_data, init):
    """fit(X * s) has the stress of fit(X) and s times its embedding, s = 1e-30 .. 1e30 (the
    float32 squared distances of X * 1e20 overflowed and those of X * 1e-30 underflowed:
    "all samples coincide")."""
    X = sammon_data
    ref = Sammon(init=init, random_state=0, device=dev).fit(X)
    top = np.abs(ref.embedding_).max()
    for s in (1e-30, 1e-20, 1e-10, 1e10, 1e20, 1e30):
        est = Sammon(init=init, random_state=0, device=dev)
        Y = est.fit_transform(X * s)
        assert Y is est.embedding_ and Y.dtype == np.float32
        assert_close(est.stress_, ref.stress_, rtol=1e-4, atol=0, what=f"stress, X * {s}")
        assert_close(Y / s, ref.embedding_, rtol=0, atol=1e-4 * top, what=f"embedding, X * {s}")
        assert_close(est.stress_history_, ref.stress_history_, rtol=1e-4, atol=0)
        assert_close(est.scale_, s * ref.scale_, rtol=1e-12, atol=0)
        assert_close(est.step_, s * ref.step_, rtol=1e-4, atol=0)
    # float32 input of that size too
    est = Sammon(init=init, random_state=0, device=dev).fit((X * 1e30).astype(np.float32))
    assert_close(est.stress_, ref.stress_, rtol=1e-4, atol=0, what="float32 X * 1e30")


def test_sammon_init_array_and_source_step_in_the_units_of_x(dev, sammon_data):
    """An init array is in the units of X; step="source" keeps eq. 4 in those units
    (mu = 2 lambda / sum dn, not scale invariant): lambda s^2 on X * s is s times lambda on
    X."""
    X = sammon_data
    Y0 = np.random.default_rng(3).normal(size=(30, 2))
    kw = dict(step="source", n_iter=8, tol=None, device=dev)
    ref = Sammon(init=Y0, learning_rate=20.0, **kw).fit(X)
    for s in (1e-20, 1e20):
        est = Sammon(init=Y0 * s, learning_rate=20.0 * s * s, **kw).fit(X * s)
        assert_close(est.stress_, ref.stress_, rtol=1e-4, atol=0, what=f"stress, X * {s}")
        assert_close(est.embedding_ / s, ref.embedding_, rtol=0,
                     atol=1e-4 * np.abs(ref.embedding_).max(), what=f"embedding, X * {s}")
        assert_close(est.mu_, ref.mu_ * s, rtol=1e-5, atol=0)   # 2 lambda s^2 / (s sum dn)



@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from shadergpgpu import distributed as sgd
    c = sgd.local_cluster(2)
    yield c
    c.close()
    c.cluster.close()


def test_sammon_dask_fit_is_scale_invariant_too(dev, client, sammon_data):
    """Sammon.fit(client=) scales X on the client the same way: the workers fit X / scale_."""
    X = sammon_data
    for step in ("adaptive", "source"):
        kw = dict(n_iter=8, step=step, cache=False, tol=None)
        ref = Sammon(device=dev, learning_rate=20.0, **kw).fit(X)
        for s in (1e-25, 1e25):
            lr = 20.0 * s * s if step == "source" else 20.0
            est = Sammon(learning_rate=lr, **kw).fit(X * s, client=client)
            assert est.n_shards_ == 2
            assert_close(est.stress_, ref.stress_, rtol=1e-4, atol=0, what=(step, s))
            assert_close(est.embedding_ / s, ref.embedding_, rtol=0,
                         atol=1e-4 * np.abs(ref.embedding_).max(), what=(step, s))

def test_sammon_refuses_what_a_float32_embedding_cannot_hold(dev, sammon_data):
    with pytest.raises(ValueError, match="X: samples lie up to .* float32"):
        Sammon(n_iter=2, device=dev).fit(sammon_data * 1e300)
    with pytest.raises(ValueError, match="X: the samples' RMS distance"):
        Sammon(n_iter=2, device=dev).fit(sammon_data * 1e-300)
    with pytest.raises(ValueError, match="X: all samples coincide"):
        Sammon(n_iter=2, device=dev).fit(np.full((5, 3), 1e30))


def test_sammon_stress_within_its_bound(dev):
    """|stress_ - E64(embedding_)| <= (4N + 12n + 60) u E + (16n + 76) u sqrt(E)."""
    rng = np.random.default_rng(8)
    X = np.vstack([rng.normal(c, 1.0, (100, 40)) for c in (0.0, 3.0, 6.0, 9.0)])
    est = Sammon(n_iter=6, device=dev).fit(X)
    n, d = X.shape
    Dn = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    Y = est.embedding_.astype(np.float64)
    Dm = np.sqrt(((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1))
    off = ~np.eye(n, dtype=bool)
    E = ((Dn[off] - Dm[off]) ** 2 / Dn[off]).sum() / Dn[off].sum()
    bound = (4 * n + 12 * d + 60) * U * E + (16 * d + 76) * U * np.sqrt(E)
    assert_close(est.stress_, E, rtol=0, atol=bound, what="stress_ against E64(embedding_)")



def test_sammon_points_wider_than_a_texture_row_use_the_pair_kernel(dev, small_dev):
    """72 coordinates = 18 texels a point, more than a 16-texel texture row: the tiled sweep's
    blocked source cannot hold a point (it raised "group 1: ..."), so the pair kernel sweeps,
    with the native tiled fit's result."""
    X = np.random.default_rng(5).normal(size=(12, 72))
    kw = dict(n_iter=3, step="source", learning_rate=20.0, tol=None, cache=False)
    a = Sammon(device=dev, **kw).fit(X)
    b = Sammon(device=small_dev, **kw).fit(X)
    assert a.tiled_ and not b.tiled_
    assert_close(b.embedding_, a.embedding_, rtol=0, atol=1e-5 * np.abs(a.embedding_).max())

# ---- SVC: float32's range of the squared distances ------------------------------------------
@pytest.fixture(scope="module")
def svc_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 6))
    return X, (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)


@pytest.mark.parametrize("s,msg", [
    (1e30, r"X: squared distances between samples reach .* float32 when \|X\| <= 3.77e\+18"),
    (1e19, r"X: squared distances between samples reach"),
    (1e-30, r"X: squared distances below float32's smallest normal"),
    (1e-19, r"X: squared distances below float32's smallest normal"),  # was 61 SVs, not 74
])
def test_svc_refuses_data_float32_cannot_hold(dev, svc_data, s, msg):
    X, y = svc_data
    with pytest.raises(ValueError, match=msg):
        SVC(device=dev).fit(X * s, y)


def test_svc_range_checks_name_gamma_and_keep_what_is_right(dev, svc_data):
    X, y = svc_data
    with pytest.raises(ValueError, match=r"X: gamma=1e\+40 is beyond float32's range"):
        SVC(gamma=1e40, device=dev).fit(X, y)
    ref = SVC(device=dev).fit(X, y)
    # large but representable: squared distances up to ~1e38 fit float32
    big = SVC(device=dev).fit(X * 1e18, y)
    assert np.array_equal(big.support_, ref.support_)
    assert_close(big.decision_function(X * 1e18), ref.decision_function(X), rtol=1e-7, atol=1e-5)
    # overflowing squared distances are harmless where gamma makes their kernel 0 anyway
    SVC(gamma=1.0, device=dev).fit(np.vstack([X, [[1e20] * 6]]), np.append(y, 1))
    with pytest.raises(ValueError, match=r"X: values up to 1e\+39 are beyond float32"):
        ref.predict(np.full((2, 6), 1e39))


def test_svc_decision_function_and_intercept_within_their_bounds(dev):
    """decision_function: the fitted model in float64, even for a feature far from the origin
    (1e6 in every sample, the other one ~1e-3: the host's |a|^2 + |b|^2 - 2 a.b lost the
    second feature entirely and predicted 53% of the training points right, against 94%
    now). intercept_: within (n_iter + 1) u (max |G| + 2 C (d + 8) + n_SV C) of libsvm's rule
    on float64 G."""
    rng = np.random.default_rng(4)
    d, C = 2, 4.0
    s = rng.normal(0, 1e-3, 300)
    X = np.column_stack([np.full(300, 1e6), s]).astype(np.float32).astype(np.float64)
    y = (s + 2e-4 * rng.standard_normal(300) > 0).astype(int)
    m = SVC(C=C, gamma=3e5, device=dev).fit(X, y)
    assert (m.predict(X) == y).mean() > 0.9
    sv, c, b, g = m.support_vectors_, m.dual_coef_[0], m.intercept_[0], m._gamma
    Xt = X[::7]
    d2 = ((Xt[:, None, :] - sv[None, :, :]) ** 2).sum(-1)            # direct differences
    f64 = np.exp(-g * d2) @ c + b
    bound = (len(sv) + d + 4) * 2.0 ** -53 * (np.abs(c).sum() * (1 + g * d2.max()) + abs(b))
    assert_close(m.decision_function(Xt), f64, rtol=0, atol=bound, what="decision_function")
    # the intercept from float64 G = Q alpha - 1 of the fitted alphas (problem labels: +1 for
    # classes_[0]; dual_coef_ = -alpha y for two classes)
    yp = np.where(y == m.classes_[0], 1.0, -1.0)
    alpha = np.zeros(len(X))
    alpha[m.support_] = -c * yp[m.support_]
    K = rbf_matrix_host(X - X.mean(0), X - X.mean(0), g)
    G = yp * (K @ (alpha * yp)) - 1.0
    rho = svm_mod.libsvm.libsvm_rho(alpha, G, yp, C)
    n_iter = int(m.n_iter_[0])
    bound = (n_iter + 1) * U * (np.abs(G).max() + 2 * C * (d + 8) + len(sv) * C)
    assert_close(b, rho, rtol=0, atol=bound, what="intercept against libsvm's rule")


# ---- SGEMM -----------------------------------------------------------------------------------
def _sgemm_bound(A, B, alpha=1.0):
    K = A.shape[1]
    A64, B64 = A.astype(np.float64), B.astype(np.float64)
    return (K + 5) * U * abs(alpha) * (np.abs(A64) @ np.abs(B64)) + \
        (2 * K + 4) * TINY * (1 + abs(alpha))


def test_sgemm_long_k_within_the_bound(dev):
    """K = 300,000 positive terms (the worst case for a running sum): |C - C64| <= (K + 5) u
    |A| @ |B|; the simple kernel's 75,000 K-quads pass llvmpipe's loop cap, so the engine cuts
    them over blended passes, and the tile is asked for 5 slices."""
    rng = np.random.default_rng(2)
    K = 300_000
    A = rng.uniform(0.5, 1.0, (3, K)).astype(np.float32)
    B = rng.uniform(0.5, 1.0, (K, 5)).astype(np.float32)
    C64 = A.astype(np.float64) @ B.astype(np.float64)
    bound = _sgemm_bound(A, B)
    assert work("simple", 3, 5, K, device=dev)["split"] >= 2 or dev.loop_cap is None
    for variant, split in (("tile8x4", None), ("simple", None), ("tile8x4", 5)):
        C = sgemm(A, B, variant=variant, split=split, device=dev)
        assert_within(C, C64, bound, what=(variant, split))


def test_sgemm_overflow_is_inf_like_float32(dev):
    A = np.full((2, 8), 1e38, np.float32)
    B = np.full((8, 3), 10.0, np.float32)
    assert np.isposinf(sgemm(A, B, device=dev)).all()             # products overflow
    A2 = np.hstack([A[:, :4], -A[:, 4:]])
    assert not np.isfinite(sgemm(A2, B, device=dev)).any()        # inf - inf: NaN, not 0
    A3 = np.full((2, 4), 3e37, np.float32)
    B3 = np.full((4, 3), 2.0, np.float32)                         # sum 2.4e38: finite
    C3 = sgemm(A3, B3, device=dev)
    assert np.isfinite(C3).all()
    assert_close(C3, np.full(C3.shape, 2.4e38), rtol=0, atol=_sgemm_bound(A3, B3).max())
    assert np.isposinf(sgemm(A3, B3, alpha=2.0, device=dev)).all()  # alpha p overflows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        C4 = sgemm(np.full((1, 2), 1e39), np.ones((2, 1)), device=dev)  # beyond float32
    assert np.isposinf(C4).all()


@pytest.mark.parametrize("a_scale,b_scale", [(3e-38, 1.0), (1e-19, 1e-19), (1e19, 5e17)])
def test_sgemm_extreme_values_within_the_bound(dev, a_scale, b_scale):
    """Products near float32's smallest normal number (the absolute term: a GPU may flush
    them), and sums near its largest."""
    rng = np.random.default_rng(6)
    K = 1000 if a_scale < 1 else 8           # 8 x 4 x 5e36 = 1.6e38 < 3.4e38
    A = (rng.uniform(1.0, 2.0, (4, K)) * a_scale).astype(np.float32)
    B = (rng.uniform(1.0, 2.0, (K, 6)) * b_scale).astype(np.float32)
    C64 = A.astype(np.float64) @ B.astype(np.float64)
    C = sgemm(A, B, device=dev)
    assert np.isfinite(C).all()
    assert_within(C, C64, _sgemm_bound(A, B))


# ---- MLP -------------------------------------------------------------------------------------
def _forward_bound(weights, X):
    """Activations of every layer (float64) and the forward bound of the MLP docstring."""
    a = np.asarray(X, np.float64)
    da = U * np.abs(a)
    acts, errs = [a], [da]
    for W in weights:
        L = W.shape[0] - 1
        s = np.abs(W[0]) + np.abs(a) @ np.abs(W[1:])
        dz = (L + 3) * U * s + da @ np.abs(W[1:])
        a = 1.0 / (1.0 + np.exp(-(W[0] + a @ W[1:])))
        da = a * (1 - a) * dz + 4 * U
        acts.append(a)
        errs.append(da)
    return acts, errs


def _f32(ws):
    return [np.asarray(w, np.float32).astype(np.float64) for w in ws]


def test_mlp_forward_within_its_bound(dev):
    """A wide input layer (2,000 inputs) and weights large enough to saturate units."""
    rng = np.random.default_rng(12)
    X = rng.uniform(-1, 1, (64, 2000)).astype(np.float32).astype(np.float64)
    W = _f32([rng.normal(0, 0.5, (2001, 30)), rng.normal(0, 8.0, (31, 3))])
    out = bp.device_forward(dev, W, X)
    acts, errs = _forward_bound(W, X)
    assert_within(out, acts[-1], errs[-1], what="saturating forward")
    assert (acts[-1] < 1e-6).any() or (acts[-1] > 1 - 1e-6).any()   # really saturating


@pytest.mark.parametrize("schedule", ["paper", "fused"])
def test_mlp_one_step_within_its_bound(dev, schedule):
    rng = np.random.default_rng(13)
    N, sizes, lr = 512, [20, 48, 3], 0.05
    X = rng.uniform(-1, 1, (N, sizes[0])).astype(np.float32).astype(np.float64)
    T = rng.uniform(0, 1, (N, sizes[-1])).astype(np.float32).astype(np.float64)
    with bp.BackpropNet(dev, sizes, X, T, weights=bp.init_weights(sizes, 5), lr=lr,
                        schedule=schedule) as net:
        net.step()
        weights = net.weights()
    W0 = _f32(bp.init_weights(sizes, 5))
    ref, _ = bp.numpy_step(W0, X, T, lr)
    acts, errs = _forward_bound(W0, X)
    y, dy = acts[-1], errs[-1]
    delta = (y - T) * y * (1 - y)
    ddelta = 1.25 * dy + 4 * U * np.abs(delta) + U
    for k in range(len(W0) - 1, -1, -1):
        a, da = acts[k], errs[k]
        a1 = np.hstack([np.ones((N, 1)), a])
        da1 = np.hstack([np.zeros((N, 1)), da])
        g = (N + 4) * U * (np.abs(a1).T @ np.abs(delta)) + \
            np.abs(a1).T @ ddelta + da1.T @ np.abs(delta)
        bound = U * np.abs(ref[k]) + lr * g
        assert_within(weights[k], ref[k], bound, what=(schedule, k))
        if k > 0:
            Wk = np.abs(W0[k][1:])
            t = delta @ W0[k][1:].T
            dt = (W0[k].shape[1] + 3) * U * (np.abs(delta) @ Wk.T) + ddelta @ Wk.T
            delta, ddelta = t * a * (1 - a), \
                a * (1 - a) * dt + np.abs(t) * np.abs(1 - 2 * a) * da + 4 * U * np.abs(t)
