"""Time the tiled Sammon update's variants (``sammon.TILE_VARIANTS``: K points i per fragment,
JB points j per block, s in g's w lane, coordinate unroll) and check each against float64.

    python benchmarks/diag/sammon_variants.py                      # GPU: N = 20,000 (all) and 50,000 (top)
    python benchmarks/diag/sammon_variants.py --sizes 1500 --iters 1 --variants k4j16,k8j16w   # llvmpipe

Data as ``benchmarks/sammon.py`` (uniform [0, 255]^n, n = 200, start uniform [0, 255]^3, the
source's fixed step). Per variant: one warm-up evaluation (compiles), then ``--iters`` timed
evaluations from the same positions (wall time of the update passes + stress sum + one-float
readback: the benchmark's s/iteration). Printed per variant:
  s/iter        median of the timed evaluations
  of bound      N^2 (3n + 20) flop / ALU ceiling / s/iter: the benchmark's "of bound" (its
                flop count of a pair: n subtractions, n multiplies, n adds and ~20 for eq. 3;
                the tiled kernels do n multiply-adds per pair instead, see below)
  exec GFLOP/s  flops the tiled kernel executes: N^2 (8 pt + 34), pt = padded texels per point
                (one vec4 multiply-add = 8 flops per texel and pair, ~34 for the pair terms,
                a sqrt or a division counted as 1), and its fraction of the ALU ceiling
  Gtexel/s      X texels fetched per second: N^2 pt (K + JB) / (K JB) (the fetch ceiling on the
                H200 is ~21 Gtexel/s; see docs/performance.md). The current kernel (k4j16)
                fetches 0.31 texels per pair and coordinate texel, K = 8 with JB = 16 0.19.
  err f64       largest relative error of g (vs max |g| of the row) and of s against float64 on
                --rows sampled points (computed on the host from the same float32 inputs)
  vs k4j16      largest difference of all g and s from the default variant's, relative
A variant that fails its check prints WRONG (exit status 1). The ALU ceiling is the engine's
calibration (as benchmarks/sammon.py), unless --gflops is given. Sizes after the first run the
default and the --top fastest variants of the first size, within --budget seconds.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import sammon as sm  # noqa: E402
from shadergpgpu.engine.limits import ceil_div  # noqa: E402

DEFAULT = "k4j16"
PAIR_TERM_FLOPS = 34


def host_rows(Xc, Y, idx, dm_floor):
    """float64 (g, s) of rows idx: eq. 3's direction and eq. 1's row terms."""
    from shadergpgpu.algorithms.sammon import host_row
    Xd, Yd = Xc.astype(np.float64), Y.astype(np.float64)
    rows = [host_row(Xd, Yd, i, dm_floor) for i in idx]
    return np.array([r["g"] for r in rows]), np.array([r["s"] for r in rows])


def run_variant(dev, name, X, Y0, sum_dn, iters):
    dev.tune(sm.SammonTuning.variant(name))
    est = sm.Sammon(n_components=Y0.shape[1], n_iter=1, step="source", init=Y0,
                    layout="rows", cache=False, tol=None, device=dev)
    run = sm.run.SammonRun(dev, X, Y0.astype(np.float64), est, sum_dn=sum_dn)
    try:
        assert run.tiled
        t0 = time.perf_counter()
        run.evaluate(run.Y[0], run.Y[1], run.G[0], run.mu_source)
        warm = time.perf_counter() - t0
        for _ in range(iters):
            run.evaluate(run.Y[0], run.Y[1], run.G[0], run.mu_source)
        times = run.eval_s[1:]
        G = run.G[0].get().astype(np.float64)
        S = run.S.get().reshape(len(X), -1)[:, 0].astype(np.float64)
        info = dict(k=run.k_pts, jb=run.tile_jb, s_lane=run.tile_s_lane,
                    unroll=run.tile_unroll, il=run.tile_il, chunks=len(run.chunks),
                    n_part=run.n_part,
                    pt=ceil_div(ceil_div(X.shape[1], 4), run.tile_unroll) * run.tile_unroll,
                    dm_floor=run.dm_floor, sum_dn=run.sum_dn, xc=run._xc)
        return float(np.median(times)), warm, G, S, info
    finally:
        run.release()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="20000,50000")
    p.add_argument("--dims", type=int, default=200)
    p.add_argument("--iters", type=int, default=2, help="timed evaluations per variant")
    p.add_argument("--variants", default=",".join(sm.TILE_VARIANTS))
    p.add_argument("--top", type=int, default=2, help="variants besides the default at the "
                   "sizes after the first (the fastest of the first size)")
    p.add_argument("--rows", type=int, default=16, help="rows checked against float64")
    p.add_argument("--budget", type=float, default=80.0, help="seconds (stops adding runs)")
    p.add_argument("--gflops", type=float, default=None, help="ALU ceiling (GFLOP/s)")
    a = p.parse_args(argv)
    t_start = time.perf_counter()
    dev = sg.Device()
    names = [v for v in a.variants.split(",") if v]
    for v in names:
        if v not in sm.TILE_VARIANTS:
            raise SystemExit(f"unknown variant {v!r}; one of {sorted(sm.TILE_VARIANTS)}")
    if DEFAULT in names:
        names.remove(DEFAULT)
    names.insert(0, DEFAULT)
    gflops = a.gflops
    if gflops is None:
        from shadergpgpu.analysis.cost_model import calibrate
        gflops = calibrate(dev, quick=True, save=False)["speeds"]["alu_gflops"]
    saved = dev.tuning(sm.SammonTuning)
    print(f"# {dev.caps.renderer} | max outputs {dev.max_outputs} | ALU ceiling "
          f"{gflops:.1f} GFLOP/s | n = {a.dims}, 3-D | default now: {saved.variant_name or '(custom)'}")
    print("| N | variant | K | JB | s in w | unroll | interleaved | chunks x parts | s/iter | "
          "warm-up s | of bound | exec GFLOP/s (of ALU) | Gtexel/s | err g f64 | err s f64 | "
          "vs k4j16 | ok |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    bad = 0
    order = None
    try:
        for si, n in enumerate(int(s) for s in a.sizes.split(",") if s):
            rng = np.random.default_rng(n)
            X = rng.uniform(0, 255, (n, a.dims)).astype(np.float32)
            Y0 = rng.uniform(0, 255, (n, 3)).astype(np.float32)
            # sum dn once per size (the setup's row sums, checked against the host)
            dev.tune(sm.SammonTuning.variant(DEFAULT))
            est = sm.Sammon(n_components=3, n_iter=1, step="source", init=Y0, cache=False,
                            tol=None, device=dev)
            t0 = time.perf_counter()
            setup = sm.run.SammonRun(dev, X, Y0.astype(np.float64), est)
            sum_dn = setup.sum_dn
            setup.release()
            t_setup = time.perf_counter() - t0
            print(f"# N = {n:,}: setup (row sums) {t_setup:.2f} s, sum dn {sum_dn:.6e}")
            todo = names if order is None else [DEFAULT] + [v for v in order
                                                            if v != DEFAULT][:a.top]
            ref = None
            idx = np.unique(np.linspace(0, n - 1, a.rows).astype(int))
            host = None
            timed = {}
            bound = n * n * (3 * a.dims + 20) / (gflops * 1e9)
            for v in todo:
                elapsed = time.perf_counter() - t_start
                if ref is not None and elapsed + (a.iters + 2) * ref["t"] > a.budget:
                    print(f"# N = {n:,} {v}: skipped (budget {a.budget:.0f} s)")
                    continue
                t, warm, G, S, info = run_variant(dev, v, X, Y0, sum_dn, a.iters)
                timed[v] = t
                if host is None:
                    host = host_rows(info["xc"], Y0, idx, info["dm_floor"])
                hg, hs = host
                eg = float((np.abs(G[idx, :3] - hg).max(axis=1) /
                            np.maximum(np.abs(hg).max(axis=1), 1e-30)).max())
                es = float((np.abs(S[idx] - hs) / np.maximum(hs, 1e-30)).max())
                if ref is None:
                    ref = {"G": G, "S": S, "t": t}
                    dv = 0.0
                else:
                    dv = float(max(np.abs(G - ref["G"]).max() / np.abs(ref["G"]).max(),
                                   (np.abs(S - ref["S"]) / np.maximum(ref["S"], 1e-30)).max()))
                ok = eg < 1e-3 and es < 1e-4 and dv < 1e-3
                bad += not ok
                k, jb, pt = info["k"], info["jb"], info["pt"]
                ex = n * n * (8 * pt + PAIR_TERM_FLOPS) / t / 1e9
                tex = n * n * pt * (k + jb) / (k * jb) / t / 1e9
                print(f"| {n} | {v} | {k} | {jb} | {'yes' if info['s_lane'] else 'no'} | "
                      f"{info['unroll']} | {'yes' if info['il'] else 'no'} | "
                      f"{info['chunks']} x {info['n_part']} | {t:.4g} | "
                      f"{warm:.3g} | {bound / t:.1%} | {ex:.0f} ({ex / gflops:.0%}) | "
                      f"{tex:.1f} | {eg:.1e} | {es:.1e} | {dv:.1e} | "
                      f"{'ok' if ok else 'WRONG'} |", flush=True)
            if order is None:
                order = sorted(timed, key=timed.get)
            if timed:
                best = min(timed, key=timed.get)
                print(f"# N = {n:,}: fastest {best} {timed[best]:.4g} s/iter = "
                      f"{bound / timed[best]:.1%} of the bound; {DEFAULT} "
                      f"{timed.get(DEFAULT, float('nan')):.4g} s/iter "
                      f"(x{timed.get(DEFAULT, float('nan')) / timed[best]:.2f})")
    finally:
        dev.tune(saved)
    print(f"# total {time.perf_counter() - t_start:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
