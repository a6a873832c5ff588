"""Recursive Gaussian blur, schedule "hv", one channel: wall time, GPU time per phase and
accuracy of the library's code and of variants, in one run (issue #16 target 5: >= 2,030 MP/s
at 4096 x 4096 gray on the H200).

    PYTHONPATH=. python benchmarks/diag/blur_hv.py             # GPU: 4096^2, sigma 4 and 16 (< 60 s)
    PYTHONPATH=. python benchmarks/diag/blur_hv.py --quick     # smoke test (llvmpipe): 256^2, check 128^2

Variants (``--variants``, default all), timed round-robin so that clock and load drift hit
them alike; each keeps its own prepared passes (recipe cache):
  old         the reduce, down and apply kernels from before this change (copies in
              benchmarks/diag/blur_hv_old/) and no glFlush between passes: the code measured 2026-11-22
  new         the library as it is
  noflush     the library without the glFlush after each pass (BlurTuning(flush_passes=False))
  v32         the library with level-1 blocks of 32 texels on the vertical axis (H keeps 16)
  h8          the library with level-1 blocks of 8 texels on the horizontal axis (no walk in
              its apply pass; twice its summary bytes)
  h8v32       both

Printed: the fragment copy bandwidth; per variant and sigma the wall ms (median of --repeat
calls after warm-up, dev.finish() before and after each call), MP/s, the host time until the
call returns ("issue"), the ratio to "old"; the GPU ms per phase (timer queries, one call after
a warm one, as benchmarks/blur.py); max abs error / range against
scipy.ndimage.gaussian_filter (float64, reflect, truncate 4) at --check-size for sigma 0.5, 4,
16, 64, and at the timed size against a direct sum for 64 random pixels; each variant against
"new" at the timed size. Exit status 1 on any MISMATCH (tolerances of
tests/algorithms/blur/test_blur.py).
"""
from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import blur  # noqa: E402

OLD_DIR = Path(__file__).resolve().parent / "blur_hv_old"
VARIANTS = ("old", "new", "noflush", "v32", "h8", "h8v32")


# ---- the code before this change: its kernels, declared like the library's -----------------
def _old_apply_loop(a):
    c1, seq, npl = a.uniforms["C1"], a.defines["SEQ"], a.defines["NPL"]
    spt = 4 if seq else 1
    return 8 + 2 * max(0, c1 - npl) * (1 + 3 * spt) + npl * (3 + 2 * spt)


def _old_table(table, fname, loop=None):
    out = {}
    for key, k in table.items():
        o = copy.copy(k)
        o.file = str(OLD_DIR / fname)
        o.name = k.name + "(old)"
        o._checked = False
        if loop is not None:
            o.loop = loop
        out[key] = o
    return out


OLD = {"APPLY": _old_table(blur.kernels.APPLY, "apply.frag", _old_apply_loop),
       "REDUCE": _old_table(blur.kernels.REDUCE, "reduce.frag"),
       "DOWN": _old_table(blur.kernels.DOWN, "down.frag")}
LIB = {"APPLY": blur.kernels.APPLY, "REDUCE": blur.kernels.REDUCE, "DOWN": blur.kernels.DOWN}
_LINE_PASS = blur.recursive._line_pass


def _tiled(h_c1, v_c1):
    def line_pass(dev, src, *, label, tiling, **kw):
        if tiling is None:
            c1 = h_c1 if label == "H" else v_c1
            if c1 is not None:
                tiling = blur.Tiling(c1=c1)
        return _LINE_PASS(dev, src, label=label, tiling=tiling, **kw)
    return line_pass


_SETUP = {  # variant -> (kernels, flush, _line_pass)
    "old": (OLD, False, _LINE_PASS),
    "new": (LIB, True, _LINE_PASS),
    "noflush": (LIB, False, _LINE_PASS),
    "v32": (LIB, True, _tiled(None, 32)),
    "h8": (LIB, True, _tiled(8, None)),
    "h8v32": (LIB, True, _tiled(8, 32)),
}


class Variants:
    """Switches the blur module between variants; each variant keeps its own recipe cache."""

    def __init__(self, devices):
        self.caches = {}  # (device id, variant) -> recipe cache
        for d in devices:
            d._fbos.resize(512)  # every variant's framebuffers stay cached

    @contextmanager
    def use(self, dev, name):
        kernels, flush, line_pass = _SETUP[name]
        key = "blur/recipes"
        cache = self.caches.get((id(dev), name))
        if cache is None:
            cache = self.caches[(id(dev), name)] = blur.recipes.RecipeCache(4 << 30)
        before = dev._resources.get(key)
        dev._resources[key] = cache
        K, RE = blur.kernels, blur.recursive  # where each setting lives
        saved = (K.APPLY, K.REDUCE, K.DOWN, RE._line_pass)
        K.APPLY, K.REDUCE, K.DOWN = kernels["APPLY"], kernels["REDUCE"], kernels["DOWN"]
        RE._line_pass = line_pass
        try:
            with dev.tuned(blur.BlurTuning, flush_passes=bool(flush)):
                yield
        finally:
            (K.APPLY, K.REDUCE, K.DOWN, RE._line_pass) = saved
            if before is not None:
                dev._resources[key] = before
            else:
                dev._resources.pop(key)

    def release(self):
        for c in self.caches.values():
            c.release()
        self.caches.clear()


# ---- references ------------------------------------------------------------------------------
def spot_reference(img, sigma, pts):
    """Direct separable sums (scipy's reflect border, truncate 4) at the pixels ``pts``."""
    half = blur.gaussian_weights(sigma)
    r = len(half) - 1
    wt = np.concatenate([half[:0:-1], half])
    h, w = img.shape
    out = []
    for i, j in pts:
        ri = np.arange(i - r, i + r + 1)
        cj = np.arange(j - r, j + r + 1)
        ri = np.where(ri < 0, -1 - ri, np.where(ri >= h, 2 * h - 1 - ri, ri))
        cj = np.where(cj < 0, -1 - cj, np.where(cj >= w, 2 * w - 1 - cj, cj))
        patch = img[np.ix_(ri, cj)].astype(np.float64)
        out.append(wt @ patch @ wt)
    return np.array(out)


def tolerance(sigma):
    return 1e-3 if sigma < 2 else 5e-3


def copy_bandwidth(dev, x, repeat):
    y = dev.empty_like(x)
    p = dev.prepare(sg.builtin.COPY, y, inputs={"X": x})
    times = []
    for i in range(repeat + 1):
        dev.finish()
        t0 = time.perf_counter()
        for _ in range(10):
            p.run()
        dev.finish()
        if i:
            times.append((time.perf_counter() - t0) / 10)
    y.release()
    return 2 * x.layout.nbytes / statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="256^2, check 128^2, 3 repeats")
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--check-size", type=int, default=None)
    ap.add_argument("--sigmas", default="4,16")
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args(argv)
    n = args.size or (256 if args.quick else 4096)
    nc = args.check_size or (128 if args.quick else 1024)
    repeat = args.repeat or (3 if args.quick else 10)
    sigmas = [float(s) for s in args.sigmas.split(",")]
    names = [v for v in args.variants.split(",") if v]
    bad = [v for v in names if v not in _SETUP]
    if bad:
        ap.error(f"unknown variants {bad}; choose from {', '.join(VARIANTS)}")
    t_start = time.perf_counter()
    failures = []

    dev = sg.Device()
    var = Variants([dev])
    print(f"device: {dev.caps.renderer} | {time.strftime('%Y-%m-%d %H:%M')} | {n}x{n} gray, "
          f"hv, sigma {args.sigmas} | variants {', '.join(names)}", flush=True)
    img = np.random.default_rng(0).random((n, n)).astype(np.float32)
    x = dev.array(img)
    bw = copy_bandwidth(dev, x, repeat)
    tb = blur.traffic_bytes(n, n, True, "hv")
    print(f"fragment copy bandwidth {bw / 1e9:.1f} GB/s; traffic model {tb / n / n:.1f} bytes/px "
          f"(default tiling) -> copy bound {bw / (tb / n / n) / 1e6:,.0f} MP/s", flush=True)

    # ---- wall time, round-robin ---------------------------------------------------------------
    outs = {}
    for name in names:  # record each variant's passes, keep one result for the comparison
        with var.use(dev, name):
            y = blur.gaussian_blur(x, sigmas[-1])
            outs[name] = y.get()
            y.release()
    dev.finish()
    rows = []
    for sigma in sigmas:
        wall = {v: [] for v in names}
        issue = {v: [] for v in names}
        for r in range(repeat + 2):  # 2 warm-up rounds
            for name in names:
                with var.use(dev, name):
                    dev.finish()
                    t0 = time.perf_counter()
                    y = blur.gaussian_blur(x, sigma)
                    t1 = time.perf_counter()
                    dev.finish()
                    t2 = time.perf_counter()
                    y.release()
                if r >= 2:
                    wall[name].append(t2 - t0)
                    issue[name].append(t1 - t0)
        for name in names:
            t = statistics.median(wall[name])
            rows.append((sigma, name, t, statistics.median(issue[name])))
    base = {s: t for s, v, t, _ in rows if v == (names[0] if "old" not in names else "old")}
    print(f"\nwall time (median of {repeat}, finish before/after each call)")
    print(f"{'sigma':>6} {'variant':>8} {'ms':>8} {'MP/s':>8} {'issue ms':>9} "
          f"{'vs ' + ('old' if 'old' in names else names[0]):>8} {'bw_ratio':>8}")
    for sigma, name, t, ti in rows:
        print(f"{sigma:6g} {name:>8} {t * 1e3:8.3f} {n * n / t / 1e6:8.0f} {ti * 1e3:9.3f} "
              f"{t / base[sigma]:8.3f} {tb / t / bw:8.3f}")
    print(f"(target 2,030 MP/s = {n * n / 2030e6 * 1e3:.2f} ms at {n}^2)")

    # ---- the timed size: spot check against a direct sum, and each variant against "new" -------
    rng = np.random.default_rng(1)
    pts = [(int(rng.integers(n)), int(rng.integers(n))) for _ in range(64)]
    pts += [(0, 0), (n - 1, n - 1), (0, n - 1), (n - 1, 0)]
    rng_img = float(img.max() - img.min())
    ref = spot_reference(img, sigmas[-1], pts)
    ii, jj = np.array(pts).T
    print(f"\ncheck at {n}^2, sigma {sigmas[-1]:g}: 68 pixels against a direct sum; each variant "
          "against 'new' (max abs difference / range)")
    for name in names:
        err = float(np.abs(outs[name][ii, jj] - ref).max()) / rng_img
        vs = (float(np.abs(outs[name] - outs["new"]).max()) / rng_img
              if "new" in outs else float("nan"))
        ok = err <= tolerance(sigmas[-1])
        failures += [] if ok else [f"{name} spot {err:.3g}"]
        print(f"  {name:>8}: spot {err:.3g} {'ok' if ok else 'MISMATCH'} | vs new {vs:.3g}")
    x.release()

    # ---- accuracy against scipy ------------------------------------------------------------------
    from scipy.ndimage import gaussian_filter
    cimg = np.random.default_rng(5).random((nc, nc)).astype(np.float32)
    xc = dev.array(cimg)
    crange = float(cimg.max() - cimg.min())
    print(f"\nmax abs error / range against scipy.ndimage.gaussian_filter, {nc}^2, reflect")
    print(f"{'sigma':>6} " + " ".join(f"{v:>9}" for v in names))
    for sigma in (0.5, 4.0, 16.0, 64.0):
        ref = gaussian_filter(cimg.astype(np.float64), sigma, mode="reflect", truncate=4.0)
        errs = []
        for name in names:
            with var.use(dev, name):
                y = blur.gaussian_blur(xc, sigma)
                e = float(np.abs(y.get() - ref).max()) / crange
                y.release()
            errs.append(e)
            if e > tolerance(sigma):
                failures.append(f"{name} sigma {sigma:g}: {e:.3g}")
        print(f"{sigma:6g} " + " ".join(f"{e:9.2e}" for e in errs))
    xc.release()
    var.release()
    dev.release()

    # ---- GPU time per phase (timer queries) -------------------------------------------------------
    tdev = sg.Device(timing=True)
    tvar = Variants([tdev])
    xx = tdev.array(img)
    print(f"\nGPU time per phase (timer queries), {n}x{n} gray hv, ms")
    gpu = {}
    for sigma in sigmas:
        for name in names:
            with tvar.use(tdev, name):
                blur.gaussian_blur(xx, sigma).release()
                tdev.finish()
                tdev.counter.reset()
                blur.gaussian_blur(xx, sigma).release()
                tdev.finish()
            snap = tdev.counter.snapshot()
            tot = sum(v["gpu_ms"] for v in snap.values())
            gpu[(sigma, name)] = tot
            print(f"sigma {sigma:g} {name:>8} total {tot:.3f} | " +
                  " | ".join(f"{k} {v['gpu_ms']:.3f}" for k, v in snap.items()), flush=True)
    xx.release()
    tvar.release()
    tdev.release()
    print("\nsummary: wall ms / GPU ms (sum of the phases) / gap, MP/s")
    for sigma, name, t, _ in rows:
        g = gpu[(sigma, name)]
        print(f"  sigma {sigma:g} {name:>8}: {t * 1e3:.3f} / {g:.3f} / {t * 1e3 - g:+.3f} ms, "
              f"{n * n / t / 1e6:,.0f} MP/s")
    print(f"\n{'MISMATCH: ' + '; '.join(failures) if failures else 'all checks ok'} "
          f"({time.perf_counter() - t_start:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
