"""The numerical contracts of ops.reduce, ops.scan and ops.sort, checked at their edges.

Each op's docstring states its bound; here it is recomputed from the formula (not from the
library's helpers, which are checked against it) and asserted against exact references
(math.fsum / float64 over the float32 inputs):

* sums, dot, norm, ReductionKernel (a + b): ``|s - S| <= gamma(K) * A + ftz`` with
  ``K = L (F - 1) + 2`` (whole array, ``L`` passes over the layout's texels; ``+ 1`` for a
  rounding map), ``K = axis_passes(m, F) (F - 1)`` along an axis, ``gamma(K) = K u / (1 - K u)``,
  ``u = 2**-24``, ``A`` the sum of magnitudes and ``ftz = (1 + gamma(K)) 2n 2**-126`` (subnormals
  flushed to zero by GPUs and llvmpipe);
* cumsum: ``|y_j - S_j| <= gamma(P) A_j + (1 + gamma(P)) (2j + 1) 2**-126``, ``P`` the passes;
* overflow: a finite result always meets the bound; all-positive sums past float32's range
  are +inf (numpy float32 too); never a finite number outside the bound;
* argmin / argmax / sort / argsort: exact, against numpy (argsort kind="stable"), value bits
  included (subnormals, -0.0), with +-0, subnormals, +-inf and NaN of any sign or payload.

Sizes: n = 300,000 for the long sums (on the edge of 5 passes at fan-in 16), small arrays for
the special values; the file runs in well under a minute on llvmpipe.
"""
import math
import zlib

import numpy as np
import pytest

from shadergpgpu.engine import kernels as K_
from shadergpgpu.ops import reduce as R
from shadergpgpu.ops.tuning import ReduceTuning
from shadergpgpu.ops.reduce import ReductionKernel
from shadergpgpu.ops.scan import cumsum
from shadergpgpu.ops.sort import argsort, sort, sort_pairs

from tests.reference import assert_close, assert_within

U = 2.0 ** -24
TINY = 2.0 ** -126
FMAX = float(np.finfo(np.float32).max)
#: float32 overflow threshold: a rounded result at or beyond it is inf
OVER = 2.0 ** 128 * (1 - 2.0 ** -25)
N = 300_000


def gamma(k):
    return k * U / (1 - k * U)


def levels(texels, fanin):
    """Passes of a reduction over ``texels`` (each pass divides by the fan-in, rounding up)."""
    count, m = 0, int(texels)
    while True:
        m = -(-m // fanin)
        count += 1
        if m == 1:
            return count


def k_flat(texels, fanin=16, mapped=False):
    return levels(texels, fanin) * (fanin - 1) + 2 + int(mapped)


def k_axis(length, fanin=16, mapped=False):
    return levels(length, fanin) * (fanin - 1) + int(mapped)


def bound(abs_sum, n, k):
    g = gamma(k)
    return g * abs_sum + (1 + g) * 2 * n * TINY


def exact(x):
    return math.fsum(np.asarray(x, np.float64).ravel())


def f32(x):
    return np.asarray(x, dtype=np.float32)


def bits(x):
    return np.asarray(x, dtype=np.float32).view(np.uint32)


def check_sum(got, x, k, what=""):
    x = f32(x)
    s, a = exact(x), exact(np.abs(x.astype(np.float64)))
    got = float(got)
    assert math.isfinite(got), f"{what}: non-finite {got} for a sum within range"
    err, b = abs(got - s), bound(a, x.size, k)
    assert_close(got, s, rtol=0, atol=b, what=f"{what} (K = {k})")
    return err / b if b else 0.0


# ---- the library's helpers state the same formula -------------------------------------------------
def test_rounding_depth_and_bound_helpers():
    assert R.U == U and R.TINY == TINY
    for t in (1, 2, 16, 17, 256, 257, 75_000, 300_000):
        for f in (2, 3, 16, 64):
            assert R.rounding_depth(t, f) == k_flat(t, f)
            assert R.rounding_depth(t, f, mapped=True) == k_flat(t, f) + 1
            assert R.rounding_depth(length=t, fanin=f) == k_axis(t, f)
    assert R.rounding_depth(-(-N // 4)) == 77          # the docstring's example
    assert R.error_bound(10.0, 5, 77) == bound(10.0, 5, 77)
    with pytest.raises(ValueError):
        R.rounding_depth()


# ---- sums -----------------------------------------------------------------------------------------
def _data(kind, n, rng):
    if kind == "uniform":
        return f32(rng.random(n))
    if kind == "span":          # log-uniform over six decades, 1e-3 .. 1e3
        return f32(10.0 ** rng.uniform(-3, 3, n))
    if kind == "span_signed":   # the same with random signs (cancellation)
        return f32(10.0 ** rng.uniform(-3, 3, n) * rng.choice([-1.0, 1.0], n))
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["uniform", "span", "span_signed"])
def test_total_bound_n300k(dev, kind):
    rng = np.random.default_rng(7)
    x = _data(kind, N, rng)
    a = dev.array(x)                                    # packed: 75,000 texels, 5 passes
    assert a.layout.n_texels == N // 4
    check_sum(R.total(dev, a), x, k_flat(a.layout.n_texels), kind)
    # fan-in 2: 17 passes, K = 19 (fewer roundings, more passes)
    if kind == "uniform":
        check_sum(R.total(dev, a, fanin=2), x, k_flat(a.layout.n_texels, 2), kind + " F=2")
    # numpy in, numpy out (the ReductionKernel call)
    check_sum(R.sum(x, device=dev), x, k_flat(-(-N // 4)), kind + " numpy")
    a.release()


def test_axis_sums_bound(dev, small_dev):
    rng = np.random.default_rng(8)
    m = f32(10.0 ** rng.uniform(-3, 3, (300, 257)) * rng.choice([-1.0, 1.0], (300, 257)))
    for axis in (0, 1):
        got = R.sum(m, axis=axis, device=dev)
        length = m.shape[axis]
        for j in range(m.shape[1 - axis]):
            terms = m[:, j] if axis == 0 else m[j]
            check_sum(got[j], terms, k_axis(length), f"axis {axis} #{j}")
    # wrapped layouts (textures of 16 texels a side), row and column order
    w = f32(rng.standard_normal((13, 17)))
    for packed, order in ((True, "col"), (False, "row"), (True, "row")):
        a = small_dev.array(w, packed=packed, order=order)
        check_sum(R.total(small_dev, a), w, k_flat(a.layout.n_texels), order)
        got = R.sum(a, axis=1).get()
        for j in range(w.shape[0]):
            check_sum(got[j], w[j], k_axis(w.shape[1], 16), f"wrapped axis 1 #{j}")
        a.release()


def test_dot_and_norm_bounds(dev):
    rng = np.random.default_rng(9)
    x, y = _data("span_signed", N, rng), _data("uniform", N, rng)
    k = k_flat(-(-N // 4), mapped=True)
    prods = x.astype(np.float64) * y.astype(np.float64)     # exact in float64
    got = float(R.dot(x, y, device=dev))
    s, a = math.fsum(prods), math.fsum(np.abs(prods))
    assert_close(got, s, rtol=0, atol=bound(a, N, k) + TINY * exact(np.abs(x) + np.abs(y)),
                 what="dot")
    r = float(R.norm(x, device=dev))
    ref = math.sqrt(math.fsum(x.astype(np.float64) ** 2))
    assert_close(r, ref, rtol=0, atol=(gamma(k) / 2 + 10 * U) * ref
                 + math.sqrt((1 + gamma(k)) * 2 * N) * 2.0 ** -63, what="norm")
    # a subnormal factor loses its whole product (the dot term 2**-126 * sum(|x| + |y|))
    d = float(R.dot(f32([1e-40, 1.0]), f32([1e30, 0.0]), device=dev))
    assert d == 0.0 or abs(d - 1e-40 * 1e30) <= 1e-40 * 1e30 * 1e-6
    assert_close(d, 1e-10, rtol=0,
                 atol=TINY * (1e-40 + 1e30 + 1.0) + bound(1e-10, 2, k_flat(1, 16, True)))


def test_norm_underflow_and_overflow_documented(dev):
    n = 1000
    tiny = np.full(n, 1e-20, np.float32)       # squares 1e-40: subnormal, flushed on GPUs
    r = float(R.norm(tiny, device=dev))
    ref = 1e-20 * math.sqrt(n)
    assert_close(r, ref, rtol=0,
                 atol=math.sqrt((1 + gamma(k_flat(250, mapped=True))) * 2 * n) * 2.0 ** -63)
    big = np.full(n, 1e20, np.float32)         # squares 1e40 > 3.4e38
    assert float(R.norm(big, device=dev)) == np.inf
    with np.errstate(over="ignore"):
        assert np.linalg.norm(big) == np.inf   # numpy float32 overflows too


@pytest.mark.parametrize("fanin", [4, 16])
def test_reduction_kernel_bound(dev, fanin):
    rng = np.random.default_rng(10)
    wsq = ReductionKernel("float32 x, float32 w", "float32 z", "w * x", "a + b", "z = a",
                          identity=0.0, name="contract_wsum")
    x = _data("span_signed", 50_000, rng)
    w = _data("uniform", 50_000, rng)
    terms = x.astype(np.float64) * w.astype(np.float64)
    got = float(wsq(x, w, device=dev, fanin=fanin))
    k = k_flat(-(-50_000 // 4), fanin, mapped=True)
    assert_close(got, math.fsum(terms), rtol=0,
                 atol=bound(math.fsum(np.abs(terms)), 50_000, k)
                 + TINY * exact(np.abs(x) + np.abs(w)), what=f"fanin {fanin}")


def test_sums_of_subnormals_are_flushed_within_the_bound(dev):
    # the documented limit: subnormal inputs and partial sums flush to zero (each < 2**-126)
    x = f32([1e-45, 0.0, -1e-45, 1e-40])
    got = R.total(dev, x)
    assert got in (0.0, float(exact(x)))          # numpy: 1.0e-40; flushed: 0.0
    check_sum(got, x, k_flat(1))
    rng = np.random.default_rng(11)
    for scale in (2e-38, 5e-38, 1e-36):            # around the smallest normal, 1.18e-38
        y = f32(rng.random(N) * scale * rng.choice([-1.0, 1.0], N))
        assert np.any(np.abs(y) < TINY) and np.any(np.abs(y) >= TINY)
        a = dev.array(y)
        check_sum(R.total(dev, a), y, k_flat(a.layout.n_texels), f"scale {scale}")
        a.release()


def test_sum_overflow_is_infinite_never_finite_and_wrong(dev):
    rng = np.random.default_rng(12)
    # all positive beyond float32's range: +inf, as numpy's float32 sum
    for x in (np.full(8, 1e38, np.float32), f32(rng.uniform(0.5, 1.0, N) * 1e34),
              -np.full(5, 3e38, np.float32)):
        got = R.total(dev, x)
        with np.errstate(over="ignore"):
            assert got == float(np.sum(x, dtype=np.float32)) == math.copysign(np.inf, x[0])
    # in range near the top: finite and within the bound
    x = f32([1e38, 1e38, 1e38, 1e37, 3e37])
    check_sum(R.total(dev, x), x, k_flat(2))
    # both signs near 1e38: a finite result meets the bound; an out-of-range sum is not finite
    for seed in range(6):
        r = np.random.default_rng(seed)
        n = int(r.integers(4, 3000))
        x = f32(r.uniform(0.3, 1.0, n) * 1e38 * r.choice([-1.0, 1.0], n, p=[0.3, 0.7]))
        a = dev.array(x)
        got = R.total(dev, a)
        s, ab = exact(x), exact(np.abs(x))
        k = k_flat(a.layout.n_texels)
        if math.isfinite(got):
            assert_close(got, s, rtol=0, atol=bound(ab, n, k), what=f"seed {seed}")
        if abs(s) - bound(ab, n, k) > FMAX:
            assert not math.isfinite(got)
        a.release()


# ---- cumsum ---------------------------------------------------------------------------------------
def _check_cumsum(y, x, exclusive=False, what=""):
    x64 = f32(x).astype(np.float64)
    s = np.cumsum(x64)
    a = np.cumsum(np.abs(x64))
    if exclusive:
        s, a = s - x64, a - np.abs(x64)
    n = x64.size
    p = max(1, math.ceil(math.log2(n))) if n > 1 else 1
    j = np.arange(n)
    b = gamma(p) * a + (1 + gamma(p)) * (2 * j + 1) * TINY
    b += n * 2.0 ** -52 * a              # the float64 reference's own rounding
    y = np.asarray(y, np.float64)
    fin = np.isfinite(y)
    assert_within(y[fin], s[fin], b[fin], what=what)
    return fin


@pytest.mark.parametrize("kind", ["uniform", "span", "span_signed"])
def test_cumsum_bound_n300k(kind):
    x = _data(kind, N, np.random.default_rng(13))
    y = cumsum(x)
    assert _check_cumsum(y, x, what=kind).all()
    ye = cumsum(x[:5000], exclusive=True)
    assert _check_cumsum(ye, x[:5000], exclusive=True, what=kind).all()


def test_cumsum_subnormals_and_overflow(small_dev):
    x = f32([1e-45, 0.0, -1e-45, 1e-40, 2e-38, -1e-38])
    y = cumsum(x)
    assert _check_cumsum(y, x).all()
    rng = np.random.default_rng(14)
    z = f32(rng.random(4000) * 2e-38 * rng.choice([-1.0, 1.0], 4000))
    assert _check_cumsum(cumsum(z), z).all()
    # all positive toward float32's top: finite below the overflow band, +inf past it
    big = f32(rng.uniform(0.5, 1.0, 1000) * 1e36)
    y = np.asarray(cumsum(big), np.float64)
    s = np.cumsum(big.astype(np.float64))
    p = math.ceil(math.log2(big.size))
    assert np.all(np.isposinf(y[s * (1 - gamma(p)) >= OVER]))
    assert np.all(np.isfinite(y[s * (1 + gamma(p)) < OVER]))
    _check_cumsum(y, big)
    with np.errstate(over="ignore"):
        assert np.isposinf(y[-1]) and np.isposinf(np.cumsum(big)[-1])
    # wrapped 2-D, both axes
    m = f32(rng.standard_normal((9, 21)) * 1e-37)
    for axis in (0, 1):
        got = cumsum(small_dev.array(m, order="col"), axis=axis).get()
        for j in range(m.shape[1 - axis]):
            col = m[:, j] if axis == 0 else m[j]
            g = got[:, j] if axis == 0 else got[j]
            assert _check_cumsum(g, col).all()


# ---- arg-reductions: exact with special values ----------------------------------------------------
NEG_NAN = np.array([0xFFC00001], np.uint32).view(np.float32)[0]     # a negative NaN, payload 1
SPECIAL = np.array([np.nan, NEG_NAN, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 1e-40, -1e-40,
                    1e-45, -1e-45, 1.1754942e-38, -1.1754942e-38, 1.1754944e-38, 3.4028235e38,
                    -3.4028235e38, 2e-45], dtype=np.float32)


def _subnormals(rng, n, top):
    """n float32 of random sign with magnitude bits below ``top``: subnormals and zeros."""
    b = rng.integers(0, top, n).astype(np.uint32) | (rng.integers(0, 2, n).astype(np.uint32) << 31)
    return b.view(np.float32)


def _expect_arg(x, mode, mask=None):
    flat = np.asarray(x, np.float32).ravel()
    idx = np.arange(flat.size) if mask is None else np.flatnonzero(np.ravel(mask))
    k = int(idx[(np.argmin if mode == "min" else np.argmax)(flat[idx])])
    return flat[k], k


def _same_arg(got, want):
    (v, i), (wv, wk) = got, want
    assert i == wk, (got, want)
    if np.isnan(wv):
        assert np.isnan(v)
    else:
        assert bits(v) == bits(wv), (v, wv)           # -0.0 and subnormals bit for bit


def test_the_audit_case(dev):
    x = np.array([1e-45, 0, -1e-45, 1e-40], np.float32)
    _same_arg(R.argmin(dev, x), (x[2], 2))
    _same_arg(R.argmax(dev, x), (x[3], 3))
    _same_arg(R.argmax(dev, f32([-0.0, 0.0])), (np.float32(-0.0), 0))
    _same_arg(R.argmin(dev, f32([0.0, -0.0])), (np.float32(0.0), 0))
    _same_arg(R.argmin(dev, f32([1.0, np.nan, -np.inf, NEG_NAN])), (np.float32(np.nan), 1))
    _same_arg(R.argmax(dev, f32([np.inf, 3.0, NEG_NAN, np.nan])), (np.float32(np.nan), 2))
    _same_arg(R.argmin(dev, f32([np.inf, np.inf])), (np.float32(np.inf), 0))
    _same_arg(R.argmax(dev, f32([-np.inf, -np.inf, -np.inf])), (np.float32(-np.inf), 0))


# (shape, packed, order, wrapped device, fan-in, ReduceTuning.scan_strict, with a mask): each row compiles
# its own programs on llvmpipe, so the combinations are spread over few rows
ARG_CASES = [((5,), True, "row", False, 16, True, True),
             ((257,), True, "row", False, 3, False, False),
             ((201,), False, "row", False, 16, True, False),
             ((13, 17), True, "col", True, 16, True, True),
             ((20, 31), True, "row", True, 3, True, False),
             ((13, 17), False, "col", False, 16, True, False)]


@pytest.mark.parametrize("shape,packed,order,wrapped,fanin,strict,masked", ARG_CASES)
def test_arg_special_values_layouts(dev, small_dev, shape, packed, order, wrapped, fanin,
                                    strict, masked):
    d = small_dev if wrapped else dev
    with d.tuned(ReduceTuning(scan_strict=strict)):
        _arg_special_values(d, shape, packed, order, wrapped, fanin, masked)


def _arg_special_values(d, shape, packed, order, wrapped, fanin, masked):
    rng = np.random.default_rng(zlib.crc32(repr((shape, packed, order)).encode()))
    for pool in (SPECIAL, SPECIAL[2:], SPECIAL[4:14]):     # with NaN, without, +-0/subnormals
        for _ in range(2):
            x = rng.choice(pool, shape)
            a = d.array(x, packed=packed, order=order)
            assert a.layout.wrapped == wrapped or not wrapped
            _same_arg(R.argmin(d, a, fanin=fanin), _expect_arg(x, "min"))
            _same_arg(R.argmax(d, a, fanin=fanin), _expect_arg(x, "max"))
            m = rng.random(shape) < 0.4
            if masked and m.any():
                _same_arg(R.argmin(d, a, mask=m, fanin=fanin), _expect_arg(x, "min", m))
                _same_arg(R.argmax(d, a, mask=m, fanin=fanin), _expect_arg(x, "max", m))
            a.release()


def test_arg_long_subnormal_runs(dev):
    # 300,000 values, all subnormal or zero: the extremes are single elements far apart
    rng = np.random.default_rng(16)
    x = _subnormals(rng, N, 1000)                                # |x| < 1.5e-42
    x[rng.integers(0, N, 50)] = -0.0
    a = dev.array(x)
    _same_arg(R.argmin(dev, a), _expect_arg(x, "min"))
    _same_arg(R.argmax(dev, a), _expect_arg(x, "max"))
    x[123_457] = np.nan
    x[200_001] = NEG_NAN
    b = dev.array(x)
    _same_arg(R.argmin(dev, b), (np.float32(np.nan), 123_457))
    _same_arg(R.argmax(dev, b), (np.float32(np.nan), 123_457))
    a.release()
    b.release()


DUAL_FIRST = """
// contract test: a DUAL first level; candidates = V's lanes, candidates2 = W's lanes
#include "ops/reduce/argbest_defs.glsl"
#define SRC_TEX_W V_TEX_W
void lanes(vec4 raw, int t, out vec4 v, out vec4 idx) {
    ivec2 q = V_grid_of(t);
    ivec4 fl = V_flat(q.x, q.y);
    bvec4 ok = greaterThanEqual(fl, ivec4(0));
    v = uintBitsToFloat(sel_bits(uvec4(WORST_BITS), floatBitsToUint(raw), ok));
    idx = mix(vec4(NO_INDEX), vec4(fl), ok);
}
void candidates(int t, ivec2 p, out vec4 v, out vec4 idx) {
    lanes(texelFetch(sg_V, p, 0), t, v, idx);
}
void candidates2(int t, ivec2 p, out vec4 v, out vec4 idx) {
    lanes(texelFetch(sg_W, p, 0), t, v, idx);
}
#include "ops/reduce/argbest_core.glsl"
"""


def test_arg_engine_dual_and_payload(dev, tmp_path, monkeypatch):
    """The multi-pass arg-level engine SVM's selection uses (two reductions in the same passes,
    a payload read at the winner): both winners are numpy's, bits included."""
    from shadergpgpu.engine.kernels import In
    monkeypatch.setattr(K_.REGISTRY, "kernels", dict(K_.REGISTRY.kernels))  # test-only kernels
    (tmp_path / "dual_first.frag").write_text(DUAL_FIRST)
    first = R.arg_kernels("dual_first.frag", {"V": In(packed=True, order="row"),
                                              "W": In(like="V")},
                          name="test/contract_dual", dual=True, root=tmp_path)
    rng = np.random.default_rng(17)
    for n, pool in ((37, SPECIAL), (3001, SPECIAL[2:]), (3001, SPECIAL)):
        x, w = rng.choice(pool, n), rng.choice(pool, n)
        pay = f32(rng.random(n))
        X, W, P = dev.array(x), dev.array(w), dev.array(pay)
        for mode in ("min", "max"):
            res = R.result_array(dev, 2)
            for fanin in ((3,) if mode == "min" else (16,)):
                chain = R.ArgReduction(dev, mode, first, {"V": X, "W": W}, X.layout.n_texels,
                                       res, 0, payload=P, fanin=fanin, dual=True)
                chain.run()
                out = res.get()
                chain.release()
                for slot, src in ((0, x), (1, w)):
                    v, i, extra = out[4 * slot: 4 * slot + 3]
                    want = _expect_arg(src, mode)
                    _same_arg((v, int(i)), want)
                    assert bits(extra) == bits(pay[want[1]])
            res.release()
        for arr in (X, W, P):
            arr.release()


# ---- sort / argsort: exact with special values ----------------------------------------------------
def _check_sort(x, v, i, axis=-1):
    x = np.asarray(x, np.float32)
    want_i = np.argsort(x, axis=axis, kind="stable")
    np.testing.assert_array_equal(i, want_i)
    flat = x.ravel() if axis is None else x
    want_v = np.take_along_axis(flat, want_i, axis=-1)
    # bit for bit (np.sort orders -0.0 / +0.0 arbitrarily; the stable order is exact)
    same = bits(v) == bits(want_v)
    assert np.all(same | (np.isnan(v) & np.isnan(want_v)))
    np.testing.assert_array_equal(v, np.sort(x, axis=axis))


def test_sort_special_values(dev, small_dev):
    rng = np.random.default_rng(18)
    x = np.array([1e-45, 0, -1e-45, 1e-40, -0.0, 0.0, -0.0], np.float32)
    _check_sort(x, sort(x), argsort(x))
    # (shape, device wrapped, packed, order): each layout kind compiles its own programs
    for trial, (shape, wrapped, packed, order) in enumerate([
            ((7,), False, True, "row"), ((100,), True, True, "row"), ((3, 29), False, False, "row"),
            ((5, 16), True, True, "col"), ((2, 130), False, True, "row"),
            ((1, 1), False, True, "row")]):
        pool = SPECIAL if trial % 2 else SPECIAL[4:14]
        x = rng.choice(pool, shape)
        d = small_dev if wrapped else dev
        X = d.array(x, packed=packed, order=order)
        for axis in (-1, None):
            V, I = sort_pairs(X, axis=axis)
            _check_sort(x, V.get(), I.get().astype(np.int64), axis)
            V.release()
            I.release()
        X.release()
    # a long run of subnormals, zeros of both signs and a few NaNs (numpy input)
    y = _subnormals(rng, 20_000, 3000)
    y[rng.integers(0, y.size, 40)] = np.nan
    y[rng.integers(0, y.size, 40)] = -0.0
    _check_sort(y, sort(y), argsort(y))
