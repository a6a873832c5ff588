"""Pinpoint the Sammon setup defect: the row sums of dn (``sammon/rowsum-rows``) came back as zeros
on the H200 at N = 100,000, n = 200 (no GL error), right at 60,000 x 200 and 100,000 x 64.

    python benchmarks/diag/sammon_rowsum.py                 # the failing size, ~60 s on an H200
    python benchmarks/diag/sammon_rowsum.py --n 3000 --pass-work 2e7   # a quick run anywhere (llvmpipe)

Stages (each prints the row sums of a few points against float64 numpy):
  1 math      the same kernel, texture, uniforms and chunk passes, drawn only over the texture
              rows of V that hold the checked points (a few hundred fragments: each pass is
              short), a wait after every pass. Wrong here = an index / size problem in the
              kernel at this size (the 2^24 / 2^31 suspects); right = the arithmetic is sound.
  2 synced    the whole setup chain (every fragment), dev.finish() after every pass: what the
              fit does now (SammonTuning.sync_work). Prints each pass's wall time.
  3 unsynced  the whole chain queued with no wait before the readback: the old setup (the
              failing run queued ~28 s of passes at once). Run last: if the driver resets the
              context here, nothing after it is trusted.
  4 fit       (not by default; ~40 s at 100,000 x 200 on an H200) the library's own path:
              Sammon(n_iter=1, step="source", cache=False).fit(X) with the setup's waits and
              its spot checks of the row sums and of the first update (they raise on a wrong
              row); prints the setup and update times and the stress.
    python benchmarks/diag/sammon_rowsum.py --stages 4
Reading: 1 right + 2 right + 3 wrong -> the queued work is the cause and the waits are the fix.
1 right + 2 wrong -> single passes of this length fail (lower SammonTuning.pass_work).
1 wrong -> the kernel (the printed intermediates say which quantity).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import sammon as sm  # noqa: E402
from shadergpgpu.engine.layout import Layout  # noqa: E402


def host_rowsums(Xc: np.ndarray, idx) -> np.ndarray:
    Xd = Xc.astype(np.float64)
    return np.array([np.sqrt(((Xd - Xd[i]) ** 2).sum(axis=1)).sum() for i in idx])


def report(tag, got, ref, idx, extra=""):
    rel = np.abs(got - ref) / np.maximum(ref, 1e-30)
    ok = bool((rel <= 1e-4).all())
    print(f"[{tag}] {'RIGHT' if ok else 'WRONG'}  max rel err {rel.max():.2e}  {extra}")
    for i, g, r in zip(idx, got, ref):
        print(f"    row {i:>7}: device {g:.7g}   numpy {r:.7g}")
    return ok


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--dims", type=int, default=200)
    p.add_argument("--stages", default="1,2,3")
    p.add_argument("--pass-work", type=float, default=None,
                   help="override SammonTuning.pass_work (more, shorter chunks)")
    a = p.parse_args(argv)
    stages = {int(s) for s in a.stages.split(",") if s}
    t_all = time.perf_counter()
    dev = sg.Device()
    if a.pass_work:
        dev.tune(sm.SammonTuning, pass_work=int(a.pass_work), sync_work=int(a.pass_work))
    tuning = dev.tuning(sm.SammonTuning)
    n, d = a.n, a.dims
    rng = np.random.default_rng(n)
    X = rng.uniform(0, 255, (n, d)).astype(np.float32)   # benchmarks/sammon.py's data
    X64 = X.astype(np.float64)
    Xc = (X64 - X64.mean(axis=0)).astype(np.float32)     # as sammon.SammonRun centres it
    XA = dev.array(Xc, packed=True, order="row", name="X")
    w = min(max(1, math.isqrt(n - 1) + 1), dev.max_texture_size)
    vlay = Layout(n, 1, True, "row", w)
    V = dev.alloc(vlay)
    chunks = sm.sweep_chunks(n, d, "rows", 1, tuning=tuning)
    works = [sm.chunk_work(n, d, "rows", nb) for _, nb in chunks]
    kern = sm.ROW_SUMS["rows"]
    lx = XA.layout
    print(f"# device {dev.caps.renderer} | max texture {dev.max_texture_size} | loop cap "
          f"{dev.loop_cap} | float blending {dev.float_blending}")
    print(f"# N = {n:,}, n = {d}: N*n = {n * d:,} ({'>' if n * d > 2 ** 24 else '<='} 2^24), "
          f"N^2 = {n * n:,} ({'>' if n * n > 2 ** 31 else '<='} 2^31)")
    print(f"# X: grid {lx.grid_h} x {lx.grid_w} texels, texture {lx.tex_w} x {lx.tex_h} "
          f"(wrapped {lx.wrapped}), largest texel number {lx.n_texels - 1:,} "
          f"(< 2^24: {lx.n_texels - 1 < 2 ** 24}); {lx.nbytes / 1e6:.0f} MB")
    print(f"# V: texture {vlay.tex_w} x {vlay.tex_h} (wrapped {vlay.wrapped})")
    print(f"# row-sum chunks: {len(chunks)} (pass_work {tuning.pass_work:.3g}); points per pass "
          f"{min(nb for _, nb in chunks)}..{max(nb for _, nb in chunks)}; loop iterations per "
          f"fragment per pass ~{max(nb for _, nb in chunks) * sm.block_cost('rows', d):,}; "
          f"work per pass {max(works):.3g}; waits now: "
          f"{sum(sm.host_waits(works, tuning.sync_work))} of "
          f"{len(chunks) - 1}")
    idx = np.unique(np.linspace(0, n - 1, 3).astype(int))
    ref = host_rowsums(Xc, idx)
    bad = 0
    # compile and draw once (a 1-texel rect, 4 points j), then clear the GL error flag (the
    # engine's first draw of a program may leave one): the flags printed belong to the stages
    dev.run(kern, V, inputs={"X": XA}, uniforms={"blk0": 0, "n_blk": 4}, rect=(0, 0, 1, 1))
    dev.fill(V, -1.0)
    dev.finish()
    print(f"# GL error flag before the stages (cleared): {dev.ctx.error}")

    def draw(k, b0, nb, rect=None):
        dev.run(kern, V, inputs={"X": XA}, uniforms={"blk0": b0, "n_blk": nb},
                accumulate="add" if k > 0 else None, rect=rect)

    if 1 in stages:
        dev.fill(V, -1.0)
        t0 = time.perf_counter()
        ys = sorted({vlay.texel_of(int(i), 0)[1] for i in idx})
        for k, (b0, nb) in enumerate(chunks):
            for y in ys:   # separate draws per row: the rect is a sub-rectangle of V
                dev.run(kern, V, inputs={"X": XA}, uniforms={"blk0": b0, "n_blk": nb},
                        accumulate="add" if k > 0 else None, rect=(0, y, vlay.tex_w, 1))
            dev.finish()
        got = V.get().reshape(-1)[idx].astype(np.float64)
        bad += not report("1 math (few fragments, waits)", got, ref, idx,
                          f"{time.perf_counter() - t0:.2f} s, {len(ys)} texture rows, "
                          f"gl error {dev.ctx.error}")
    if 2 in stages:
        dev.fill(V, -1.0)
        dev.finish()
        per = []
        t0 = time.perf_counter()
        for k, (b0, nb) in enumerate(chunks):
            t1 = time.perf_counter()
            draw(k, b0, nb)
            dev.finish()
            per.append(time.perf_counter() - t1)
        vals = V.get().reshape(-1)
        got = vals[idx].astype(np.float64)
        bad += not report("2 synced (finish after every pass)", got, ref, idx,
                          f"{time.perf_counter() - t0:.2f} s, per pass {min(per):.3f}.."
                          f"{max(per):.3f} s, zeros in V {int((vals == 0).sum())}, "
                          f"gl error {dev.ctx.error}")
        print("    pass s: " + " ".join(f"{t:.2f}" for t in per))
    if 3 in stages:
        dev.fill(V, -1.0)
        dev.finish()
        t0 = time.perf_counter()
        for k, (b0, nb) in enumerate(chunks):
            draw(k, b0, nb)
        t_issue = time.perf_counter() - t0
        vals = V.get().reshape(-1)
        got = vals[idx].astype(np.float64)
        bad += not report("3 unsynced (the old setup)", got, ref, idx,
                          f"issue {t_issue:.2f} s, issue+readback "
                          f"{time.perf_counter() - t0:.2f} s, zeros in V "
                          f"{int((vals == 0).sum())}, -1 (unwritten) {int((vals == -1).sum())}, "
                          f"gl error {dev.ctx.error}")
    if 4 in stages:
        Y0 = rng.uniform(0, 255, (n, 3)).astype(np.float32)
        t0 = time.perf_counter()
        try:
            est = sm.Sammon(n_components=3, n_iter=1, step="source", init=Y0, cache=False,
                            tol=None, device=dev).fit(X)
            print(f"[4 fit] RIGHT (spot checks passed)  setup {est.timings_['setup_s']:.2f} s, "
                  f"evaluations {' '.join(f'{t:.2f}' for t in est.timings_['eval_s'])} s, "
                  f"stress {est.stress_history_[0]:.6f} -> {est.stress_:.6f}, "
                  f"chunks {est.chunks_}, passes per sweep {est.split_}, "
                  f"gl error {dev.ctx.error}, {time.perf_counter() - t0:.1f} s")
        except Exception as exc:   # the spot checks raise ShaderGPGPUError
            bad += 1
            print(f"[4 fit] WRONG: {type(exc).__name__}: {exc}")
    print(f"# total {time.perf_counter() - t_all:.1f} s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
