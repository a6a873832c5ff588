"""The cost model judged on configurations drawn at random: ``benchmarks/model.py --random K``.

Each run draws ``K`` configurations from every algorithm's parameter space (:data:`SPACES`:
backprop nets and N, SGEMM m/n/k and variants, blur sizes, sigmas and methods, SVM sizes, the
RBF kernel rows, Sammon N, k-means n/k, the one-liners and the reductions), with a seed that is
printed (drawn from the clock unless given), so that the model is never judged on the same
configurations it was looked at on. Each configuration is measured once (the fastest of its
timed calls after a warm-up, :func:`.model_cases.timed_rounds`) and predicted from its passes
and declared work; :func:`distribution` gives the error as a distribution of
``measured / predicted`` per algorithm and overall, and :func:`verdict` holds it against
:data:`BOUND`.
"""
from __future__ import annotations

import math
import statistics
import warnings

import numpy as np

from .model_cases import (Case, backprop_case, blur_case, keeping_last, sammon_case,
                          svm_case)

#: The stated bound: the model MISSES when more than a fifth of the configurations (overall)
#: are off by more than 2x either way, i.e. when the 80th percentile of |log(measured /
#: predicted)| exceeds log 2, or when the median |log(measured / predicted)| exceeds log 1.5.
BOUND = {"p80_abs_log": math.log(2.0), "median_abs_log": math.log(1.5)}
BOUND_TEXT = ("80 % of the configurations within 2x (80th percentile of |log(measured / "
              "predicted)| <= log 2) and half within 1.5x (median |log| <= log 1.5)")


# ---- case makers the fixed benchmark does not have -----------------------------------------------
def sgemm_mnk_case(m: int, n: int, k: int, variant: str = "auto", trans_a: bool = False,
                   trans_b: bool = False) -> Case:
    """C = op(A) op(B) with C m x n and an inner dimension k."""
    from ...algorithms import sgemm as S
    rng = np.random.default_rng(0)
    A = rng.standard_normal((k, m) if trans_a else (m, k)).astype(np.float32)
    B = rng.standard_normal((n, k) if trans_b else (k, n)).astype(np.float32)

    def build(dev):
        a, b = dev.array(A), dev.array(B)
        return keeping_last(lambda: S.sgemm(a, b, trans_a=trans_a, trans_b=trans_b,
                                             variant=variant, device=dev), [a, b])

    def numpy():
        a = A.T if trans_a else A
        b = B.T if trans_b else B
        return lambda: a @ b

    t = ("" if not (trans_a or trans_b) else
         " " + ("A'" if trans_a else "A") + ("B'" if trans_b else "B"))
    return Case("sgemm", f"{m}x{n}x{k} {variant}{t}", build, numpy,
                dict(m=m, n=n, k=k, variant=variant, trans_a=trans_a, trans_b=trans_b))


def kmeans_case(n: int = 1024, d: int = 4, k: int = 8, max_iter: int = 5) -> Case:
    """One k-means fit (one initialisation, ``max_iter`` Lloyd iterations at most)."""
    from ...algorithms.kmeans import KMeans
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d)).astype(np.float32)

    def build(dev):
        est = KMeans(n_clusters=k, n_init=1, max_iter=max_iter, tol=0.0, random_state=0,
                     device=dev)

        def call():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return est.fit(X)
        return call, (lambda: None)

    return Case("kmeans", f"n={n} d={d} k={k} {max_iter} iterations", build, None,
                dict(n=n, d=d, k=k, max_iter=max_iter))


def rbf_case(n: int = 1024, d: int = 8) -> Case:
    """Two RBF kernel rows of n points (the SVM's pair of rows, :func:`ops.rbf.rbf_pair`)."""
    from ...ops.rbf import rbf_pair
    X = np.random.default_rng(0).standard_normal((n, d)).astype(np.float32)

    def build(dev):
        return (lambda: rbf_pair(dev, X, 0, n - 1, 1.0 / d)), (lambda: None)

    return Case("rbf", f"rows n={n} d={d}", build, None, dict(n=n, d=d))


def reduce_case(rows: int, cols: int, op: str = "sum") -> Case:
    """A reduction of a rows x cols device array to the host: ``sum``, ``norm``, ``dot`` or
    ``argmax``."""
    from ...ops import reduce as R
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, cols)).astype(np.float32)
    Y = rng.standard_normal((rows, cols)).astype(np.float32)

    def build(dev):
        x = dev.array(X)
        y = dev.array(Y) if op == "dot" else None
        calls = {"sum": lambda: R.sum(x), "norm": lambda: R.norm(x),
                 "dot": lambda: R.dot(x, y), "argmax": lambda: R.argmax(dev, x)}

        def release():
            x.release()
            if y is not None:
                y.release()
        return calls[op], release

    return Case("reduce", f"{op} {rows}x{cols}", build, None, dict(rows=rows, cols=cols, op=op))


def elementwise_shape_case(rows: int, cols: int, expr: str) -> Case:
    """A one-liner ``z = <expr>(x, y)`` over rows x cols."""
    from ...ops.elementwise import ElementwiseKernel
    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, cols)).astype(np.float32)
    Y = rng.standard_normal((rows, cols)).astype(np.float32)
    name = {"x * y + 1.0": "rand_fma", "exp(-x * x) * y": "rand_gauss",
            "max(x, y) - min(x, y)": "rand_absdiff"}[expr]
    k = ElementwiseKernel("float x, float y", "float z", f"z = {expr}", name)

    def build(dev):
        x, y = dev.array(X), dev.array(Y)
        return keeping_last(lambda: k(x, y), [x, y])

    return Case("one-liner", f"{name} {rows}x{cols}", build, None,
                dict(rows=rows, cols=cols, op=name))


# ---- the parameter spaces -------------------------------------------------------------------------
def _log_int(rng, lo: int, hi: int, multiple: int = 1) -> int:
    """An integer drawn log-uniformly from [lo, hi], rounded to a multiple of ``multiple``."""
    v = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return max(lo, min(hi, int(round(v / multiple)) * multiple))


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def _backprop(rng, quick: bool) -> Case:
    hidden = _log_int(rng, 8, 128 if quick else 512)
    sizes = (int(rng.integers(2, 9)), hidden, int(rng.integers(1, 5)))
    n = _log_int(rng, 64, 1024 if quick else 4096, 16)
    schedule = _pick(rng, ("paper", "fused"))
    packed = bool(rng.integers(2)) if schedule == "paper" else True
    return backprop_case(sizes, n, schedule, packed)


def _sgemm(rng, quick: bool) -> Case:
    hi = 256 if quick else 512
    m, n, k = (_log_int(rng, 16, hi) for _ in range(3))
    variant = _pick(rng, ("auto", "tile8x4", "tile8x4-tex", "tile4x4", "simple",
                          "tile8x4-ubo", "tile16x2-ubo", "tile32x1-ubo"))
    trans = int(rng.integers(4)) if rng.uniform() < 0.3 else 0
    return sgemm_mnk_case(m, n, k, variant, bool(trans & 1), bool(trans & 2))


def _blur(rng, quick: bool) -> Case:
    hi = 384 if quick else 768
    shape = (_log_int(rng, 32, hi), _log_int(rng, 32, hi))
    method = _pick(rng, ("recursive", "exact"))
    sigma = round(math.exp(rng.uniform(math.log(0.8), math.log(8.0 if method == "recursive"
                                                                  else 5.0))), 2)
    return blur_case(shape, sigma, method)


def _svm(rng, quick: bool) -> Case:
    return svm_case(_log_int(rng, 64, 384 if quick else 1024), _log_int(rng, 2, 32),
                    _log_int(rng, 5, 40 if quick else 80))


def _rbf(rng, quick: bool) -> Case:
    return rbf_case(_log_int(rng, 64, 4096 if quick else 16384), _log_int(rng, 2, 64))


def _sammon(rng, quick: bool) -> Case:
    return sammon_case(_log_int(rng, 64, 384 if quick else 1024), _log_int(rng, 2, 16),
                       int(rng.integers(2, 6)))


def _kmeans(rng, quick: bool) -> Case:
    return kmeans_case(_log_int(rng, 128, 4096 if quick else 16384), int(rng.integers(2, 9)),
                       _log_int(rng, 2, 32), int(rng.integers(2, 6)))


def _ops(rng, quick: bool) -> Case:
    hi = 512 if quick else 1024
    rows, cols = _log_int(rng, 8, hi), _log_int(rng, 8, hi)
    if rng.uniform() < 0.5:
        return elementwise_shape_case(rows, cols, _pick(rng, ("x * y + 1.0", "exp(-x * x) * y",
                                                              "max(x, y) - min(x, y)")))
    return reduce_case(rows, cols, _pick(rng, ("sum", "norm", "dot", "argmax")))


#: Per algorithm, a function ``(rng, quick) -> Case`` drawing one configuration.
SPACES = {"backprop": _backprop, "sgemm": _sgemm, "blur": _blur, "svm": _svm, "rbf": _rbf,
          "sammon": _sammon, "kmeans": _kmeans, "ops": _ops}


def draw(k: int, seed: int, quick: bool = False, algorithms=None) -> list[Case]:
    """``k`` configurations per algorithm (``algorithms``: names of :data:`SPACES`, default
    all), drawn from ``seed``; the same seed draws the same configurations."""
    rng = np.random.default_rng(seed)
    out = []
    for name, space in SPACES.items():
        if algorithms and name not in algorithms:
            continue
        for _ in range(k):
            out.append(space(rng, quick))
    return out


# ---- the distribution -----------------------------------------------------------------------------
def _quantile(xs: list, q: float) -> float:
    """The ``q`` quantile of ``xs`` (linear interpolation between order statistics)."""
    xs = sorted(xs)
    if len(xs) == 1:
        return xs[0]
    pos = q * (len(xs) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def summarize(ratios: list) -> dict:
    """The distribution of measured / predicted ratios: n, median, quartiles, 10th/90th
    percentiles, the worst (farthest from 1 either way), the median |log ratio| as a factor
    and the share within 2x."""
    ratios = [r for r in ratios if r and r > 0 and math.isfinite(r)]
    if not ratios:
        return {"n": 0}
    logs = [abs(math.log(r)) for r in ratios]
    return {"n": len(ratios), "p10": _quantile(ratios, 0.1), "p25": _quantile(ratios, 0.25),
            "median": _quantile(ratios, 0.5), "p75": _quantile(ratios, 0.75),
            "p90": _quantile(ratios, 0.9), "worst": max(ratios, key=lambda r: abs(math.log(r))),
            "median |log|": math.exp(statistics.median(logs)),
            "p80 |log|": math.exp(_quantile(logs, 0.8)),
            "within 2x": sum(x <= math.log(2.0) for x in logs) / len(logs)}


def distribution(rows: list[dict]) -> list[dict]:
    """Rows (``algorithm``, ``measured / predicted``) to the table: one line per algorithm
    and one overall."""
    by: dict[str, list] = {}
    for r in rows:
        by.setdefault(r["algorithm"], []).append(r.get("measured / predicted"))
    out = [{"algorithm": a, **summarize(v)} for a, v in by.items()]
    out.append({"algorithm": "overall",
                **summarize([r.get("measured / predicted") for r in rows])})
    return out


def worst_by_algorithm(rows: list[dict]) -> list[dict]:
    """Per algorithm, the row farthest from its prediction either way (|log(measured /
    predicted)|), in the order the algorithms first appear."""
    out: dict[str, dict] = {}
    for r in rows:
        x = r.get("measured / predicted")
        if not x or x <= 0:
            continue
        w = out.get(r["algorithm"])
        if w is None or abs(math.log(x)) > abs(math.log(w["measured / predicted"])):
            out[r["algorithm"]] = r
    return list(out.values())


def verdict(overall: dict) -> list[str]:
    """The ways the overall distribution misses :data:`BOUND` (empty: within it)."""
    if not overall.get("n"):
        return ["no configuration was measured and predicted"]
    out = []
    if math.log(overall["p80 |log|"]) > BOUND["p80_abs_log"]:
        out.append(f"80th percentile of |log(measured / predicted)| is "
                   f"x{overall['p80 |log|']:.2f} (bound x2.00)")
    if math.log(overall["median |log|"]) > BOUND["median_abs_log"]:
        out.append(f"median |log(measured / predicted)| is x{overall['median |log|']:.2f} "
                   f"(bound x1.50)")
    return out


DIST_COLUMNS = ["algorithm", "n", "p10", "p25", "median", "p75", "p90", "worst",
                "median |log|", "within 2x"]
