"""SGEMM uniform-block variants at n = 4096 and 2048: which tile, geometry and draw loop wins.

Every configuration is timed interleaved with the others (a warm-up call that is also checked
against float64 numpy on 64 sampled rows, relative error <= 1e-5 of their norm, then ROUNDS
rounds over all configurations; the median is printed), as GFLOP/s and as a fraction of the
H200's fragment ALU ceiling (1,937 GFLOP/s) and of the ALU ceiling measured in this run.

Configurations (device arrays in and out):

* ``lib ...``: the library call ``sgemm(A, B, variant=...)``, every pass counted (staging of A
  into block windows and of B, the product draws, the epilogue). ``tile8x4-tex`` is the texture
  path for reference; ``8x4 strip (before)`` is the path before this change (32 x 32 rects
  stacked in a 32-texel-wide target, fragments numbered row by row, staging one fetch per
  lane); ``strip rowwise`` the same with the texel-by-texel staging; ``grid`` rects tiling a
  ~1024-wide target (the new default, fragments numbered by pixel quads; ``rowwise``: by rows);
  ``band8`` / ``band2`` rects of 8 (2) rows; ``u1`` / ``u4`` unroll; ``split4`` 4 K chunks.
* ``staged ...``: operands staged once outside the timing; times the product draws and the
  epilogue only. ``sweep`` = the library's draw loop (Pass.sweep: per draw the framebuffer,
  blend and inputs are bound again); ``lean`` = the same draws with the framebuffer bound once
  (per draw: the block range, the viewport, the draw); ``one`` = ONE draw per K chunk over all
  block rows with a single window (the probe's configuration: every fragment of the draw reads
  the same A), on an A whose block rows repeat (so the result is still exact).

What the comparisons say: lib vs staged sweep = staging cost; sweep vs lean = per-draw state
cost in the driver; sweep vs one = cost of one draw per block row (draw boundaries, window
rebinding) against one draw over the same fragments; strip vs grid vs band = how the
rasterizer spreads a draw's fragments; 8x4 vs 16x2 vs 32x1 = texel fetches vs uniform reads.

    PYTHONPATH=. python benchmarks/diag/sgemm_ubo.py [--sizes 4096,2048] [--rounds 3] [--only SUBSTR]
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import os
import sys
import time

import moderngl
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import sgemm as S  # noqa: E402
from shadergpgpu.algorithms.sgemm import staging as SS  # noqa: E402  (the staging's home)

ALU_H200 = 1937.0
TOL = 1e-5


@dataclasses.dataclass
class Config:
    name: str
    variant: str
    kind: str = "lib"          # "lib" or "staged"
    mode: str = "sweep"        # staged: "sweep", "lean" or "one"
    target_w: int | None = None
    max_band: int | None = None
    quad: bool | None = None
    texels: bool = True        # staging texel by texel where the layout allows
    unroll: int | None = None
    split: int | None = None


CONFIGS = [
    Config("lib tile8x4-tex", "tile8x4-tex"),
    Config("lib 8x4 strip (before)", "tile8x4-ubo", target_w=0, quad=False, texels=False),
    Config("lib 8x4 strip rowwise", "tile8x4-ubo", target_w=0, quad=False),
    Config("lib 8x4 grid (default)", "tile8x4-ubo"),
    Config("lib 8x4 grid rowwise", "tile8x4-ubo", quad=False),
    Config("lib 8x4 strip quads", "tile8x4-ubo", target_w=0),
    Config("lib 8x4 grid band8", "tile8x4-ubo", max_band=8),
    Config("lib 8x4 grid band2", "tile8x4-ubo", max_band=2),
    Config("lib 8x4 grid u1", "tile8x4-ubo", unroll=1),
    Config("lib 8x4 grid u4", "tile8x4-ubo", unroll=4),
    Config("lib 8x4 grid split4", "tile8x4-ubo", split=4),
    Config("lib 16x2 grid", "tile16x2-ubo"),
    Config("lib 16x2 grid rowwise", "tile16x2-ubo", quad=False),
    Config("lib 16x2 strip", "tile16x2-ubo", target_w=0),
    Config("lib 16x2 grid u1", "tile16x2-ubo", unroll=1),
    Config("lib 16x2 grid u4", "tile16x2-ubo", unroll=4),
    Config("lib 32x1 grid", "tile32x1-ubo"),
    Config("staged 8x4 grid sweep", "tile8x4-ubo", "staged", "sweep"),
    Config("staged 8x4 grid lean", "tile8x4-ubo", "staged", "lean"),
    Config("staged 8x4 grid one", "tile8x4-ubo", "staged", "one"),
    Config("staged 8x4 strip sweep", "tile8x4-ubo", "staged", "sweep", target_w=0),
    Config("staged 8x4 strip one", "tile8x4-ubo", "staged", "one", target_w=0),
    Config("staged 16x2 grid sweep", "tile16x2-ubo", "staged", "sweep"),
    Config("staged 16x2 grid lean", "tile16x2-ubo", "staged", "lean"),
    Config("staged 16x2 grid one", "tile16x2-ubo", "staged", "one"),
]


def tuning_of(cfg: Config) -> S.SgemmTuning:
    """The configuration's geometry and fragment order as a tuning value."""
    t = S.SgemmTuning()
    return t.replace(ubo_quad_order=t.ubo_quad_order if cfg.quad is None else cfg.quad,
                     ubo_target_w=t.ubo_target_w if cfg.target_w is None else cfg.target_w,
                     ubo_max_band=t.ubo_max_band if cfg.max_band is None else cfg.max_band)


@contextlib.contextmanager
def knobs(cfg: Config):
    """The configuration's unroll and staging, set on the modules for the call (its geometry
    and fragment order: :func:`tuning_of`)."""
    saved = S.VARIANTS[cfg.variant]
    by_texels = SS.staged_texels
    try:
        if not cfg.texels:
            SS.staged_texels = lambda x, trans: 0
        if cfg.unroll is not None:
            S.VARIANTS[cfg.variant] = dataclasses.replace(saved, unroll=cfg.unroll)
        yield S.VARIANTS[cfg.variant]
    finally:
        S.VARIANTS[cfg.variant] = saved
        SS.staged_texels = by_texels


class Staged:
    """Operands staged once (A into block windows, B as the kernel reads it); ``__call__``
    draws the product and the epilogue as the library does, or with a lean / one-draw loop."""

    def __init__(self, dev, cfg: Config, A, B, M, N, K):
        self.dev, self.cfg, self.M, self.N = dev, cfg, M, N
        with knobs(cfg) as v:
            self.v = S.effective_variant(v, dev)
            self.plan = S.ubo.ubo_plan(self.v, M, N, K, S.Limits.of(dev), cfg.split or 1,
                                    tuning_of(cfg))
        _, Kp = S.variants.padded_shape(self.v, M, K)
        self.blk = SS.stage_block(dev, A, False, M, K, self.plan)
        if self.v.b_transposed:
            self.Bs = SS.stage_texture(dev, B, True, N, K, self.plan.fw * self.plan.cols, Kp)
        else:
            self.Bs = SS.stage_texture(dev, B, False, K, N, Kp, N)

    def release(self):
        self.blk.release()
        self.Bs.release()

    def __call__(self):
        dev, v, plan, blk, mode = self.dev, self.v, self.plan, self.blk, self.cfg.mode
        out = dev.empty((self.M, self.N))
        n = len(plan.chunks)
        rects = [r for per_row in plan.rects for r in per_row]
        row_of = [i for i, per_row in enumerate(plan.rects) for _ in per_row]
        with dev.scope() as s:
            parts = [s.alloc(plan.parts) for _ in range(v.targets)]
            inputs = {"A": blk, "B": self.Bs}
            uni = {"kq0": 0, "ks_n": 0, "geo": plan.geo}
            defines = {**v.defines, "QUAD_ORDER": int(plan.quad)}
            first = dev.prepare(v.kernel, parts, inputs=inputs, uniforms=uni, defines=defines)
            later = None
            for c, (q0, q1) in enumerate(plan.chunks):
                if c == 0:
                    p = first
                else:
                    p = later = later or dev.prepare(v.kernel, parts, inputs=inputs,
                                                     uniforms=uni, defines=defines,
                                                     accumulate="add")
                p.set(kq0=q0, ks_n=(q1 - q0) // v.unroll)
                offs = [(i * n + c) * blk.stride for i in row_of]
                if mode == "one":       # one draw, block row 0's window for every fragment
                    blk.select(c * blk.stride)
                    lay = plan.parts
                    p.sweep([(0, 0, lay.tex_w, lay.tex_h)])
                    continue
                if mode == "sweep":
                    p.sweep(rects, each=lambda d, offs=offs: blk.select(offs[d]))
                    continue
                # lean: the first draw through the engine (binds the framebuffer, blend and
                # inputs), then per draw only the block range, the viewport and the draw
                p.sweep(rects[:1], each=lambda d, offs=offs: blk.select(offs[d]))
                unit = dict(p.compiled.units)["A"]
                render, ctx, buf = p.compiled.vao.render, dev.ctx, blk.buffer
                size = blk.layout.nbytes
                for rect, off in zip(rects[1:], offs[1:]):
                    buf.bind_to_uniform_block(unit, offset=16 * off, size=size)
                    ctx.viewport = rect
                    render(moderngl.TRIANGLES, 3)
                p._fbo.viewport = (0, 0) + p._fbo.size
            dev.run(S.COMBINE_UBO[v.targets, False], out,
                    inputs={f"P{t}": x for t, x in enumerate(parts)},
                    uniforms={"alpha": 1.0, "geo": plan.geo},
                    defines={"TILE_COLS": plan.cols, "QUAD_ORDER": int(plan.quad)})
        return out


def load_alu_ceiling():
    spec = importlib.util.spec_from_file_location("bench_sgemm",
                                                  os.path.join(ROOT, "benchmarks", "sgemm.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.alu_ceiling


def describe(dev, cfg, M, N, K):
    with knobs(cfg) as v:
        v = S.effective_variant(v, dev)
        if v.a_path != "block":
            return "texture path"
        p = S.ubo.ubo_plan(v, M, N, K, S.Limits.of(dev), cfg.split or 1, tuning_of(cfg))
        draws = sum(len(r) for r in p.rects) * len(p.chunks)
        if cfg.mode == "one":
            draws = len(p.chunks)
        return (f"{v.tile_rows}x{v.tile_cols} u{v.unroll}{' quads' if p.quad else ''} chunks "
                f"{len(p.chunks)} draws {draws}"
                f" frags/draw {p.fragments * len(p.chunks) // draws} geo {p.geo} target "
                f"{p.parts.tex_w}x{p.parts.tex_h}")


def run_size(dev, n, configs, rounds, rng, alu_run, deadline):
    M = N = K = n
    flops = 2.0 * M * N * K
    a = rng.uniform(-1, 1, (M, K)).astype(np.float32)
    b = rng.uniform(-1, 1, (K, N)).astype(np.float32)
    A, B = dev.array(a), dev.array(b)
    rows = np.sort(rng.choice(M, size=min(64, M), replace=False))
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    needs_periodic = any(c.mode == "one" for c in configs)
    calls, checks = {}, {}
    a_per = None
    for cfg in configs:
        if cfg.kind == "lib":
            def call(cfg=cfg):
                with knobs(cfg), dev.tuned(tuning_of(cfg)):
                    return S.sgemm(A, B, variant=cfg.variant, split=cfg.split, device=dev)
            calls[cfg.name] = call
            checks[cfg.name] = ref
        else:
            if cfg.mode == "one":       # an A whose block rows all equal block row 0
                if a_per is None and needs_periodic:
                    a_per = {}
                rows_t = S.effective_variant(S.VARIANTS[cfg.variant], dev).tile_rows
                if rows_t not in a_per:
                    ap = np.tile(a[:rows_t], (M // rows_t, 1))
                    a_per[rows_t] = (dev.array(ap),
                                     ap[rows].astype(np.float64) @ b.astype(np.float64))
                Ad, checks[cfg.name] = a_per[rows_t]
            else:
                Ad, checks[cfg.name] = A, ref
            calls[cfg.name] = Staged(dev, cfg, Ad, B, M, N, K)
    times = {c.name: [] for c in configs}
    errs = {}
    for cfg in configs:                 # warm-up (compiles) and check
        out = calls[cfg.name]()
        dev.finish()
        got = out.get()[rows].astype(np.float64)
        out.release()
        want = checks[cfg.name]
        errs[cfg.name] = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    for _ in range(rounds):
        if time.perf_counter() > deadline and all(times.values()):
            break
        for cfg in configs:
            t0 = time.perf_counter()
            out = calls[cfg.name]()
            dev.finish()
            times[cfg.name].append(time.perf_counter() - t0)
            out.release()
    print(f"\n## n = {n} ({len(times[configs[0].name])} rounds, interleaved; GFLOP/s = 2 n^3 / "
          f"median time; % of {ALU_H200:.0f} and of this run's ALU ceiling {alu_run:.0f})")
    print(f"{'configuration':<26} {'ms':>8} {'min ms':>8} {'GFLOP/s':>8} {'%1937':>6} "
          f"{'%run':>6} {'rel err':>8}  plan")
    res = {}
    bad = 0
    for cfg in configs:
        ts = times[cfg.name]
        t = float(np.median(ts))
        g = flops / t / 1e9
        res[cfg.name] = g
        ok = errs[cfg.name] <= TOL
        bad += not ok
        print(f"{cfg.name:<26} {t * 1e3:8.2f} {min(ts) * 1e3:8.2f} {g:8.1f} "
              f"{100 * g / ALU_H200:5.1f}% {100 * g / alu_run:5.1f}% {errs[cfg.name]:8.1e}"
              f"{'' if ok else ' WRONG'}  {describe(dev, cfg, M, N, K)}")
    for c in calls.values():
        if isinstance(c, Staged):
            c.release()
    for x in [A, B] + [v[0] for v in (a_per or {}).values()]:
        x.release()
    dev.trim()
    return res, bad


def ratio(res, x, y):
    return f"{res[x] / res[y]:.3f}" if x in res and y in res else "n/a"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default=None, help="square sizes (default 4096,2048; llvmpipe 256)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated substrings of config names")
    ap.add_argument("--budget", type=float, default=75.0, help="seconds before rounds stop")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()
    dev = sg.Device()
    info = dev.ctx.info
    print(f"# {info['GL_RENDERER']} | {info['GL_VERSION']} | max uniform block "
          f"{info.get('GL_MAX_UNIFORM_BLOCK_SIZE')} B, offset alignment "
          f"{info.get('GL_UNIFORM_BUFFER_OFFSET_ALIGNMENT')} B | {time.strftime('%Y-%m-%d')}")
    sizes = [int(x) for x in (args.sizes or ("256" if dev.is_software else "4096,2048"))
             .split(",")]
    configs = CONFIGS
    if args.only:
        keys = [k.strip() for k in args.only.split(",")]
        configs = [c for c in CONFIGS if any(k in c.name for k in keys)]
    alu_ceiling = load_alu_ceiling()
    rng = np.random.default_rng(0)
    # warm the clocks, then the ALU ceiling of this run
    warm = dev.array(np.ones((512, 512), np.float32))
    S.sgemm(warm, warm, variant="tile8x4-ubo").release()
    alu0 = alu_ceiling(dev, dev.is_software)
    print(f"ALU ceiling at start: {alu0:.1f} GFLOP/s")
    total_bad = 0
    results = {}
    for i, n in enumerate(sizes):
        # the time left, shared by the sizes still to run in proportion to n^3
        left = args.budget - (time.perf_counter() - t_start)
        share = left * n ** 3 / sum(m ** 3 for m in sizes[i:])
        deadline = time.perf_counter() + max(1.0, share)
        res, bad = run_size(dev, n, configs, args.rounds, rng, alu0, deadline)
        results[n] = res
        total_bad += bad
    alu1 = alu_ceiling(dev, dev.is_software)
    print(f"\nALU ceiling at end: {alu1:.1f} GFLOP/s")
    for n, res in results.items():
        print(f"\n## ratios at n = {n} (> 1: the first is faster)")
        for x, y, what in [
                ("lib 8x4 grid (default)", "lib 8x4 strip (before)", "new / old default"),
                ("lib 8x4 strip rowwise", "lib 8x4 strip (before)", "texel / lane staging"),
                ("lib 8x4 grid rowwise", "lib 8x4 strip rowwise", "grid / strip geometry"),
                ("lib 8x4 grid (default)", "lib 8x4 grid rowwise", "quad / row order (grid)"),
                ("lib 8x4 strip quads", "lib 8x4 strip rowwise", "quad / row order (strip)"),
                ("lib 16x2 grid", "lib 16x2 grid rowwise", "quad / row order (16x2)"),
                ("lib 16x2 grid", "lib 8x4 grid (default)", "16x2 / 8x4 tile"),
                ("lib 32x1 grid", "lib 8x4 grid (default)", "32x1 / 8x4 tile"),
                ("staged 8x4 grid sweep", "lib 8x4 grid (default)", "without / with staging"),
                ("staged 8x4 grid lean", "staged 8x4 grid sweep", "lean / engine draw loop"),
                ("staged 8x4 grid one", "staged 8x4 grid sweep", "one draw / draw per block row"),
                ("staged 8x4 strip one", "staged 8x4 strip sweep", "same, strip geometry"),
                ("staged 16x2 grid lean", "staged 16x2 grid sweep", "16x2 lean / engine loop"),
                ("staged 16x2 grid one", "staged 16x2 grid sweep", "16x2 one draw / per row")]:
            print(f"  {what:<34} {ratio(res, x, y)}")
        best = max((k for k in res if k.startswith("lib")), key=res.get)
        print(f"  fastest library configuration: {best}: {res[best]:.1f} GFLOP/s = "
              f"{100 * res[best] / ALU_H200:.1f}% of {ALU_H200:.0f}"
              + ("  (target >= 1000 at n = 4096: " + ("met)" if res[best] >= 1000 else
                                                       "MISSED)") if n == 4096 else ""))
    print(f"\n{'ALL CHECKS PASSED' if not total_bad else f'{total_bad} WRONG RESULT(S)'}; "
          f"{time.perf_counter() - t_start:.1f} s")
    dev.release()
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
