"""shadergpgpu.distributed: one device per Dask worker process (llvmpipe here).

One cluster of 2 worker processes for the module (devices capped at 64 texels so that every
matrix streams through by blocks), one of 1 worker; worker start costs a few seconds each.
"""
import json
import os
import pickle
import signal
import sys

import numpy as np
import pytest

from tests.reference import assert_close, assert_within

dd = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
import cloudpickle  # noqa: E402 - a dependency of distributed

import shadergpgpu as sg  # noqa: E402
from shadergpgpu import distributed as sgd  # noqa: E402

# the step functions below run on the workers, which cannot import this test module
cloudpickle.register_pickle_by_value(sys.modules[__name__])

CAP = 64


@pytest.fixture(scope="module")
def client():
    c = sgd.local_cluster(2, device_options={"limits": sg.Limits(max_texture_size=CAP)})
    yield c
    c.close()
    c.cluster.close()


def _reference(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


def _close(got, a, b):
    """float32 products summed over K: error bounded by K * eps * (|a| @ |b|)."""
    bound = a.shape[1] * np.finfo(np.float32).eps * (np.abs(a).astype(np.float64)
                                                     @ np.abs(b).astype(np.float64))
    assert got.dtype == np.float32
    assert_within(got, _reference(a, b), bound + 1e-30)


# ---- devices per worker ----------------------------------------------------------------------
def test_one_device_per_worker_process(client):
    info = sgd.device_info(client)
    assert len(info) == 2
    assert len({i["pid"] for i in info}) == 2                  # two processes
    assert all(i["pid"] != os.getpid() for i in info)          # none in the client
    assert all(i["max_texture_size"] == CAP for i in info)     # the plugin's Device options
    assert {i["worker"] for i in info} == set(client.scheduler_info(n_workers=-1)["workers"])
    assert all(i["renderer"] for i in info)


def test_devices_and_shards_are_not_pickled(client):
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(sg.Device())
    sh = sgd.Shards(client, np.ones((4, 2)), _setup_rows)
    try:
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(sh)
    finally:
        sh.close()


def test_refused_worker_without_float32_rendering(tmp_path, monkeypatch):
    prof = tmp_path / "nofloat.json"
    prof.write_text(json.dumps({"name": "nofloat", "limits": {"float32_render": False}}))
    monkeypatch.setenv("SHADERGPGPU_PROFILE", str(prof))
    with pytest.raises(sg.CapabilityError, match="float32"):
        sg.Device()
    monkeypatch.delenv("SHADERGPGPU_PROFILE")
    # the same profile in a worker's environment: the worker is refused at start with the
    # device's own error
    with pytest.raises(sg.CapabilityError, match="no float32 render targets"):
        sgd.local_cluster(1, env={"SHADERGPGPU_PROFILE": str(prof)})
    # a cluster of the user's (no start check): register() raises the workers' error
    c = sgd.local_cluster(1, env={"SHADERGPGPU_PROFILE": str(prof)}, check=False)
    try:
        with pytest.raises(sg.CapabilityError, match="no float32 render targets"):
            sgd.register(c)
    finally:
        c.close()
        c.cluster.close()


# ---- matmul -----------------------------------------------------------------------------------
def test_plan_blocks():
    assert sgd.plan_blocks(100, 100, 100, 1, 16384) == (100, 100, 100)
    bm, bn, bk = sgd.plan_blocks(16384, 16384, 16384, 2, 32768)
    assert bk == 16384 and -(-16384 // bm) * -(-16384 // bn) >= 2
    assert bm * bk <= sgd.MAX_BLOCK_ELEMENTS and bk * bn <= sgd.MAX_BLOCK_ELEMENTS
    bm, bn, bk = sgd.plan_blocks(1000, 900, 5000, 2, 64)
    assert max(bm, bn, bk) <= 64
    bm, bn, bk = sgd.plan_blocks(1 << 16, 1 << 16, 1 << 16, 4, 1 << 15, max_elements=1 << 24)
    assert max(bm * bk, bk * bn, bm * bn) <= 1 << 24


def test_plan_blocks_gives_large_products_several_blocks_per_worker():
    # 16,384^2 on 2 workers: 4 blocks each, none under MIN_SPLIT_ELEMENTS
    bm, bn, bk = sgd.plan_blocks(16384, 16384, 16384, 2, 32768)
    n_blocks = -(-16384 // bm) * -(-16384 // bn)
    assert n_blocks == sgd.block_matmul.BLOCKS_PER_WORKER * 2
    assert bm * bn >= sgd.block_matmul.MIN_SPLIT_ELEMENTS and bk == 16384
    # a small product is not cut below MIN_SPLIT_ELEMENTS per block (one block per worker)
    bm, bn, _ = sgd.plan_blocks(4096, 4096, 4096, 2, 32768)
    assert -(-4096 // bm) * -(-4096 // bn) == 2
    # and with one worker a product of 2 minimum blocks is cut in 2, not more
    bm, bn, _ = sgd.plan_blocks(8192, 4096, 64, 1, 32768)
    assert (bm, bn) == (4096, 4096)
    # the blocks as matmul cuts them (evenly) keep MIN_SPLIT_ELEMENTS, not only the nominal
    # block: 8,535 x 8,213 on 2 workers stays at 2 x 2 blocks of ~4,268 x 4,107
    bm, bn, _ = sgd.plan_blocks(8535, 8213, 1000, 2, 8192)
    rows, cols = sgd.block_matmul._even(8535, bm), sgd.block_matmul._even(8213, bn)
    assert len(rows) * len(cols) == 4
    assert min(rows) * min(cols) >= sgd.block_matmul.MIN_SPLIT_ELEMENTS


def test_matmul_numpy_streams_blocks_past_the_texture_limit(client):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((150, 130))
    b = rng.standard_normal((130, 100))       # every side above the 64-texel devices
    got = sgd.matmul(a, b, client=client)
    assert isinstance(got, np.ndarray) and got.shape == (150, 100)
    _close(got, a.astype(np.float32), b.astype(np.float32))


def test_matmul_dask_arrays(client):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((97, 203)).astype(np.float32)
    b = rng.uniform(-1, 1, (203, 45)).astype(np.float32)
    A = da.from_array(a, chunks=(40, 90))        # 90 > 64: cut to the device limit
    B = da.from_array(b, chunks=(203, 45))
    C = sgd.matmul(A, B, client=client)
    assert isinstance(C, da.Array) and C.shape == (97, 45) and C.dtype == np.float32
    _close(C.compute(), a, b)
    # mixed: dask @ numpy
    _close(sgd.matmul(A, b, client=client).compute(), a, b)


def test_matmul_checks_shapes(client):
    with pytest.raises(ValueError, match="inner dimensions"):
        sgd.matmul(np.ones((3, 4)), np.ones((5, 2)), client=client)
    with pytest.raises(ValueError, match="2-D"):
        sgd.matmul(np.ones(3), np.ones((3, 2)), client=client)


# ---- sharded iterative computations and faults ------------------------------------------------
def _setup_rows(dev, shard):
    return {"A": dev.array(shard["X"]), "start": shard["start"]}


def _matvec(dev, state, x, it=0, kill_at=-1, mark=None):
    """One power-iteration step on this worker's rows: A_s @ x on the device. With ``mark``
    set, the first worker to run shard 0 at iteration ``kill_at`` kills its own process."""
    from shadergpgpu.algorithms.sgemm import sgemm
    if it == kill_at and state["start"] == 0 and mark and _first_to_mark(mark):
        os.kill(os.getpid(), signal.SIGKILL)
    y = sgemm(state["A"], np.asarray(x, np.float32).reshape(-1, 1), device=dev)
    try:
        return y.get().ravel()
    finally:
        y.release()


def _power_iteration(client, A, n_iter, **kw):
    with sgd.Shards(client, A, _setup_rows) as sh:
        x = np.ones(A.shape[1], np.float32)
        for it in range(n_iter):
            y = np.concatenate(sh.map(_matvec, x, it, **kw))
            x = (y / np.linalg.norm(y)).astype(np.float32)
        return x, sh.recoveries


def test_shards_power_iteration_matches_numpy(client):
    rng = np.random.default_rng(2)
    Q, _ = np.linalg.qr(rng.standard_normal((90, 90)))
    A = (Q * np.linspace(1, 4, 90)) @ Q.T          # eigenvalue gap 4 : 3.97
    x, rec = _power_iteration(client, A.astype(np.float32), 15)
    ref = np.ones(90)
    for _ in range(15):
        ref = A @ ref
        ref /= np.linalg.norm(ref)
    assert rec == 0
    assert_close(x, ref, rtol=1e-7, atol=2e-5)


def test_killed_worker_recovers_same_answer(client, tmp_path):
    rng = np.random.default_rng(3)
    A = rng.standard_normal((120, 120)).astype(np.float32)
    A = A + A.T
    x0, rec0 = _power_iteration(client, A, 12)
    mark = str(tmp_path / "killed")
    x1, rec1 = _power_iteration(client, A, 12, kill_at=4, mark=mark)
    assert os.path.exists(mark)                  # a worker process did die mid-step
    assert rec0 == 0 and rec1 >= 1
    assert_close(x1, x0, rtol=0, atol=1e-6)
    client.wait_for_workers(2, timeout=60)       # the nanny restarts it for the next tests


def test_matmul_survives_a_killed_worker(client, tmp_path):
    """Dask recomputes the lost blocks from the graph (the client's data)."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((130, 70)).astype(np.float32)
    b = rng.standard_normal((70, 130)).astype(np.float32)
    mark = str(tmp_path / "killed")
    A = da.from_array(a, chunks=(64, 70)).map_blocks(_kill_once, mark, dtype=np.float32)
    got = sgd.matmul(A, b, client=client).compute()
    assert os.path.exists(mark)
    _close(got, a, b)
    client.wait_for_workers(2, timeout=60)


def _kill_once(block, mark, block_info=None):
    if block_info and block_info[0]["chunk-location"][0] == 1 and _first_to_mark(mark):
        os.kill(os.getpid(), signal.SIGKILL)
    return block


def test_one_worker_then_none_left():
    c = sgd.local_cluster(1)
    try:
        info = sgd.device_info(c)
        assert len(info) == 1 and info[0]["max_texture_size"] > CAP
        rng = np.random.default_rng(5)
        a, b = rng.standard_normal((70, 50)), rng.standard_normal((50, 30))
        _close(sgd.matmul(a, b, client=c), a.astype(np.float32), b.astype(np.float32))
        sh = sgd.Shards(c, a, _setup_rows, wait_workers=0.5)
        x = np.ones(50, np.float32)
        assert_close(np.concatenate(sh.map(_matvec, x)), a @ x, rtol=1e-5, atol=1e-5)
        # every worker gone (its nanny closed, so nothing restarts it): a clear error
        c.cluster.scale(0)
        c.sync(c.cluster._correct_state)
        with pytest.raises(sgd.NoWorkersError, match="no Dask worker left"):
            sh.map(_matvec, x)
    finally:
        c.close()
        c.cluster.close()


# ---- data-parallel backpropagation and split Sammon (phase 2) --------------------------------
@pytest.fixture(scope="module")
def ref_dev():
    """A single device like the workers' (same texture cap): the single-device references."""
    d = sg.Device(limits=sg.Limits(max_texture_size=CAP))
    yield d
    d.release()


def _rel(a, b):
    return max(float(np.abs(x - y).max() / np.abs(y).max()) for x, y in zip(a, b))


# the paper's network (the schedule a data-parallel fit trains)
PAPER = dict(schedule="paper", solver="sgd", activation="logistic", momentum=0.0, alpha=0.0,
             n_iter_no_change=np.inf, random_state=0)


def _layers(est):
    return [np.vstack([b[None], c]) for c, b in zip(est.coefs_, est.intercepts_)]


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mlp_classifier_data_parallel_equals_single_device(client, ref_dev):
    from shadergpgpu.algorithms.backprop import MLPClassifier
    rng = np.random.default_rng(6)
    X = rng.standard_normal((203, 5))
    y = np.where(X[:, 0] * X[:, 1] > 0, "a", "b")
    kw = dict(PAPER, hidden_layer_sizes=(6,), max_iter=25, learning_rate_init=0.05,
              batch_size=203)
    ref = MLPClassifier(device=ref_dev, **kw).fit(X, y)
    est = MLPClassifier(**kw).fit(X, y, client=client)
    assert est.n_shards_ == 2
    assert _rel(_layers(est), _layers(ref)) <= 1e-5       # full batch: the same weights
    assert_close(est.loss_curve_, ref.loss_curve_, rtol=1e-5, atol=0)
    assert est.n_iter_ == ref.n_iter_ == 25
    assert list(est.classes_) == ["a", "b"]
    np.testing.assert_array_equal(est.predict(X[:20]), ref.predict(X[:20]))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mlp_regressor_data_parallel(client, ref_dev):
    from shadergpgpu.algorithms.backprop import MLP
    rng = np.random.default_rng(7)
    X = rng.uniform(-1, 1, (150, 3))
    y = (np.sin(2 * X[:, 0]) + X[:, 1] * X[:, 2] + 2) / 4
    kw = dict(PAPER, hidden_layer_sizes=(5, 4), max_iter=20, learning_rate_init=0.02,
              batch_size=150)
    ref = MLP(device=ref_dev, **kw).fit(X, y)
    est = MLP(**kw).fit(X, y, client=client)
    assert _rel(_layers(est), _layers(ref)) <= 1e-5
    with pytest.raises(ValueError, match="client=.*schedule='paper'"):
        MLP(hidden_layer_sizes=(4,)).fit(X, y, client=client)


@pytest.mark.parametrize("step,layout", [("source", "rows"), ("adaptive", "rows"),
                                         ("adaptive", "columns")])
def test_sammon_split_rows_equals_single_device(client, ref_dev, step, layout):
    from shadergpgpu.algorithms.sammon import Sammon
    rng = np.random.default_rng(8)
    X = np.vstack([rng.standard_normal((150, 6)), rng.standard_normal((151, 6)) + 3.0])
    kw = dict(n_iter=20, step=step, layout=layout, cache=False, tol=None)
    ref = Sammon(device=ref_dev, **kw).fit(X)
    est = Sammon(**kw)
    emb = est.fit_transform(X, client=client)
    assert est.n_shards_ == 2 and emb is est.embedding_
    assert est.n_iter_ == ref.n_iter_ and est.n_rejected_ == ref.n_rejected_
    # each point's update is the single-device float32 computation; only sum dn (float64 sum
    # of the workers' float32 sums), the client's host step (float32 saxpy) and stress sums
    # (float64) may differ in the last bits
    scale = np.abs(ref.embedding_).max()
    assert_close(est.embedding_, ref.embedding_, rtol=0, atol=1e-5 * scale)
    assert_close(est.stress_history_, ref.stress_history_, rtol=1e-5, atol=0)
    assert est.split_ == ref.split_ and est.tiled_ == ref.tiled_


def test_sammon_cache_true_refused_with_client(client):
    from shadergpgpu.algorithms.sammon import Sammon
    with pytest.raises(ValueError, match="cache=True"):
        Sammon(cache=True).fit(np.random.default_rng(0).standard_normal((10, 3)),
                               client=client)


class _KillNth(dd.WorkerPlugin):
    """Test plugin: the worker that starts the ``nth`` step task of a Shards computation
    kills its own process (once: a marker file)."""

    name = "test-kill-nth"

    def __init__(self, nth, mark):
        self.nth, self.mark, self.seen = nth, mark, 0

    def transition(self, key, start, finish, **kw):
        if finish == "executing" and str(key).startswith("shards-"):
            self.seen += 1
            if self.seen >= self.nth and _first_to_mark(self.mark):
                os.kill(os.getpid(), signal.SIGKILL)


def _first_to_mark(path) -> bool:
    """Create ``path``; True for the one process that created it (the others see it)."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        return True
    except FileExistsError:
        return False


@pytest.fixture
def kill_nth(client, tmp_path):
    mark = str(tmp_path / "killed")
    armed = []

    def arm(nth):
        client.register_plugin(_KillNth(nth, mark))
        armed.append(True)
        return mark
    yield arm
    if armed:
        client.unregister_worker_plugin(_KillNth.name)
        client.wait_for_workers(2, timeout=60)


def test_sammon_survives_a_killed_worker(client, ref_dev, kill_nth):
    from shadergpgpu.algorithms.sammon import Sammon
    rng = np.random.default_rng(9)
    X = rng.standard_normal((240, 5))
    kw = dict(n_iter=12, step="source", cache=False, tol=None)
    ref = Sammon(device=ref_dev, **kw).fit(X)
    mark = kill_nth(4)                       # the 4th step task on a worker: mid-fit
    est = Sammon(**kw).fit(X, client=client)
    assert os.path.exists(mark)
    assert_close(est.embedding_, ref.embedding_, rtol=0, atol=1e-5 * np.abs(ref.embedding_).max())
    assert_close(est.stress_history_, ref.stress_history_, rtol=1e-5, atol=0)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_mlp_survives_a_killed_worker(client, ref_dev, kill_nth):
    from shadergpgpu.algorithms.backprop import MLPClassifier
    rng = np.random.default_rng(10)
    X = rng.standard_normal((160, 4))
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    kw = dict(PAPER, hidden_layer_sizes=(5,), max_iter=15, learning_rate_init=0.05,
              batch_size=160)
    ref = MLPClassifier(device=ref_dev, **kw).fit(X, y)
    mark = kill_nth(6)
    est = MLPClassifier(**kw).fit(X, y, client=client)
    assert os.path.exists(mark)
    assert _rel(_layers(est), _layers(ref)) <= 1e-5


def test_sammon_one_shard_is_the_single_device_fit(client, ref_dev):
    """One shard: the same passes, sums and step as one device, bit for bit."""
    from shadergpgpu.algorithms.sammon import Sammon, normalized
    from shadergpgpu.distributed import fit_sammon
    X = np.random.default_rng(11).standard_normal((120, 4))
    kw = dict(n_iter=8, step="source", cache=False, tol=None)
    ref = Sammon(device=ref_dev, **kw).fit(X)
    # the estimator fits X / scale_ (scale invariance) and scales back; the driver called
    # directly on that data, with the learning rate in its units, must give the same bits
    Xn, sc = normalized(X)
    assert sc == ref.scale_
    est = fit_sammon(Sammon(**dict(kw, learning_rate=0.5 / sc / sc)), Xn, client=client,
                     n_shards=1)
    np.testing.assert_array_equal((est.embedding_.astype(np.float64) * sc).astype(np.float32),
                                  ref.embedding_)
    assert est.mu_ * sc == ref.mu_
