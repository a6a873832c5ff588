"""Sammon mapping benchmark: the source's setup (uniform random points in [0, 255]^200 -> 3-D,
5 iterations) on the fragment path, beside a numpy reference and the paper's GPU times.

    python benchmarks/sammon.py                  # N = 1,000 / 5,000 / 10,000 (llvmpipe sizes)
    python benchmarks/sammon.py --sizes 20000,100000          # the GPU target (a few minutes)
    python benchmarks/sammon.py --sizes 1000,10000,100000 --torch   # also torch (CUDA)
    python benchmarks/sammon.py --quick          # a few seconds (CI)
    python benchmarks/sammon.py --compare 3 --sizes 2000 --variants none
        # the tiled rows kernel against the previous one-point-per-fragment kernel,
        # interleaved 3 times (for a loaded machine)

Variants (``--variants``): ``rows`` (the tiled update: K = 4 points i per fragment through
the render targets, blocks of ``--tile-jb`` points j, distances by |x_i|^2 + |x_j|^2 - 2 x_i.x_j
with an exact fallback), ``rows-pairs`` (the previous kernel: one point per fragment),
``columns``, ``rows-cached``, ``columns-cached``.

For every N and variant (source layout rows / columns, distances recomputed / cached) it runs
the source's fixed step (eq. 3 with eq. 4's mu, lambda = 0.5) for the given iterations and
reports the wall time per iteration (update passes + device stress sum + the one-float
readback; the median over the iterations after the first), the setup time (distances or their
row sums, and their sum), and the stress before/after. The default adaptive step is run on the
rows variant for the same number of evaluations (stress after). When a variant would exceed
``--budget`` seconds it runs one iteration and the 5-iteration time is extrapolated (marked).

Bounds: a recomputed-distance pair costs 3n + 20 flops (n subtractions, n multiplies and n
additions, then the eq. 3 term), a cached one 4 bytes of dn + ~20 flops. The fragment ceilings
are measured in the same run by the engine's calibration (``shadergpgpu.analysis.cost_model.
calibrate``: ``shaders/engine/calibrate/alu.frag``, four independent vec4 multiply-adds per
iteration, a multiply-add counted as 2 flops; the fetch kernel for texels/s x 16 B), unless
``--gflops`` / ``--gbps`` are given. The ALU bound per iteration is N^2 (3n + 20) / ALU for the
full sweep (the half sweep of the source would halve it but needs atomics) and
N^2 * 4 B / bandwidth for the cached matrix; "of bound" = bound / measured time. The tiled
kernel computes a distance with n multiply-adds (the expansion), so it can pass 100% of this
bound: for the tiled rows the ALU lines also print the flops it executes, N^2 (8 pt + 34)
(pt = texels per point, 4 coordinates each: one vec4 multiply-add = 8 flops per texel and
pair; ~34 for the pair terms, a sqrt or a division counted as 1), as a fraction of the ALU
ceiling, and the texels of X it fetches per second, N^2 pt (K + JB) / (K JB) (K points i per
fragment, JB points j per block: the register tile), against the fetch ceiling. On an NVIDIA
renderer a recomputed variant at N >= 20,000 under 50% of the bound prints a MISSED line (the
project's performance target). ``--tile-variant`` picks a preset of
``sammon.TILE_VARIANTS`` (``benchmarks/diag/sammon_variants.py`` times them all).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.analysis.reports.common import markdown_table  # noqa: E402
from shadergpgpu.algorithms.sammon import SammonTuning, TILE_VARIANTS  # noqa: E402
from shadergpgpu.algorithms.sammon import Sammon  # noqa: E402

#: The performance target: recomputed variants at N >= TARGET_N reach this fraction of the
#: ALU bound on the NVIDIA GPU.
TARGET_FRACTION, TARGET_N = 0.5, 20000

#: Table 1 of source 003: ms for 5 iterations (CPU 1 thread, CPU 16 threads, RX Vega 56).
PAPER_MS = {1000: (142.46, 16.33, 7.61), 5000: (3556, 398, 88.4), 10000: (14252, 1498, 279),
            50000: (370820, 38433, 6343), 100000: (1462767, 152011, 25245)}


def numpy_iteration(X, Y, mu, block=1024):
    """One float64 iteration of eq. 3 recomputing dn (blocked, BLAS): (new Y, stress of Y)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    sx = (X ** 2).sum(1)
    sy = (Y ** 2).sum(1)
    G = np.zeros_like(Y)
    num = den = 0.0
    for a in range(0, len(X), block):
        b = min(a + block, len(X))
        dn = np.sqrt(np.maximum(sx[a:b, None] + sx[None, :] - 2 * X[a:b] @ X.T, 0.0))
        dm = np.sqrt(np.maximum(sy[a:b, None] + sy[None, :] - 2 * Y[a:b] @ Y.T, 0.0))
        idx = np.arange(a, b)
        dn[idx - a, idx] = 0.0
        ok = dn > 0
        safe = np.where(ok, dn, 1.0)
        num += np.where(ok, (dn - dm) ** 2 / safe, 0.0).sum()
        den += dn.sum()
        W = np.where(ok, (dn - dm) / (safe * np.maximum(dm, 1e-300)), 0.0)
        G[a:b] = W.sum(1)[:, None] * Y[a:b] - W @ Y
    return Y + mu * G, num / den, den


def torch_iteration_s(X, Y, repeat=2):
    """Seconds per iteration of the same update in torch (CUDA, float32, cdist per block)."""
    import torch
    dev = torch.device("cuda")
    Xt = torch.tensor(X, dtype=torch.float32, device=dev)
    Yt = torch.tensor(Y, dtype=torch.float32, device=dev)
    n = len(X)
    block = max(1, min(n, int(2 ** 28 // n)))

    def once():
        G = torch.zeros_like(Yt)
        num = torch.zeros((), device=dev)
        for a in range(0, n, block):
            b = min(a + block, n)
            dn = torch.cdist(Xt[a:b], Xt, compute_mode="donot_use_mm_for_euclid_dist")
            diff = Yt[a:b, None, :] - Yt[None, :, :]
            dm = diff.norm(dim=-1)
            ok = dn > 0
            safe = torch.where(ok, dn, torch.ones_like(dn))
            w = torch.where(ok, (dn - dm) / (safe * dm.clamp_min(1e-30)), torch.zeros_like(dn))
            num = num + torch.where(ok, (dn - dm) ** 2 / safe, torch.zeros_like(dn)).sum()
            G[a:b] = (w[:, :, None] * diff).sum(1)
        return G, num
    once()
    torch.cuda.synchronize()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        once()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def check_eval(dev, n, dims, layout, chunks=None, loop_budget=None, samples=4):
    """One timed evaluation at size n, checked on a few rows against float64 numpy.

    Returns a row: seconds for the update passes + stress sum + readback, GPU ms per phase
    (when the device times passes), the GL error flag, and the largest relative error of the
    sampled rows of the direction G and the stress terms S (each row computed on the host in
    float64 from the same float32 inputs).
    """
    from shadergpgpu.algorithms import sammon as sm
    rng = np.random.default_rng(n)
    X = rng.uniform(0, 255, (n, dims)).astype(np.float32)
    Y0 = rng.uniform(0, 255, (n, 3)).astype(np.float32)
    own = None
    if loop_budget:  # a device with a forced loop cap: the engine cuts the sweep further
        own = dev = sg.Device(timing=dev.timing, limits=sg.Limits(loop_cap=int(loop_budget)),
                              tuning=dev.tuning(SammonTuning))
    try:
        est = Sammon(n_components=3, n_iter=1, step="source", init=Y0, layout=layout,
                     cache=False, split=chunks or "auto", tol=None, device=dev)
        dev.counter.reset()
        t0 = time.perf_counter()
        run = sm.run.SammonRun(dev, X, Y0.astype(np.float64), est)
        setup = time.perf_counter() - t0
        try:
            dev.ctx.error  # clear a stale flag; what is read below belongs to this evaluation
            e = run.evaluate(run.Y[0], run.Y[1], run.G[0], run.mu_source)
            t_eval = run.eval_s[-1]
            err_flag = dev.ctx.error
            G = run.G[0].get()
            S = run.S.get()[:, 0]
            Yb = run.Y[0].get()
            idx = np.unique(np.linspace(0, n - 1, samples).astype(int))
            Xd, Yd = X.astype(np.float64), Y0.astype(np.float64)
            errs_g, errs_s = [], []
            for i in idx:
                dn = np.sqrt(((Xd - Xd[i]) ** 2).sum(1))
                dy = Yd[i] - Yd
                dm = np.sqrt((dy ** 2).sum(1))
                ok = dn > 0
                w = np.where(ok, (dn - dm) / (np.where(ok, dn, 1) * np.maximum(dm, 1e-300)), 0)
                g = (w[:, None] * dy).sum(0)
                srow = np.where(ok, (dn - dm) ** 2 / np.where(ok, dn, 1), 0).sum()
                errs_g.append(np.abs(G[i] - g).max() / max(np.abs(g).max(), 1e-30))
                errs_s.append(abs(S[i] - srow) / srow)
            snap = dev.counter.snapshot()
            return {"N": n, "variant": f"{layout} check", "chunks": run.split,
                    "s/iter": t_eval, "setup s": setup, "stress before": e,
                    "gl error": err_flag, "Y intact": bool(np.array_equal(Yb, Y0)),
                    "max rel err G rows": float(max(errs_g)),
                    "max rel err S rows": float(max(errs_s)),
                    "gpu ms update": snap.get("sammon/update", {}).get("gpu_ms")}
        finally:
            run.release()
    finally:
        if own is not None:
            own.release()


def _tiled(dev, on: bool):
    """Context: the rows sweep uses the tiled kernel (True) or the previous pair kernel."""
    return dev.tuned(SammonTuning, tile_rows=bool(on))


def run_variant(dev, X, Y0, layout, cache, iters, budget, step="source", split="auto",
                tiled=True):
    """(row dict) for one fit; extrapolates from one iteration when over budget."""
    with _tiled(dev, tiled):
        return _run_variant(dev, X, Y0, layout, cache, iters, budget, step, split)


def _run_variant(dev, X, Y0, layout, cache, iters, budget, step, split):
    n = len(X)
    probe = None
    est_iter = None
    # Predict from a one-iteration fit when the size is large.
    if n >= 10000:
        probe = Sammon(n_components=3, n_iter=1, step=step, learning_rate=0.5, init=Y0,
                       layout=layout, cache=cache, split=split, tol=None, device=dev).fit(X)
        est_iter = float(np.median(probe.timings_["eval_s"]))
        total = probe.timings_["setup_s"] + (iters + 1) * est_iter
        if total > budget:
            return {"iters_run": 1, "setup_s": probe.timings_["setup_s"], "s_per_iter": est_iter,
                    "stress_before": probe.stress_history_[0], "stress_after": None,
                    "extrapolated": True, "split": probe.split_, "cached": probe.cached_,
                    "tile": _tile_of(probe)}
    s = Sammon(n_components=3, n_iter=iters, step=step, learning_rate=0.5, init=Y0,
               layout=layout, cache=cache, split=split, tol=None, device=dev).fit(X)
    ev = s.timings_["eval_s"]
    per = float(np.median(ev[1:] if len(ev) > 2 else ev))
    return {"iters_run": iters, "setup_s": s.timings_["setup_s"], "s_per_iter": per,
            "stress_before": s.stress_history_[0], "stress_after": s.stress_,
            "extrapolated": False, "split": s.split_, "cached": s.cached_,
            "embedding": s.embedding_, "evals": s.n_iter_, "tile": _tile_of(s)}


def _tile_of(s):
    """(K, JB, pt) of a fit's tiled sweep, or None."""
    if not getattr(s, "tiled_", False):
        return None
    pt = -(-(-(-s.n_features_in_ // 4)) // s.tile_unroll_) * s.tile_unroll_
    return s.tile_points_, s.tile_jb_, pt


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="N = 300 and 1,000 only")
    p.add_argument("--sizes", default="1000,5000,10000")
    p.add_argument("--dims", type=int, default=200)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--variants", default="rows,columns,rows-cached",
                   help="comma list of rows (tiled), rows-pairs (previous kernel), columns, "
                        "rows-cached, columns-cached; 'none' for --compare only")
    p.add_argument("--compare", type=int, default=0, metavar="R",
                   help="time the tiled rows kernel against the previous pair kernel, "
                        "interleaved R times per size (median s/iter of each)")
    p.add_argument("--tile-variant", choices=sorted(TILE_VARIANTS), default=None,
                   help="preset of the tiled kernel (K, JB, s in w, unroll, interleave); "
                        "default: SammonTuning's")
    p.add_argument("--tile-jb", type=int, choices=(8, 16, 32), default=None,
                   help="points j per block of the tiled kernel (after --tile-variant)")
    p.add_argument("--tile-fragments", type=int, default=SammonTuning().tile_fragments,
                   help="fragments per tiled pass the j range is parted for (GPU occupancy)")
    p.add_argument("--numpy-max", type=int, default=10000, help="largest N for numpy")
    p.add_argument("--budget", type=float, default=120.0, help="seconds per variant")
    p.add_argument("--torch", action="store_true", help="also time torch (CUDA) per iteration")
    p.add_argument("--torch-max", type=int, default=100000)
    p.add_argument("--split-sweep", default="", help="N:k1,k2,..: time other chunk counts")
    p.add_argument("--gflops", type=float, default=None,
                   help="fragment ALU ceiling, GFLOP/s (default: measured in this run)")
    p.add_argument("--gbps", type=float, default=None,
                   help="fragment fetch ceiling, GB/s (default: measured in this run)")
    p.add_argument("--check", default="",
                   help="N:layout[:chunks[:loop_budget]];...: single checked evaluations")
    p.add_argument("--timing", action="store_true", help="GPU timer queries per pass")
    p.add_argument("--out", default=None, help="write the table (markdown) here")
    a = p.parse_args(argv)
    a.sizes_given = any(x.startswith("--sizes") for x in (argv or sys.argv[1:]))
    sizes = [300, 1000] if a.quick else [int(s) for s in a.sizes.split(",")]
    dev = sg.Device(timing=a.timing)
    t = SammonTuning.variant(a.tile_variant) if a.tile_variant else dev.tuning(SammonTuning)
    t = t.replace(tile_jb=a.tile_jb or t.tile_jb, tile_fragments=a.tile_fragments)
    dev.tune(t)
    a.tile_jb = t.tile_jb
    nvidia = "nvidia" in (dev.caps.renderer + " " + dev.caps.vendor).lower()
    gflops, gbps, how = a.gflops, a.gbps, "given"
    if gflops is None or gbps is None:
        from shadergpgpu.analysis.cost_model import calibrate
        sp = calibrate(dev, quick=True, save=False)["speeds"]
        gflops = gflops or sp["alu_gflops"]
        gbps = gbps or 16 * sp["texel_rate_gtexels"]
        how = "measured in this run (engine calibration: calibrate/alu.frag, calibrate/fetch.frag)"
    print(f"# Sammon benchmark  device: {dev.caps.renderer}  date: {time.strftime('%Y-%m-%d')}")
    print(f"# uniform [0,255]^{a.dims} -> 3-D, {a.iters} iterations, lambda = 0.5 (--compare: "
          f"1000 N); start: uniform [0,255]^3; tiled kernel "
          f"{t.variant_name or '(custom)'}: {t.tile_max} points i per "
          f"fragment (fewer with fewer render targets), blocks of {a.tile_jb} points j, s in "
          f"g's w lane {t.tile_s_lane}, unroll {t.tile_unroll}, interleaved "
          f"{t.tile_interleave}, ~{a.tile_fragments} fragments per pass")
    print(f"# ceilings {how}: ALU {gflops:.1f} GFLOP/s, fetch {gbps:.1f} GB/s")
    rows = []
    for spec in filter(None, a.check.split(";")):
        parts = spec.split(":")
        n, layout = int(parts[0]), parts[1]
        chunks = int(parts[2]) if len(parts) > 2 and parts[2] else None
        budget = int(parts[3]) if len(parts) > 3 else None
        r = check_eval(dev, n, a.dims, layout, chunks, budget)
        r["bound s/iter"] = n * n * (3 * a.dims + 20) / (gflops * 1e9)
        r["of bound"] = r["bound s/iter"] / r["s/iter"]
        if n in PAPER_MS:
            r["paper GPU 5 iters s"] = PAPER_MS[n][2] / 1000
        rows.append(r)
        print(markdown_table(rows[-1:]), end="", flush=True)
    if a.check and not a.sizes_given:
        sizes = []
    for n in sizes:
        rng = np.random.default_rng(n)
        X = rng.uniform(0, 255, (n, a.dims)).astype(np.float32)
        Y0 = rng.uniform(0, 255, (n, 3))
        ref = None
        if n <= a.numpy_max:
            sum_dn = None
            Y = Y0.copy()
            t0 = time.perf_counter()
            Y1, e0, sum_dn = numpy_iteration(X, Y, 0.0)
            t_np = time.perf_counter() - t0
            mu = 2 * 0.5 / sum_dn
            Y = Y0.copy()
            for _ in range(a.iters):
                Y, _, _ = numpy_iteration(X, Y, mu)
            e_end = numpy_iteration(X, Y, 0.0)[1]
            ref = {"Y": Y, "e0": e0, "e_end": e_end, "s_per_iter": t_np}
        t_torch = None
        if a.torch and n <= a.torch_max:
            try:
                t_torch = torch_iteration_s(X, Y0)
            except Exception as exc:  # no torch / no CUDA: leave the column empty
                print(f"# torch skipped: {exc}")
        flops_pair = 3 * a.dims + 20
        bound_recompute = n * n * flops_pair / (gflops * 1e9)
        bound_cached = n * n * 4 / (gbps * 1e9)
        for var in [v for v in a.variants.split(",") if v and v != "none"]:
            layout = "columns" if var.startswith("columns") else "rows"
            cache = var.endswith("-cached")
            if cache and 4 * n * n > (1 << 31):
                continue
            if cache:
                try:
                    dev.layout((n, n), True, "row")
                except Exception:
                    continue
            r = run_variant(dev, X, Y0, layout, cache, a.iters, a.budget,
                            tiled=var != "rows-pairs")
            bound = bound_cached if cache else bound_recompute
            err = None
            if ref is not None and "embedding" in r:
                err = float(np.abs(r["embedding"] - ref["Y"]).max() / np.abs(ref["Y"]).max())
            paper = PAPER_MS.get(n)
            tile = r.get("tile")
            rows.append({
                "N": n, "variant": var, "chunks": r["split"], "tile K,JB,pt": tile,
                "s/iter": r["s_per_iter"],
                "5 iters s": r["s_per_iter"] * 5,
                "extrap.": "yes" if r["extrapolated"] else "",
                "setup s": r["setup_s"],
                "bound s/iter": bound,
                "of bound": bound / r["s_per_iter"],
                "stress before": r["stress_before"], "stress after": r["stress_after"],
                "numpy s/iter": ref["s_per_iter"] if ref else None,
                "numpy stress after": ref["e_end"] if ref else None,
                "max rel err vs numpy": err,
                "torch s/iter": t_torch,
                "paper GPU 5 iters s": paper[2] / 1000 if paper else None,
                "paper CPU16 5 iters s": paper[1] / 1000 if paper else None,
            })
            print(markdown_table(rows[-1:]), end="", flush=True)
        # the default adaptive step: stress after the same number of evaluations
        if "rows" in a.variants.split(",") or "rows-cached" in a.variants.split(","):
            per = [r for r in rows if r["N"] == n and r["variant"].startswith("rows")]
            est_total = min(r["s/iter"] for r in per) * (a.iters + 2) if per else 0
            if est_total <= a.budget:
                cache = any(r["variant"] == "rows-cached" for r in per)
                s = Sammon(n_components=3, n_iter=a.iters + 1, init=Y0, tol=None, cache=cache,
                           device=dev).fit(X)
                rows.append({"N": n, "variant": "adaptive" + ("-cached" if cache else ""),
                             "chunks": s.split_, "s/iter": float(np.median(s.timings_["eval_s"])),
                             "stress before": s.stress_history_[0],
                             "stress after": s.stress_})
                print(markdown_table(rows[-1:]), end="", flush=True)
    if a.compare:
        rows += compare_kernels(dev, sizes, a, gflops)
    if a.split_sweep:
        n_s, ks = a.split_sweep.split(":")
        n = int(n_s)
        rng = np.random.default_rng(n)
        X = rng.uniform(0, 255, (n, a.dims)).astype(np.float32)
        Y0 = rng.uniform(0, 255, (n, 3))
        for k in ks.split(","):
            r = run_variant(dev, X, Y0, "rows", False, 3, a.budget, split=int(k))
            rows.append({"N": n, "variant": f"rows split>={k}", "chunks": r["split"],
                         "s/iter": r["s_per_iter"]})
            print(markdown_table(rows[-1:]), end="", flush=True)
    cols = ["N", "variant", "chunks", "tile K,JB,pt", "s/iter", "runs s/iter", "5 iters s",
            "extrap.", "setup s", "bound s/iter", "of bound", "ALU GFLOP/s", "stress before",
            "stress after", "numpy s/iter", "numpy stress after", "max rel err vs numpy",
            "torch s/iter", "paper GPU 5 iters s", "paper CPU16 5 iters s", "gl error",
            "Y intact", "max rel err G rows", "max rel err S rows", "gpu ms update"]
    table = markdown_table(rows, cols)
    print("\n" + table)
    # ratios that matter, measured in this run
    print("# ratios")
    for n in sorted({r["N"] for r in rows}):
        rs = {r["variant"]: r for r in rows if r["N"] == n}
        line = [f"N={n}:"]
        if "rows" in rs and "columns" in rs:
            line.append(f"columns/rows time {rs['columns']['s/iter'] / rs['rows']['s/iter']:.2f}")
        if "rows" in rs and "rows-cached" in rs:
            line.append(f"recompute/cached {rs['rows']['s/iter'] / rs['rows-cached']['s/iter']:.1f}x")
        best = min((r for r in rs.values() if r.get("5 iters s")), key=lambda r: r["s/iter"],
                   default=None)
        if best is not None:
            if best.get("numpy s/iter"):
                line.append(f"numpy/best {best['numpy s/iter'] / best['s/iter']:.1f}x")
            if best.get("torch s/iter"):
                line.append(f"best/torch {best['s/iter'] / best['torch s/iter']:.1f}x")
            if best.get("paper GPU 5 iters s"):
                line.append(f"best/paper GPU {best['5 iters s'] / best['paper GPU 5 iters s']:.2f}x")
            line.append(f"best of bound {best['of bound']:.2f}")
        print(" ".join(line))
    # the performance target: fraction of the ALU bound of the recomputed variants
    print("# ALU bound (fraction of the fragment ALU ceiling measured above)")
    for r in rows:
        if r.get("of bound") is None or "cached" in r["variant"] or "check" in r["variant"]:
            continue
        line = (f"N={r['N']} {r['variant']}: {r['s/iter']:.4g} s/iter, bound "
                f"{r['bound s/iter']:.4g} s/iter, {r['of bound']:.1%} of the ALU bound")
        if r.get("tile K,JB,pt"):
            k, jb, pt = r["tile K,JB,pt"]
            pairs = r["N"] ** 2 / r["s/iter"]
            ex = pairs * (8 * pt + 34) / 1e9
            tex = pairs * pt * (k + jb) / (k * jb) / 1e9
            line += (f"; executes {ex:.0f} GFLOP/s = {ex / gflops:.1%} of the ALU ceiling "
                     f"(8 pt + 34 flops per pair), fetches {tex:.1f} Gtexel/s of X = "
                     f"{tex / (gbps / 16):.0%} of the fetch ceiling (K = {k}, JB = {jb})")
        print(line)
        if nvidia and r["N"] >= TARGET_N and r["variant"] in ("rows", "rows tiled") \
                and r["of bound"] < TARGET_FRACTION:
            print(f"MISSED: Sammon {r['variant']} at N={r['N']} reaches {r['of bound']:.1%} "
                  f"of the ALU bound (target {TARGET_FRACTION:.0%} at N >= {TARGET_N:,})")
    if a.out:
        with open(a.out, "w") as f:
            f.write(table)
    return 0


def alu_gflops(dev, repeats: int = 3) -> float:
    """The fragment ALU ceiling now (GFLOP/s): the engine's calibration kernel
    (``shaders/engine/calibrate/alu.frag``: 4 independent vec4 multiply-adds per iteration,
    32 flops), best of ``repeats``."""
    from shadergpgpu.engine.kernels import Kernel
    k = dev.resource("bench/alu", lambda: Kernel(
        "engine/calibrate/alu.frag", uniforms={"n_iter": "int"},
        loop=lambda a: a.uniforms["n_iter"], name="calibrate/alu"))
    side, iters = (128, 256) if dev.is_software else (1024, 8192)
    out = dev.empty((side, 4 * side))
    try:
        best = None
        for _ in range(repeats + 1):
            dev.finish()
            t0 = time.perf_counter()
            dev.run(k, out, uniforms={"n_iter": iters})
            dev.finish()
            t = time.perf_counter() - t0
            best = t if best is None else min(best, t)
    finally:
        out.release()
    return side * side * iters * 32 / best / 1e9


def compare_kernels(dev, sizes, a, gflops) -> list:
    """The tiled rows kernel against the previous pair kernel at each size, interleaved
    ``a.compare`` times (pair, tiled, pair, tiled, ...): median s/iter, fraction of the ALU
    bound, speed-up, and the largest difference of the two embeddings."""
    out = []
    for n in sizes:
        rng = np.random.default_rng(n)
        X = rng.uniform(0, 255, (n, a.dims)).astype(np.float32)
        Y0 = rng.uniform(0, 255, (n, 3))
        lam = 1000.0 * n       # a step that moves the points (eq. 4's lambda = 0.5 barely does)
        times = {False: [], True: []}
        ceilings = []
        emb = {}
        for _ in range(a.compare):
            ceilings.append(alu_gflops(dev))      # the machine may be loaded: measure it too
            for tiled in (False, True):
                with _tiled(dev, tiled):
                    s = Sammon(n_components=3, n_iter=a.iters, step="source",
                               learning_rate=lam, init=Y0, layout="rows", cache=False,
                               tol=None, device=dev).fit(X)
                ev = s.timings_["eval_s"]
                times[tiled].append(float(np.median(ev[1:] if len(ev) > 2 else ev)))
                emb[tiled] = s.embedding_.astype(np.float64)
        ceiling = float(np.median(ceilings))
        bound = n * n * (3 * a.dims + 20) / (ceiling * 1e9)
        diff = float(np.abs(emb[True] - emb[False]).max() / np.abs(emb[False]).max())
        moved = float(np.abs(emb[False] - Y0).max() / np.abs(Y0).max())
        med = {t: float(np.median(v)) for t, v in times.items()}
        for tiled in (False, True):
            out.append({"N": n, "variant": "rows tiled" if tiled else "rows pairs (previous)",
                        "s/iter": med[tiled], "bound s/iter": bound,
                        "of bound": bound / med[tiled], "ALU GFLOP/s": ceiling,
                        "runs s/iter": " ".join(f"{v:.3g}" for v in times[tiled])})
            print(markdown_table(out[-1:]), end="", flush=True)
        print(f"# N={n}: ALU ceiling measured between the runs "
              f"{' '.join(f'{c:.1f}' for c in ceilings)} GFLOP/s (median used)")
        print(f"# N={n}: tiled / previous speed-up {med[False] / med[True]:.2f}x "
              f"(interleaved x{a.compare}); embeddings after {a.iters} steps differ by "
              f"{diff:.2e} relative (the steps moved the points by {moved:.2e})")
    return out


if __name__ == "__main__":
    sys.exit(main())
