"""Sammon: the guards against a renderer that drops long work (host waits between chunk passes,
spot checks of the setup and of the first update) and the int range of the cached source."""
import numpy as np
import pytest

from shadergpgpu.algorithms import sammon as sm
from shadergpgpu.algorithms.sammon import Sammon, SammonTuning
from shadergpgpu.algorithms.sammon import run as sammon_run
from shadergpgpu.engine.errors import ShaderGPGPUError
from shadergpgpu.engine.programs import shaders_root


def test_host_waits_bound_the_queued_work():
    assert sm.host_waits([5, 5, 5], limit=6) == [True, True, False]
    assert sm.host_waits([2, 2, 2, 2], limit=6) == [False, False, True, False]
    assert sm.host_waits([9], limit=6) == [False]            # the readback follows the last
    assert sm.host_waits([1, 1, 1], limit=6) == [False] * 3


def test_the_failing_setup_waits_after_every_row_sum_pass():
    """N = 100,000 x 200 (row sums of zeros on the H200 with ~28 s of passes queued at once):
    the setup now waits after every pass, and the tiled update after every chunk; the sizes
    that were right (60,000 x 200, 100,000 x 64, ~10 s queued) wait too, and N = 20,000
    queues its few short passes without a wait."""
    t = SammonTuning()
    assert t.sync_work == t.pass_work
    for n, d in ((100_000, 200), (60_000, 200), (100_000, 64)):
        for src, split in (("rows", 1), ("tiled", "auto")):
            chunks = sm.sweep_chunks(n, d, src, split)
            works = [sm.chunk_work(n, d, src, nb) for _, nb in chunks]
            assert len(chunks) >= 4
            assert sm.host_waits(works) == [True] * (len(chunks) - 1) + [False]
    chunks = sm.sweep_chunks(20_000, 200, "tiled")
    assert not any(sm.host_waits([sm.chunk_work(20_000, 200, "tiled", nb)
                                  for _, nb in chunks]))


def test_chains_wait_within_the_limit(dev, monkeypatch):
    """Forced small limits: the setup's row-sum chain and every update chain wait for the GPU
    (dev.finish) as host_waits says; the fit equals the one without waits."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 24)).astype(np.float32)
    Y0 = rng.normal(size=(300, 2))
    kw = dict(n_iter=3, step="source", learning_rate=50.0, init=Y0, tol=None, device=dev)
    calls = []
    real = type(dev).finish

    def finish(self):
        calls.append(1)
        real(self)

    monkeypatch.setattr(type(dev), "finish", finish)
    out = {}
    for layout, cache in (("rows", False), ("columns", False), ("rows", True)):
        for limit in (None, 8_000):
            # many chunks at N = 300
            t = SammonTuning(pass_work=4_000, sync_work=limit)
            calls.clear()
            with dev.tuned(t):
                s = Sammon(layout=layout, cache=cache, **kw).fit(X)
            assert s.tuning_ == t.for_kind(SammonTuning.kind_of(dev))
            out[layout, cache, limit] = s
            if limit is None:
                assert not calls
                continue
            n, d = X.shape
            source = sm.sweep_source(layout, s.cached_, s.tiled_)
            up = sm.host_waits([sm.chunk_work(n, d, source, nb) for _, nb in
                                sm.sweep_chunks(n, d, source, "auto", tuning=t)], limit)
            setup = [] if s.cached_ else sm.host_waits(
                [sm.chunk_work(n, d, layout, nb)
                 for _, nb in sm.sweep_chunks(n, d, layout, 1, tuning=t)], limit)
            assert s.chunks_ >= 4 and sum(up) >= 2
            assert len(calls) == sum(setup) + s.n_iter_ * sum(up)
            np.testing.assert_array_equal(s.embedding_, out[layout, cache, None].embedding_)


class _Dropped:
    """A prepared pass the renderer dropped: binds, draws nothing."""

    def bind(self, **arrays):
        return self

    def run(self, **uniforms):
        return None


@pytest.mark.parametrize("layout,cache", [("rows", False), ("columns", False), ("rows", True)])
def test_update_spot_check_refuses_a_dropped_pass(dev, monkeypatch, layout, cache):
    """One chunk of the first update's sweep dropped (its pairs missing from g and s): the fit
    raises instead of returning a wrong embedding."""
    rng = np.random.default_rng(5)
    X = rng.uniform(0, 1, (240, 16)).astype(np.float32)
    Y0 = rng.uniform(0, 1, (240, 3))
    setup = sammon_run.SammonRun._setup

    def dropping(self, *args):
        setup(self, *args)
        assert len(self.passes) >= 3
        self.passes[1] = _Dropped()

    kw = dict(n_components=3, n_iter=3, init=Y0, layout=layout, cache=cache, split=3,
              tol=None, device=dev)
    Sammon(**kw).fit(X)                                   # intact: passes the check
    monkeypatch.setattr(sammon_run.SammonRun, "_setup", dropping)
    with pytest.raises(ShaderGPGPUError, match="wrong direction or stress row"):
        Sammon(**kw).fit(X)


def test_setup_spot_check_catches_a_dropped_row_sum_pass(dev, monkeypatch):
    """The setup's row sums with their last chunk pass dropped (as the GPU's zeros): raises."""
    rng = np.random.default_rng(6)
    X = rng.uniform(0, 1, (200, 12)).astype(np.float32)
    real = dev.run
    seen = []

    def run(kernel, *args, **kwargs):
        if any(kernel is k for k in sm.ROW_SUMS.values()):
            seen.append(1)
            if len(seen) == 3:
                return 0
        return real(kernel, *args, **kwargs)

    monkeypatch.setattr(dev, "run", run)
    with pytest.raises(ShaderGPGPUError, match="wrong row sum"), \
            dev.tuned(SammonTuning, pass_work=5_000):             # several row-sum chunks
        Sammon(n_iter=2, cache=False, device=dev).fit(X)
    assert len(seen) >= 3


def test_cached_source_indices_do_not_overflow():
    """The cached source reads a pair's j from the lanes' own columns (D_flat(0, b)), not as
    i * N + j - i * N: that product passes 2^31 from N = 46,341 (cache=True fits N up to
    65,536 in a 32,768^2 texture), and a negative index drops the pair silently."""
    src = (shaders_root() / "algorithms" / "sammon" / "source_dist.glsl").read_text()
    block = src.split("#if SOURCE == SRC_CACHED", 1)[1].split("#else", 1)[0]
    code = "\n".join(line.split("//")[0] for line in block.splitlines())
    assert "D_flat(0, b)" in code and "D_COLS" not in code and "* N" not in code
    assert 46_341 ** 2 > 2 ** 31 > 46_340 ** 2
