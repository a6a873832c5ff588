"""SGEMM vs float64 numpy: variants, shapes, transposes, alpha/beta, chaining, wrapping, errors.

Tolerance: relative Frobenius error <= 1e-5 (float32 accumulation of data centred on 0 in
[-1, 1]: the error grows like sqrt(K) * 2^-24, about 4e-6 at K = 4096 in the worst case).
"""
import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.analysis import plans
from shadergpgpu.engine.glraw import BufferArray
from shadergpgpu.engine.layout import BufferLayout
from shadergpgpu.engine.limits import ceil_div
from shadergpgpu.algorithms import sgemm as S
from shadergpgpu.algorithms.sgemm import ubo as SU
from shadergpgpu.algorithms.sgemm import (DEFAULT_VARIANT, VARIANTS, auto_split, default_variant,
                                          min_split, sgemm)
from shadergpgpu.analysis.plans.sgemm import work
from shadergpgpu.analysis.work_recorder import recording

from tests.reference import assert_close, assert_rel_close

TOL = 1e-5


def data(rng, *shape):
    # centred, never zero
    x = rng.uniform(-1, 1, shape)
    x[np.abs(x) < 1e-3] = 0.5
    return x


SHAPES = [(1, 1, 1), (1, 7, 1), (5, 1, 3), (3, 2, 1), (7, 13, 5), (17, 11, 31), (9, 33, 8),
          (64, 64, 64), (37, 61, 101)]


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_shapes_alpha_beta(dev, rng, variant):
    for M, N, K in SHAPES:
        A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
        got = sgemm(A, B, C, alpha=-1.25, beta=0.75, variant=variant, device=dev)
        assert isinstance(got, np.ndarray) and got.shape == (M, N) and got.dtype == np.float32
        ref = -1.25 * (A @ B) + 0.75 * C
        assert_rel_close(got, ref, tol=TOL, what=(variant, M, N, K))


@pytest.mark.parametrize("ta,tb", [(False, True), (True, False), (True, True)])
def test_transposes(dev, rng, ta, tb):
    M, N, K = 19, 23, 45
    A, B = data(rng, M, K), data(rng, K, N)
    a = A.T.copy() if ta else A
    b = B.T.copy() if tb else B
    for variant in VARIANTS:
        got = sgemm(a, b, trans_a=ta, trans_b=tb, variant=variant, device=dev)
        assert_rel_close(got, A @ B, tol=TOL)
        # the same through device arrays of every layout (the staging pass does op())
        for packed, order in [(True, "row"), (True, "col"), (False, "row"), (False, "col")]:
            da = dev.array(a, packed=packed, order=order)
            db = dev.array(b, packed=packed, order=order)
            out = sgemm(da, db, trans_a=ta, trans_b=tb, variant=variant)
            assert isinstance(out, sg.DeviceArray) and out.shape == (M, N)
            assert_rel_close(out.get(), A @ B, tol=TOL, what=(variant, packed, order))
            for x in (da, db, out):
                x.release()


def test_k4096_accuracy_and_every_element_written(dev, rng):
    M, N, K = 24, 20, 4096
    A, B = data(rng, M, K), data(rng, K, N)
    ref = A @ B
    for variant in VARIANTS:
        for split in (None, 3):
            # poison the pool: the result and the partial-product textures come out of it
            poison = [dev.empty((M, N)) for _ in range(2)] + \
                     [dev.empty((ceil_div(M, r), N)) for r in (4, 8) for _ in range(r)]
            for p in poison:
                dev.fill(p, float("nan"))
                p.release()
            out = sgemm(dev.array(A), B, variant=variant, split=split)
            got = out.get()
            assert np.isfinite(got).all(), variant
            assert_rel_close(got, ref, tol=TOL, what=(variant, split))
            # the packed row's padding lanes are exact zeros
            raw = np.frombuffer(out.texture.read(), np.float32).reshape(-1, 4)
            assert np.all(raw.reshape(M, -1)[:, N:] == 0)
            out.release()


def test_chaining_on_device_without_readback(dev, rng):
    A, B, D = data(rng, 30, 20), data(rng, 20, 25), data(rng, 25, 9)
    a, b, d = dev.array(A), dev.array(B), dev.array(D)
    ab = sgemm(a, b)
    abd = sgemm(ab, d, alpha=2.0)
    assert isinstance(abd, sg.DeviceArray)
    assert_rel_close(abd.get(), 2.0 * (A @ B) @ D, tol=TOL)
    # beta * C with C on the device, alpha = 0 (A, B not read: NaN there is ignored)
    c = dev.array(data(rng, 30, 9))
    nan = np.full((30, 20), np.nan)
    got = sgemm(nan, B @ D, C=c, alpha=0.0, beta=-3.0)
    assert_close(got.get(), -3.0 * c.get(), rtol=1e-6, atol=0.0)
    # beta = 0: C is not read (NaN there is ignored), as in BLAS
    got = sgemm(A, B, C=np.full((30, 25), np.nan), beta=0.0, device=dev)
    assert_rel_close(got, A @ B, tol=TOL)


def test_wrapped_arrays(small_dev, rng):
    # max_texture_size=16 (256 texels at most): A, B, C and the staged operands all wrap
    M, N, K = 20, 30, 27
    A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
    for variant in VARIANTS:
        got = sgemm(A, B, C, alpha=0.5, beta=2.0, variant=variant, device=small_dev)
        assert_rel_close(got, 0.5 * (A @ B) + 2.0 * C, tol=TOL, what=variant)
        da, db = small_dev.array(A, order="col"), small_dev.array(B, order="col")
        assert da.layout.wrapped and db.layout.wrapped
        out = sgemm(da, db, C=small_dev.array(C, order="col"), beta=1.0, variant=variant)
        assert out.layout.wrapped
        assert_rel_close(out.get(), A @ B + C, tol=TOL, what=variant)


@pytest.mark.buffer_textures('the buffer layout')
def test_buffer_layout_accessor_matches_texture_layout(dev, rng):
    lay = BufferLayout(5, 11)
    x = data(rng, 5, 11).astype(np.float32)
    assert lay.index_of(3, 9) == (3 * 3 + 2, 1)
    raw = lay.pack_array(x)
    t, comp = lay.index_of(4, 10)
    assert raw[t, comp] == x[4, 10] and raw[t, 3] == 0.0
    # a device texture of texture_layout(), copied into a buffer, reads back as the matrix
    tex = dev.array(x)
    buf = BufferArray.from_texture(dev, lay, tex)
    out = dev.empty((5, 11))
    dev.run(S.STAGE, out, inputs={"X": buf})
    np.testing.assert_array_equal(out.get(), x)
    # transposed and zero-padded: every lane past op(X)'s edge is an exact 0
    out2 = dev.empty((13, 7))
    dev.run(S.STAGE, out2, inputs={"X": buf}, defines={"TRANS": 1})
    want = np.zeros((13, 7), np.float32)
    want[:11, :5] = x.T
    np.testing.assert_array_equal(out2.get(), want)
    out2.release()
    buf.release()


def test_staging_every_input_layout(dev, small_dev, rng):
    # device-array operands of every layout (packed or not, row or column order, wrapped, a
    # texture buffer), transposed or not: the packed row-major ones are staged texel by
    # texel (TEXELS 1), the others lane by lane; padding lanes (NaN here) never leak
    x = data(rng, 7, 10).astype(np.float32)
    for d in (dev, small_dev):
        for kw in ({}, {"order": "col"}, {"packed": False}, {"packed": False, "order": "col"}):
            a = d.array(x, **kw)
            for trans, shape in ((False, (9, 12)), (True, (13, 8))):
                want = np.zeros(shape, np.float32)
                op = x.T if trans else x
                want[:op.shape[0], :op.shape[1]] = op
                out = d.empty(shape)
                texels = S.staging.staged_texels(a, trans)
                assert texels == int(not trans and kw.get("packed", True)
                                     and kw.get("order", "row") == "row")
                with recording(d) as rec:       # the analysis counts the fetches
                    d.counter.reset()
                    d.run(S.STAGE, out, inputs={"X": a},
                          defines={"TRANS": int(trans), "TEXELS": texels})
                np.testing.assert_array_equal(out.get(), want)
                c = rec.snapshot()["default"]
                assert c["fetches"] == c["fragments"] * (1 if texels else 4)
                out.release()
            a.release()
    # a packed row-major input whose padding lanes hold NaN: masked to exact zeros
    raw = np.full((7, 12), np.nan, np.float32)
    raw[:, :10] = x
    view = dev.empty((7, 10))                         # 7 x 3 texels, 2 padding lanes a row
    view.texture.write(raw.tobytes())
    out = dev.empty((8, 16))
    dev.run(S.STAGE, out, inputs={"X": view}, defines={"TEXELS": 1})
    want = np.zeros((8, 16), np.float32)
    want[:7, :10] = x
    np.testing.assert_array_equal(out.get(), want)
    # every variant on device arrays of each layout, A and B transposed or not
    M, N, K = 19, 23, 37
    A, B = data(rng, M, K), data(rng, K, N)
    for variant in VARIANTS:
        for kw in ({}, {"order": "col"}, {"packed": False}):
            for ta, tb in ((False, False), (True, True)):
                a = dev.array(A.T.copy() if ta else A, **kw)
                b = dev.array(B.T.copy() if tb else B, **kw)
                got = sgemm(a, b, trans_a=ta, trans_b=tb, variant=variant)
                assert_rel_close(got.get(), A @ B, tol=TOL, what=(variant, kw, ta, tb))
                for z in (a, b, got):
                    z.release()


def test_errors(dev, rng):
    A, B = data(rng, 4, 3), data(rng, 3, 5)
    with pytest.raises(ValueError, match="inner dimensions"):
        sgemm(A, data(rng, 4, 5), device=dev)
    with pytest.raises(ValueError, match="C must have shape"):
        sgemm(A, B, C=np.zeros((5, 4)), beta=1.0, device=dev)
    with pytest.raises(ValueError, match="alpha"):
        sgemm(A, B, alpha=float("nan"), device=dev)
    with pytest.raises(ValueError, match="beta"):
        sgemm(A, B, beta=float("inf"), device=dev)
    with pytest.raises(TypeError, match="alpha"):
        sgemm(A, B, alpha=1j, device=dev)
    with pytest.raises(TypeError, match="A"):
        sgemm(A.astype(np.complex64), B, device=dev)
    with pytest.raises(TypeError, match="B"):
        sgemm(A, np.array([[object()]] * 3), device=dev)
    with pytest.raises(ValueError, match="2-D"):
        sgemm(np.ones(3), B, device=dev)
    # the default ("auto") works and picks a listed variant
    assert_rel_close(sgemm(A, B, device=dev), A @ B, tol=TOL)
    with pytest.raises(ValueError, match="variant"):
        sgemm(A, B, variant="nope", device=dev)
    with pytest.raises(TypeError, match="trans_a"):
        sgemm(A, B, trans_a="yes", device=dev)
    for bad in (True, 0, -1, 2.0):
        with pytest.raises((TypeError, ValueError), match="split"):
            sgemm(A, B, split=bad, device=dev)


def _product_passes(dev, v, split):
    """Passes of a K loop cut in ``split`` slices: the later slices accumulate (by blending, or
    by ping-pong passes without float blending: ``Device.accumulate_passes``)."""
    outs = 1 if v.tile_rows == 1 else v.tile_rows
    return 1 + (split - 1) * dev.accumulate_passes(outs, "add")


def test_large_k_stays_within_loop_budget(dev, rng):
    # llvmpipe silently stops a fragment's loops after 65,535 iterations: the engine cuts the K
    # loop of every variant into slices within the device's cap (also when the caller asks for
    # fewer). K = 520,000 puts the tile kernels at 65,000 steps in one pass and the simple one
    # at 2 x 65,000 quads: right at the real cap. Small integers keep every fp32 partial sum
    # exact, so the result must equal the float64 reference exactly.
    M, N, K = 8, 4, 520_000
    A = rng.integers(0, 3, (M, K)).astype(np.float32)
    B = rng.integers(0, 3, (K, N)).astype(np.float32)
    C = rng.integers(-3, 4, (M, N)).astype(np.float32)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    cap = dev.loop_cap
    for variant in ("auto", "simple", "tile4x4"):
        v = VARIANTS[default_variant(dev) if variant == "auto" else variant]
        if cap is not None and v.tile_rows == 1:
            assert min_split(v, K, dev) > 1 and min_split(v, K, dev, has_c=True) > 1
        for split in (None, 1):
            dev.counter.reset()
            got = sgemm(A, B, variant=variant, split=split, device=dev)
            np.testing.assert_array_equal(got, ref.astype(np.float32), err_msg=variant)
            asked = split or auto_split(dev, v, M, N, K)   # GPUs ask for more slices when few
            w = work(v.name, M, N, K, split=asked, loop_cap=dev)
            assert dev.counter.passes["sgemm/product"] == _product_passes(dev, v, w["split"])
            if split == 1:
                assert w["split"] == min_split(v, K, dev)
        # beta * C is added once, not once per slice
        got = sgemm(A, B, C, beta=2.0, variant=variant, device=dev)
        np.testing.assert_array_equal(got, (ref + 2.0 * C).astype(np.float32), err_msg=variant)
        # loop iterations per fragment and pass: one per K step (simple: per quad, + 4 for C)
        quads = w["fetches_per_fragment"] / v.fetches_per_quad  # K-quads per fragment and pass
        iters = quads / v.unroll
        assert cap is None or iters <= cap


def test_forced_loop_cap_splits_more(rng):
    # a device with a tiny loop cap: the same product, cut into more blended passes; the plan
    # (given the cap) matches the counter
    M, N, K = 13, 9, 300
    A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
    ref = 0.5 * (A @ B) - 2.0 * C
    with sg.Device(limits=sg.Limits(loop_cap=16)) as small:
        a = small.array(A)
        for variant in VARIANTS:
            v = VARIANTS[variant]
            small.counter.reset()
            got = sgemm(a, B, C, alpha=0.5, beta=-2.0, variant=variant)
            assert_rel_close(got.get(), ref, tol=TOL, what=variant)
            got.release()
            w = work(variant, M, N, K, stage_a=True, has_c=True, loop_cap=small)
            # tile: 38 steps of 2 quads -> 3 passes (the uniform-block tiles: windows of 32
            # quads -> 3 chunks); simple: 75 quads, 12 a pass -> 7 passes
            assert w["split"] == (7 if v.tile_rows == 1 else 3), variant
            assert w["split"] > work(variant, M, N, K, has_c=True)["split"]
            rows = plans.compare(plans.get_plan(f"sgemm/{variant}"), small.counter.snapshot(),
                                 M=M, N=N, K=K, stage_a=True, has_c=True, loop_cap=small)
            assert all(r["match"] for r in rows), rows
    # a cap too small for even one step of a kernel is refused, naming the cap
    with sg.Device(limits=sg.Limits(loop_cap=4)) as tiny:
        with pytest.raises(sg.LoopBudgetError, match="loop cap"):
            sgemm(A, B, C, beta=1.0, variant="simple", device=tiny)


@pytest.mark.parametrize("variant", ["auto", "tile16x2-ubo"])
def test_random_shapes_compile_a_bounded_number_of_programs(rng, variant):
    # sizes are uniforms, not defines: 200 random-shape calls (numpy and device inputs,
    # transposes, with and without C) compile at most 5 programs on a fresh device with a
    # texture-path tile: the staging kernel (TRANS 0 and 1), the product kernel, the epilogue
    # without and with C; the uniform-block tiles (the GPU default) stage B transposed through
    # their own kernels as well: 10 programs (counted on llvmpipe and on the H200).
    with sg.Device() as d:
        name = default_variant(d) if variant == "auto" else variant
        BOUND = 10 if "ubo" in name else 5
        c0, p0 = d.shaders.compiles, d.n_programs
        for i in range(200):
            M, N, K = (int(x) for x in rng.integers(1, 40, 3))
            ta, tb = bool(rng.integers(2)), bool(rng.integers(2))
            A, B = data(rng, M, K), data(rng, K, N)
            C = data(rng, M, N) if i % 3 else None
            a = A.T.copy() if ta else A
            b = B.T.copy() if tb else B
            if i % 2:
                a, b = d.array(a), d.array(b)
            got = sgemm(a, b, C, alpha=1.5, beta=-0.5, trans_a=ta, trans_b=tb, device=d,
                        variant=variant)
            if isinstance(got, sg.DeviceArray):
                got = got.get()
                a.release()
                b.release()
            ref = 1.5 * (A @ B) + (0.0 if C is None else -0.5 * C)
            assert_rel_close(got, ref, tol=TOL, what=(M, N, K, ta, tb))
        assert d.shaders.compiles - c0 <= BOUND
        assert d.n_programs - p0 <= BOUND


def test_pass_plan_matches_counter(dev, rng):
    M, N, K = 33, 21, 50
    a, b = dev.array(data(rng, M, K)), dev.array(data(rng, K, N))
    for variant in VARIANTS:
        for split in (1, 2):
            dev.counter.reset()
            sgemm(a, b, variant=variant, split=split).release()
            measured = dev.counter.snapshot()
            plan = plans.get_plan(f"sgemm/{variant}")
            # loop_cap=dev: the plan follows the device (ping-pong accumulation where it has
            # no float blending)
            params = dict(M=M, N=N, K=K, split=split, stage_a=True, stage_b=True,
                          loop_cap=dev)
            rows = plans.compare(plan, measured, **params)
            assert all(r["match"] for r in rows), rows
            w = work(variant, M, N, K, split=split, stage_a=True, stage_b=True, loop_cap=dev)
            assert w["split"] == split
            want = split * w["product_fragments"]
            if dev.float_blending:   # (ping-pong accumulation draws its combine passes too)
                assert measured["sgemm/product"]["fragments"] == want
    assert DEFAULT_VARIANT == "auto" and default_variant(dev) in VARIANTS


def test_report_quick(tmp_path):
    from shadergpgpu.analysis.reports import sgemm as report
    assert report.main(["--quick", "--out", str(tmp_path), "--no-plots", "--no-progress"]) == 0
    text = (tmp_path / "sgemm.md").read_text()
    assert "tile8x4" in text and "simple" in text
    assert (tmp_path / "sgemm.csv").exists() and (tmp_path / "sgemm.json").exists()


def test_gpu_split_policy_and_unroll_variants(dev, rng, monkeypatch):
    # on a GPU (no loop cap) small outputs ask for more K slices; llvmpipe asks for 1
    from types import SimpleNamespace
    gpu = SimpleNamespace(is_software=False, plans_for_software=False, loop_cap=None)
    assert S.auto_split(gpu, "tile8x4-tex", 256, 256, 16384) == 8    # 2048 fragments
    assert S.auto_split(gpu, "tile8x4-tex", 4096, 4096, 4096) == 1
    assert S.auto_split(gpu, "simple", 256, 256, 16384) == 1
    assert work("tile8x4-tex", 256, 256, 16384, split=8)["split"] == 8
    assert S.auto_split(dev, "tile8x4", 256, 256, 16384) == (1 if dev.is_software else 8)
    # the unroll factors the benchmark sweeps (one define, same kernel)
    import dataclasses
    M, N, K = 21, 14, 77
    A, B = data(rng, M, K), data(rng, K, N)
    for unroll in (1, 4):
        v = dataclasses.replace(VARIANTS["tile8x4"], unroll=unroll)
        monkeypatch.setitem(VARIANTS, "tile8x4", v)
        dev.counter.reset()
        got = sgemm(A, B, variant="tile8x4", split=2, device=dev)
        assert_rel_close(got, A @ B, tol=TOL, what=unroll)
        assert work(v, M, N, K, split=2, loop_cap=dev)["split"] == 2
        assert dev.counter.passes["sgemm/product"] == _product_passes(dev, v, 2)
    with pytest.raises(ValueError, match="unroll"):
        dataclasses.replace(VARIANTS["tile8x4"], unroll=3)


# ---- the uniform-block variant (A from a uniform buffer, one block row of C per draw) ---------
UBO = "tile8x4-ubo"
UBOS = [name for name, v in VARIANTS.items() if v.a_path == "block"]


def test_ubo_shapes_chunks_transposes_and_plan(dev, rng):
    # K past one uniform-block window (2,048 K at 64 KiB: 5,000 K -> 3 chunks), shapes that are
    # no multiples of 8 or 4, alpha/beta/C, a split asked for, numpy and device inputs
    for M, N, K, split in [(1, 1, 1, None), (9, 5, 2049, None), (21, 14, 5000, None),
                           (37, 61, 101, 4), (8, 4, 8, 1), (3, 130, 33, None)]:
        A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
        ref = -1.25 * (A @ B) + 0.75 * C
        got = sgemm(A, B, C, alpha=-1.25, beta=0.75, variant=UBO, split=split, device=dev)
        assert_rel_close(got, ref, tol=TOL, what=(M, N, K))
        a, b, c = dev.array(A), dev.array(B), dev.array(C)
        dev.counter.reset()
        out = sgemm(a, b, c, alpha=-1.25, beta=0.75, variant=UBO, split=split)
        assert_rel_close(out.get(), ref, tol=TOL, what=(M, N, K))
        params = dict(M=M, N=N, K=K, split=split or 1, stage_a=True, stage_b=True, has_c=True,
                      device=dev)
        rows = plans.compare(plans.get_plan(f"sgemm/{UBO}"), dev.counter.snapshot(), **params)
        assert all(r["match"] for r in rows), rows
        w = work(UBO, **params)
        want_chunks = max(ceil_div(K, 2048), min(split or 1, ceil_div(K, 8)))
        assert w["split"] == want_chunks, (M, N, K, w["split"])
        # every product draw covers one block row of 8 rows of C: fragments = one chunk's
        # output texels, times the chunks
        if dev.float_blending:   # (ping-pong accumulation draws its combine passes too)
            assert dev.counter.snapshot()["sgemm/product"]["fragments"] == \
                w["split"] * w["product_fragments"]
        assert w["fetches_per_fragment"] == 4 * ceil_div(K, 8) * 2 / w["split"]
        for x in (a, b, c, out):
            x.release()
    assert S.effective_variant(UBO, dev).a_path == "block"
    assert default_variant(dev) != UBO   # not the auto choice until measured on a GPU


def test_ubo_forced_loop_cap_and_few_programs(rng):
    # a loop cap of 16 steps: windows of 32 K-quads, so K = 300 takes 3 chunks; a cap of 4
    # (the epilogue's lane loop needs 4): windows of 8 quads, 10 chunks. Windows are powers of
    # two: few programs.
    M, N, K = 13, 9, 300
    A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
    ref = 0.5 * (A @ B) - 2.0 * C
    for cap, chunks in ((16, 3), (4, 10)):
        with sg.Device(limits=sg.Limits(loop_cap=cap)) as d:
            d.counter.reset()
            got = sgemm(A, B, C, alpha=0.5, beta=-2.0, variant=UBO, device=d)
            assert_rel_close(got, ref, tol=TOL, what=cap)
            w = work(UBO, M, N, K, has_c=True, device=d)
            assert w["split"] == chunks == min_split(UBO, K, d)
            assert d.counter.passes["sgemm/product"] == w["phases"]["sgemm/product"]
    with sg.Device() as d:
        p0 = d.n_programs
        for i in range(40):
            M, N = (int(x) for x in rng.integers(1, 30, 2))
            K = int(rng.integers(1, 5000))
            ta = bool(i % 2)
            A, B = data(rng, M, K), data(rng, K, N)
            a = d.array(A.T.copy()) if i % 3 == 0 else (A.T.copy() if ta else A)
            got = sgemm(a, B, alpha=1.5, trans_a=ta or i % 3 == 0, variant=UBO, device=d)
            got = got.get() if isinstance(got, sg.DeviceArray) else got
            assert_rel_close(got, 1.5 * (A @ B), tol=TOL, what=(M, N, K))
        # product: <= 6 window lengths (16 .. 512 quads); staging, numpy operands included
        # (2 kernels x {transposed, by texel, by lane}); the epilogue
        assert d.n_programs - p0 <= 13


def test_ubo_small_textures_geometry_and_staging_groups(small_dev, rng, monkeypatch):
    # max_texture_size 16 / 32: many block rows (136 x 4: 17 block rows of 8) or wide rows
    # (N = 260: 65 texels) tile the small targets (rects side by side, in bands of rows); where
    # no tiling fits (forced here) the targets wrap and a block row's draws cover the texels of
    # its row (several rects where it spans texture rows). A's windows (128 texels each) are
    # staged through several textures.
    with sg.Device(limits=sg.Limits(max_texture_size=32)) as d32:
        for wrap in (False, True):
            if wrap:
                monkeypatch.setattr(SU, "_ubo_geometry", lambda *args: None)
            for variant in UBOS:
                for d, (M, N, K) in [(small_dev, (136, 4, 4)), (small_dev, (20, 30, 27)),
                                     (d32, (9, 260, 5))]:
                    A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
                    ref = 0.5 * (A @ B) + 2.0 * C
                    got = sgemm(A, B, C, alpha=0.5, beta=2.0, variant=variant, device=d)
                    assert_rel_close(got, ref, tol=TOL, what=(variant, M, N, K))
                    d.counter.reset()
                    da, db = d.array(A, order="col"), d.array(B, order="col")
                    out = sgemm(da, db, C=d.array(C), alpha=0.5, beta=2.0, variant=variant)
                    assert_rel_close(out.get(), ref, tol=TOL, what=(variant, M, N, K))
                    params = dict(M=M, N=N, K=K, stage_a=True, stage_b=True, has_c=True,
                                  device=d)
                    rows = plans.compare(plans.get_plan(f"sgemm/{variant}"),
                                         d.counter.snapshot(), **params)
                    assert all(r["match"] for r in rows), rows
                    v = S.effective_variant(variant, d)
                    plan = S.ubo.ubo_plan(v, M, N, K, S.Limits.of(d))
                    lay = plan.parts
                    if wrap:
                        assert plan.geo == (1, plan.fw, plan.fw, 1)
                        mx = d.max_texture_size
                        assert lay.wrapped == (plan.nblocks > mx or plan.fw > mx)
                        if (variant, N) == (UBO, 260):
                            assert [len(r) for r in plan.rects] == [3, 3]
                    else:
                        # the rects tile the (unwrapped) targets without overlap
                        assert not lay.wrapped
                        band, width, fw, across = plan.geo
                        assert band * width >= fw and width <= d.max_texture_size
                        cover = np.zeros((lay.tex_h, lay.tex_w), int)
                        for (x, y, w, h), in plan.rects:
                            assert (w, h) == (width, band)
                            cover[y:y + h, x:x + w] += 1
                        assert cover.max() == 1 and cover.sum() == plan.fragments
                    for x in (da, db, out):
                        x.release()
        assert work(UBO, 136, 4, 4, stage_a=True, device=small_dev)["phases"][
            "sgemm/stage"] == 9 + 1   # 17 windows, 2 per 16 x 16 texture; + B (a numpy
        # operand whose K = 4 is padded to whole K steps: staged on the device)


def test_ubo_geometry_at_4096():
    # 512 block rows of 1,024 fragments each: 32 x 32 rects, 32 side by side (1024 x 512
    # targets); 16x2: 256 block rows of 2,048 fragments in 32 x 64 rects; ubo_target_w = 0
    # stacks the rects in one column (a 32-texel-wide strip)
    lim = S.Limits()
    p = S.ubo.ubo_plan(VARIANTS[UBO], 4096, 4096, 4096, lim)
    assert p.geo == (32, 32, 1024, 32) and (p.parts.tex_w, p.parts.tex_h) == (1024, 512)
    assert len(p.chunks) == 2 and p.window == 512 and p.fragments == 4096 * 4096 // 32
    assert p.quad == S.SgemmTuning().ubo_quad_order
    p = S.ubo.ubo_plan(VARIANTS["tile16x2-ubo"], 4096, 4096, 4096, lim)
    assert p.geo == (32, 64, 2048, 16) and (p.parts.tex_w, p.parts.tex_h) == (1024, 512)
    assert len(p.chunks) == 4 and p.window == 256
    p = S.ubo.ubo_plan(VARIANTS["tile32x1-ubo"], 4096, 4096, 4096, lim)
    assert p.geo == (32, 128, 4096, 8) and len(p.chunks) == 8
    p = S.ubo.ubo_plan(VARIANTS[UBO], 4096, 4096, 4096, lim, tuning=S.SgemmTuning(ubo_target_w=0))
    assert p.geo == (32, 32, 1024, 1) and (p.parts.tex_w, p.parts.tex_h) == (32, 16384)


def test_ubo_quad_and_row_order(dev, rng):
    # fragments numbered by pixel quads or row by row inside the rects (odd bands and widths
    # fall back to rows), partial last rects (fragments past the block row compute nothing),
    # every tile shape; the pass plan holds in both orders
    for quad in (True, False):
        for variant in UBOS:
            for M, N, K in [(64, 64, 64), (130, 250, 40), (40, 18, 9), (16, 4096, 12)]:
                A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
                dev.counter.reset()
                with dev.tuned(S.SgemmTuning, ubo_quad_order=quad):
                    got = sgemm(A, B, C, alpha=2.0, beta=-0.5, variant=variant, device=dev)
                assert_rel_close(got, 2.0 * (A @ B) - 0.5 * C, tol=TOL,
                                 what=(quad, variant, M, N, K))
                plan = S.ubo.ubo_plan(VARIANTS[variant], M, N, K, S.Limits.of(dev),
                                   tuning=S.SgemmTuning(ubo_quad_order=quad))
                assert plan.quad == (quad and plan.band % 2 == 0 and plan.width % 2 == 0)
                rows = plans.compare(plans.get_plan(f"sgemm/{variant}"), dev.counter.snapshot(),
                                     M=M, N=N, K=K, has_c=True, device=dev)
                assert all(r["match"] for r in rows), rows


def test_block_inputs_are_checked(dev, rng):
    from shadergpgpu.engine.blocks import BlockArray, BlockLayout
    blk = BlockArray(dev, BlockLayout(16), np.zeros((64, 4), np.float32))
    with pytest.raises(ValueError, match="outside"):
        blk.select(60)
    if dev.ctx.info.get("GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT", 16) > 16:
        with pytest.raises(ValueError, match="ALIGNMENT"):
            blk.select(1)
    b = dev.array(data(rng, 8, 4))
    parts = [dev.empty((1, 4)) for _ in range(8)]
    uni = {"kq0": 0, "ks_n": 1, "geo": (1, 1, 1, 1)}
    with pytest.raises(ValueError, match="must be a BlockArray"):
        dev.run(S.TILE_UBO[8], parts, inputs={"A": b, "B": b}, uniforms=uni)
    with pytest.raises(ValueError, match="got a BlockArray"):
        dev.run(S.STAGE, parts[0], inputs={"X": blk})
    with pytest.raises(ValueError, match="exceeds"):
        BlockArray(dev, BlockLayout(1 << 20), reserve=16)
    for x in [blk, b, *parts]:
        x.release()


# ---- device profiles: the algorithm adapts instead of failing ------------------------------------
def test_every_variant_adapts_to_every_profile(rng):
    from shadergpgpu.engine import profiles
    for name in profiles.names():
        with sg.Device(profile=name) as d:
            for variant in ["auto", *VARIANTS]:
                v = S.effective_variant(default_variant(d) if variant == "auto" else variant, d)
                assert v.targets <= d.max_outputs
                assert d.buffer_textures or v.a_path != "buffer"
                # a K long enough for two slices under the 7800 GTX's loop cap of 255 steps
                for M, N, K, dev_in, split in [(13, 9, 2100, False, None),
                                               (19, 23, 70, True, 2)]:
                    A, B, C = data(rng, M, K), data(rng, K, N), data(rng, M, N)
                    a, b = (d.array(A), d.array(B)) if dev_in else (A, B)
                    d.counter.reset()
                    got = sgemm(a, b, C, alpha=0.5, beta=-2.0, variant=variant, split=split,
                                device=d)
                    got = got.get() if isinstance(got, sg.DeviceArray) else got
                    assert_rel_close(got, 0.5 * (A @ B) - 2.0 * C, tol=TOL, what=(name, variant))
                    params = dict(M=M, N=N, K=K, split=split or 1, stage_a=dev_in,
                                  stage_b=dev_in, has_c=True, device=d)
                    rows = plans.compare(plans.get_plan(f"sgemm/{v.name}"),
                                         d.counter.snapshot(), **params)
                    assert all(r["match"] for r in rows), (name, variant, rows)
                    w = work(v.name, **params)
                    assert (w["tile_rows"], w["a_path"]) == (v.tile_rows, v.a_path)
                    if v.a_path != "block":
                        assert w["split"] >= min_split(v, K, d, has_c=True)
                        if d.loop_cap == 255 and v.tile_rows > 1:  # 263 steps for K = 2100
                            assert min_split(v, K, d) == (2 if K > 2048 else 1)
                    if w["split"] > 1 and not d.float_blending and v.a_path != "block":
                        # later slices accumulate by ping-pong: 1 + 2 x targets passes each
                        outs = max(1, v.tile_rows)
                        assert w["phases"]["sgemm/product"] == 1 + (w["split"] - 1) * (
                            1 + 2 * outs)
                    if dev_in:
                        a.release()
                        b.release()
            if name == "geforce-7800gtx":   # cap 255, 4 targets, no buffers, no blocks
                assert d.loop_cap == 255
                assert (S.effective_variant(UBO, d).a_path,
                        S.effective_variant(UBO, d).tile_rows) == ("texture", 4)
                assert min_split("tile8x4", 2100, d) == 2


def test_ubo_unroll_variants(dev, rng, monkeypatch):
    # the unroll factors the benchmark sweeps (one define of the same kernel), K past a window
    import dataclasses
    M, N, K = 21, 14, 4500
    A, B = data(rng, M, K), data(rng, K, N)
    for unroll in (1, 4):
        v = dataclasses.replace(VARIANTS[UBO], unroll=unroll)
        monkeypatch.setitem(VARIANTS, UBO, v)
        dev.counter.reset()
        got = sgemm(A, B, variant=UBO, device=dev)
        assert_rel_close(got, A @ B, tol=TOL, what=unroll)
        w = work(v, M, N, K, device=dev)
        assert w["split"] == 3 and dev.counter.passes["sgemm/product"] == \
            w["phases"]["sgemm/product"]
