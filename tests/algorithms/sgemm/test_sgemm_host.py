"""SGEMM on numpy operands pipelined by row blocks of C (``algorithms/sgemm/host.py``) vs
float64 numpy: blocks that do not divide M, transposes, beta with C, every variant, wrapped
arrays, a device profile, the choice of the block count, and the cleanup after a failure.

The pipelining is forced at small sizes through the device's ``SgemmTuning`` (its default
threshold is 2^33 multiply-adds). Tolerance as in test_sgemm.py: relative Frobenius
error <= 1e-5 (float32 sums of K products of data in [-1, 1]).
"""
import numpy as np
import pytest

import shadergpgpu as sg
from contextlib import ExitStack

from shadergpgpu.algorithms.sgemm import host as H
from shadergpgpu.algorithms.sgemm import (VARIANTS, SgemmTuning, default_variant,
                                          effective_variant, sgemm)

from tests.algorithms.sgemm.test_sgemm import TOL, data  # noqa: E402  (the product tests' helpers)
from tests.reference import assert_rel_close  # noqa: E402

#: pipelining from any size on, at most 3 blocks; on a GPU a block holds at least one buffer
#: object's worth of texels (asynchronous readbacks): from any size on here, so the small
#: blocks read back asynchronously too
FORCED = (SgemmTuning(host_min_work=0, host_min_block_elems=0, host_blocks=3),
          sg.EngineTuning(pbo_min_bytes=0))


def forcing(d):
    """The forced tuning on device ``d`` for a ``with`` block."""
    stack = ExitStack()
    for t in FORCED:
        stack.enter_context(d.tuned(t))
    return stack


@pytest.fixture
def forced(dev, monkeypatch):
    """Pipelining from any size on, at most ``blocks`` blocks; records each pipelined call's
    block count."""
    calls = []
    real = H.pipelined

    def spy(*args):
        calls.append(args[-1])
        return real(*args)

    monkeypatch.setattr(H, "pipelined", spy)
    with forcing(dev):
        yield calls


def test_sequence_pipelined_then_one_block(dev, rng, forced, monkeypatch):
    # odd sizes (M not a multiple of the blocks nor of the tile rows), every transpose pair,
    # beta with C, alpha alone; then the same calls with the pipelining off
    M, N, K = 53, 29, 45
    live = dev.memory()["live_arrays"]
    cases = [(False, False, None), (True, False, 0.75), (False, True, -0.5), (True, True, 0.75)]
    for off in (False, True):
        if off:
            dev.tune(SgemmTuning, host_blocks=0)
        for ta, tb, beta in cases:
            A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
            a = A.T.copy() if ta else A
            b = B.T.copy() if tb else B
            n0 = len(forced)
            if beta is None:
                got = sgemm(a, b, alpha=-1.25, trans_a=ta, trans_b=tb, device=dev)
                ref = -1.25 * (A @ B)
            else:
                got = sgemm(a, b, C, alpha=-1.25, beta=beta, trans_a=ta, trans_b=tb,
                            device=dev)
                ref = -1.25 * (A @ B) + beta * C
            assert isinstance(got, np.ndarray) and got.dtype == np.float32
            assert got.shape == (M, N) and got.flags.c_contiguous
            assert_rel_close(got, ref, tol=TOL, what=(off, ta, tb, beta))
            assert forced[n0:] == ([] if off else [3]), (off, forced)
    assert dev.memory()["live_arrays"] == live


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_and_block_count(dev, rng, forced, monkeypatch, variant):
    # N = 32: the block readbacks land in the result as they are; N = 29: through the repacking
    v = effective_variant(variant, dev)
    for blocks in (2, 5):
        dev.tune(SgemmTuning, host_blocks=blocks)
        for M, N, K in [(67, 32, 40), (41, 29, 9)]:
            A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
            n0 = len(forced)
            got = sgemm(A, B, C, alpha=0.5, beta=2.0, variant=variant, device=dev)
            assert_rel_close(got, 0.5 * (A @ B) + 2.0 * C, tol=TOL, what=(variant, blocks, M, N, K))
            assert forced[n0:] == [min(blocks, -(-M // v.tile_rows))]


def test_blocks_equal_the_one_block_result(dev, rng, forced, monkeypatch):
    # every element is the same float32 sum in either path (the blocks only cut the rows)
    A, B = data(rng, 70, 33).astype(np.float32), data(rng, 33, 45).astype(np.float32)
    piped = sgemm(A, B, device=dev)
    dev.tune(SgemmTuning, host_blocks=1)
    whole = sgemm(A, B, device=dev)
    assert len(forced) == 1
    np.testing.assert_array_equal(piped, whole)
    assert_rel_close(piped, A.astype(np.float64) @ B, tol=TOL)


def test_what_is_not_pipelined(dev, rng, forced):
    M, N, K = 30, 20, 12
    A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
    # alpha = 0: no product (and A, B not read)
    got = sgemm(A, B, C, alpha=0.0, beta=1.5, device=dev)
    assert_rel_close(got, 1.5 * C, tol=TOL)
    # any device operand: a DeviceArray result, no readback to pipeline
    b = dev.array(B)
    out = sgemm(A, b, C, beta=-1.0, device=dev)
    assert isinstance(out, sg.DeviceArray)
    assert_rel_close(out.get(), A @ B - C, tol=TOL)
    out.release()
    b.release()
    # one tile of rows cannot be cut
    A1 = data(rng, 1, K)
    assert_rel_close(sgemm(A1, B, device=dev), A1 @ B, tol=TOL)
    assert forced == []


def test_wrapped_arrays(small_dev, rng, forced):
    # textures of 16 texels a side: at N = 70 (18 texels a row) every block's result wraps
    with forcing(small_dev):
        for M, N, K in [(14, 70, 8), (20, 30, 27)]:
            A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
            got = sgemm(A, B, C, alpha=1.0, beta=-2.0, device=small_dev)
            assert_rel_close(got, A @ B - 2.0 * C, tol=TOL)
            got = sgemm(A.T.copy(), B, trans_a=True, device=small_dev)
            assert_rel_close(got, A @ B, tol=TOL)
    assert small_dev.layout((8, 70)).wrapped
    # blocks of whole tiles of rows: the device's own variant decides how many (3 at most)
    v = effective_variant(default_variant(small_dev), small_dev)
    want = []
    for M in (14, 20):
        nb = min(3, -(-M // v.tile_rows))
        want += [nb, nb] if nb > 1 else []
    assert want and forced == want


@pytest.mark.parametrize("profile", ["webgl2", "geforce-7800gtx"])
def test_under_profiles(rng, forced, profile):
    # no float blending / no buffer textures / no uniform blocks: the variant adapts per block
    d = sg.Device(profile=profile, tuning=FORCED)
    try:
        M, N, K = 38, 21, 70
        A, B, C = data(rng, M, K), data(rng, N, K), data(rng, M, N)
        got = sgemm(A, B, C, alpha=2.0, beta=0.5, trans_b=True, device=d)
        assert_rel_close(got, 2.0 * (A @ B.T) + 0.5 * C, tol=TOL)
        assert forced == [3]
    finally:
        d.release()


def test_failure_mid_pipeline_releases_every_block(dev, rng, forced, monkeypatch):
    real = H.draw_product
    seen = []

    def failing(*args, **kw):
        seen.append(1)
        if len(seen) == 2:
            raise RuntimeError("injected")
        return real(*args, **kw)

    monkeypatch.setattr(H, "draw_product", failing)
    live = dev.memory()["live_arrays"]
    with pytest.raises(RuntimeError, match="injected"):
        sgemm(data(rng, 40, 12), data(rng, 12, 16), device=dev)
    assert dev.memory()["live_arrays"] == live
    monkeypatch.setattr(H, "draw_product", real)
    A, B = data(rng, 40, 12), data(rng, 12, 16)
    assert_rel_close(sgemm(A, B, device=dev), A @ B, tol=TOL)


def test_row_blocks_cover_the_rows():
    for name in ("tile8x4", "tile16x2-ubo", "simple"):
        v = VARIANTS[name]
        for M in (1, 7, 16, 17, 100, 4096, 4099):
            for nb in (1, 2, 3, 4, 8):
                blocks = H.row_blocks(v, M, nb)
                assert blocks[0][0] == 0 and blocks[-1][1] == M and len(blocks) <= nb
                assert all(b[1] == c[0] for b, c in zip(blocks, blocks[1:]))
                assert all((r1 - r0) % v.tile_rows == 0 and r1 > r0 for r0, r1 in blocks[:-1])
                assert blocks[-1][1] > blocks[-1][0]


def test_block_count_policy():
    # the defaults: small products one block; each block at least host_min_block_elems
    # elements and, on a GPU, pbo_min_bytes of texels; at most host_blocks
    from types import SimpleNamespace
    from shadergpgpu.engine.layout import layout_for
    lay = lambda shape: layout_for(shape, True, "row", 1 << 15)   # noqa: E731
    gpu = SimpleNamespace(is_software=False, tracer=None, layout=lay,
                          tuning=lambda cls: cls.defaults("hardware"))
    cpu = SimpleNamespace(is_software=True, tracer=None, layout=lay,
                          tuning=lambda cls: cls.defaults("software"))
    t, pbo_bytes = SgemmTuning(), sg.EngineTuning().pbo_min_bytes
    v = VARIANTS["tile16x2-ubo"]
    assert H.host_blocks(gpu, v, 1024, 1024, 1024) == 1        # below host_min_work
    for d in (gpu, cpu):
        for M, N, K in [(4096, 4096, 4096), (16384, 16384, 16384), (2048, 4096, 1 << 20),
                        (1 << 20, 8, 1024), (4097, 4095, 4096)]:
            nb = H.host_blocks(d, v, M, N, K)
            assert 1 <= nb <= t.host_blocks
            if nb > 1:
                rows = min(r1 - r0 for r0, r1 in H.row_blocks(v, M, nb)[:-1])
                assert rows * N >= t.host_min_block_elems
                if d is gpu:
                    assert rows * -(-N // 4) * 16 >= pbo_bytes
                # one block more would break a rule
                more = M * N // (nb + 1) < t.host_min_block_elems or nb == t.host_blocks or \
                    (d is gpu and M * -(-N // 4) * 16 // (nb + 1) < pbo_bytes)
                assert more, (M, N, K, nb)
    assert H.host_blocks(gpu, v, 4096, 4096, 4096) == 2
    assert H.host_blocks(gpu, v, 16384, 16384, 16384) == 8


def test_counter_records_b_uploaded_once_and_every_phase(dev, rng, forced):
    # one api:sgemm event; B uploaded once (the bytes uploaded are exactly A's, B's and C's:
    # sizes whose float32 rows are their texels); an epilogue per block
    M, N, K = 52, 28, 44
    A, B, C = (data(rng, *s).astype(np.float32) for s in ((M, K), (K, N), (M, N)))
    dev.counter.reset()
    got = sgemm(A, B, C, beta=1.0, variant="tile8x4", device=dev)
    snap = dev.counter.snapshot(host=True)
    assert_rel_close(got, A.astype(np.float64) @ B + C, tol=TOL)
    assert forced == [3]

    def total(key, kind):
        return sum(r.get(key, {}).get(kind, 0) for r in snap.values())
    assert total("events", "api:sgemm") == 1
    assert total("event_bytes", "upload") == A.nbytes + B.nbytes + C.nbytes
    assert total("events", "readback") == 3
    assert snap["sgemm/combine"]["passes"] == 3
    assert snap["sgemm/product"]["passes"] >= 3 and snap["sgemm/stage"]["passes"] >= 1


def test_guards_unchanged(dev, small_dev, rng, forced):
    A, B = data(rng, 30, 12), data(rng, 12, 20)
    with pytest.raises(ValueError, match="C must have shape"):
        sgemm(A, B, data(rng, 20, 30), beta=1.0, device=dev)
    with pytest.raises(ValueError, match="inner dimensions"):
        sgemm(A, B.T.copy(), device=dev)
    with pytest.raises(ValueError, match="too large for this device"):
        sgemm(A, data(rng, 12, 200), device=small_dev)    # B: 600 texels, from the shapes
    assert forced == []
