"""Gaussian blur benchmark: megapixels per second, recursive (both schedules) and exact,
scipy.ndimage.gaussian_filter and the fragment copy bandwidth measured in the same run.

    python benchmarks/blur.py [--quick] [--sizes 1024,4096] [--sigmas 1,4,16,64]
                              [--c1 16,32 --g 4,8]   (tilings: level-1 block / fan-out)

For every (size, channels) the table gives ms and MP/s per sigma; the summary lines end with
the ratios that matter:
  * spread = max/min recursive time over the sigmas (target <= 1.20);
  * bw_ratio = (bytes the recursive blur moves / time) / fragment copy bandwidth, where the bytes
    come from the traffic model of shadergpgpu.algorithms.blur.traffic_bytes (each RGBA32F texel of each
    pass read or written once; target >= 0.60);
  * MP/s against the source's estimate of 2,030 MP/s (one channel, 4096^2).
Grayscale images are packed 4 pixels per texel; 4-channel images use one RGBA texel per pixel.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import blur  # noqa: E402
from shadergpgpu.analysis.reports.common import markdown_table, time_call  # noqa: E402


def copy_bandwidth(dev, x, repeat):
    y = dev.empty_like(x)
    p = dev.prepare(sg.builtin.COPY, y, inputs={"X": x})

    def run():
        for _ in range(10):
            p.run()
    t = time_call(run, dev.finish, repeat=repeat) / 10
    y.release()
    return 2 * x.layout.nbytes / t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sizes", default=None)
    ap.add_argument("--sigmas", default="1,4,16,64")
    ap.add_argument("--channels", default="1,4")
    ap.add_argument("--c1", default=None, help="level-1 block sizes to try (texels), e.g. 16,32")
    ap.add_argument("--g", default=None, help="fan-outs of the coarser levels to try, e.g. 2,4,8")
    ap.add_argument("--exact-max-sigma", type=float, default=64.0)
    ap.add_argument("--scipy-max", type=float, default=6.8e7,
                    help="skip scipy above this many pixels x sigma x channels (single-threaded)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("256" if args.quick else "1024,4096")).split(",")]
    sigmas = [float(s) for s in args.sigmas.split(",")]
    chans = [int(c) for c in args.channels.split(",")]
    d = blur.DEFAULT_TILING
    tilings = [blur.Tiling(c1=int(c1), g=int(g)) for c1 in (args.c1 or str(d.c1)).split(",")
               for g in (args.g or str(d.g)).split(",")]
    repeat = 2 if args.quick else args.repeat
    dev = sg.Device()
    print(f"device: {dev.caps.renderer} | {time.strftime('%Y-%m-%d')}", flush=True)
    rows, summary = [], []
    for n in sizes:
        for c in chans:
            gray = c == 1
            img = np.random.default_rng(0).random((n, n) if gray else (n, n, c)).astype(np.float32)
            x = dev.array(img) if gray else dev.image(img)
            bw = copy_bandwidth(dev, x, repeat)
            print(f"\n{n}x{n} c={c}: fragment copy {bw / 1e9:.1f} GB/s "
                  f"({x.layout.nbytes / 1e6:.0f} MB texture)", flush=True)
            variants = [("recursive", s, til) for s in blur.SCHEDULES for til in tilings]
            variants.append(("exact", "-", None))
            for method, sched, til in variants:
                times = []
                for sigma in sigmas:
                    if method == "exact" and sigma > args.exact_max_sigma:
                        continue
                    kw = dict(method=method, tiling=til)
                    if method == "recursive":
                        kw["schedule"] = sched

                    def run():
                        blur.gaussian_blur(x, sigma, **kw).release()
                    big = method == "exact" and n * n * sigma > 4096 * 4096 * 4
                    t = time_call(run, dev.finish, repeat=1 if big else repeat)
                    r = {"size": n, "channels": c, "method": method, "schedule": sched,
                         "tiling": f"{til.c1}/{til.g}" if til else "", "sigma": sigma,
                         "ms": t * 1e3,
                         "MP/s": n * n / t / 1e6}
                    if method == "recursive":
                        tb = blur.traffic_bytes(n, n, gray, sched, til)
                        r["GB/s moved"] = tb / t / 1e9
                        r["bw_ratio"] = tb / t / bw
                        times.append(t)
                    rows.append(r)
                    print(markdown_table([r]).splitlines()[-1], flush=True)
                if times:
                    tb = blur.traffic_bytes(n, n, gray, sched, til)
                    summary.append({"size": n, "channels": c, "schedule": sched,
                                    "tiling": f"{til.c1}/{til.g}",
                                    "best MP/s": n * n / min(times) / 1e6,
                                    "spread": max(times) / min(times),
                                    "bytes/px": tb / (n * n),
                                    "bound MP/s": bw / (tb / (n * n)) / 1e6,
                                    "bw_ratio": tb / min(times) / bw,
                                    "copy GB/s": bw / 1e9})
            from scipy.ndimage import gaussian_filter
            for sigma in sigmas:
                if n * n * sigma * c > args.scipy_max:
                    continue
                ss = (sigma, sigma) if gray else (sigma, sigma, 0)
                t0 = time.perf_counter()
                gaussian_filter(img, ss, mode="reflect", truncate=4.0)
                t = time.perf_counter() - t0
                r = {"size": n, "channels": c, "method": "scipy", "schedule": "-", "tiling": "",
                     "sigma": sigma, "ms": t * 1e3, "MP/s": n * n / t / 1e6}
                rows.append(r)
                print(markdown_table([r]).splitlines()[-1], flush=True)
            x.release()
    checks = []
    from scipy.ndimage import gaussian_filter
    n = min(sizes[0], 1024)
    for c in chans:
        shape = (n, n) if c == 1 else (n, n, c)
        img = np.random.default_rng(5).random(shape).astype(np.float32)
        for sigma in (0.5, 4.0, 64.0):
            ref = gaussian_filter(img.astype(np.float64), (sigma, sigma) if c == 1 else
                                  (sigma, sigma, 0), mode="reflect", truncate=4.0)
            for method, sched in (("recursive", "hv"), ("recursive", "vtvt"), ("exact", "hv")):
                out = blur.gaussian_blur(img, sigma, method=method, schedule=sched, device=dev)
                checks.append({"size": n, "channels": c, "sigma": sigma, "method": method,
                               "schedule": sched, "max_abs_err/range":
                               float(np.abs(out - ref).max() / (img.max() - img.min()))})
    print("\n## Accuracy against scipy on this device (border reflect)\n")
    print(markdown_table(checks, floatfmt=".3g"))
    tdev = sg.Device(timing=True)
    n = max(sizes)
    for c in chans:
        img = np.random.default_rng(0).random((n, n) if c == 1 else (n, n, c)).astype(np.float32)
        xx = tdev.array(img) if c == 1 else tdev.image(img)
        for sched in blur.SCHEDULES:
            blur.gaussian_blur(xx, 16.0, schedule=sched).release()
            tdev.finish()
            tdev.counter.reset()
            blur.gaussian_blur(xx, 16.0, schedule=sched).release()
            tdev.finish()
            snap = tdev.counter.snapshot()
            print(f"\nGPU time per phase (timer queries), {n}x{n} c={c} {sched}, sigma 16: "
                  f"total {sum(v['gpu_ms'] for v in snap.values()):.3f} ms")
            print(" | ".join(f"{k} {v['gpu_ms']:.3f}" for k, v in snap.items()))
        xx.release()
    tdev.release()
    print("\n## All rows\n")
    print(markdown_table(rows))
    print("## Summary (recursive; spread target <= 1.20, bw_ratio target >= 0.60, "
          "1 channel 4096^2 target >= 2,030 MP/s)\n")
    print(markdown_table(summary))
    dev.release()


if __name__ == "__main__":
    main()
