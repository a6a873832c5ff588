"""Engine benchmark: per-pass overhead against raw moderngl, upload/readback, copy bandwidth.

    python benchmarks/engine.py [--quick] [--passes N] [--mb MB]

Per-pass overhead is measured on tiny passes (a 1x1 output, one input, one uniform) so the cost
is the Python + driver work of issuing a pass. Three ways issue the same passes in the same run:
raw moderngl calls, the engine's prepared pass (``Device.prepare(...).run``) and the engine's
one-shot ``Device.run``. The ratio engine/raw is the engine's overhead (target: <= 1.20).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.frontends.reports.common import markdown_table  # noqa: E402


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        best = min(best, fn())
    return best


def raw_passes(dev, n: int):
    """The same tiny saxpy passes through moderngl directly (program compiled by hand)."""
    ctx = dev.ctx
    x = dev.array(np.ones(4))
    out = dev.empty_like(x)
    k = dev.kernel("engine/saxpy.frag", {"X": x, "Y": x}, {"OUT": out})
    # A separate program object and framebuffer, so nothing of the engine is on the path.
    prog = ctx.program(vertex_shader=dev.shaders.vertex_source, fragment_shader=k.source_text)
    vao = ctx.vertex_array(prog, [])
    fbo = ctx.framebuffer(color_attachments=[out.texture])
    prog["X"].value = 0
    prog["Y"].value = 1
    u = prog["alpha"]
    tex = x.texture

    def run():
        dev.finish()
        t0 = time.perf_counter()
        for i in range(n):
            fbo.use()
            ctx.viewport = (0, 0, 1, 1)
            tex.use(0)
            tex.use(1)
            u.value = 1.0
            vao.render(4, vertices=3)
        ctx.finish()
        return (time.perf_counter() - t0) / n

    return run


def engine_prepared(dev, n: int):
    x = dev.array(np.ones(4))
    out = dev.empty_like(x)
    p = dev.prepare("engine/saxpy.frag", out, inputs={"X": x, "Y": x}, uniforms={"alpha": 1.0})

    def run():
        dev.finish()
        t0 = time.perf_counter()
        for i in range(n):
            p.run(alpha=1.0)
        dev.finish()
        return (time.perf_counter() - t0) / n

    return run


def engine_run(dev, n: int):
    x = dev.array(np.ones(4))
    out = dev.empty_like(x)
    inputs = {"X": x, "Y": x}
    uniforms = {"alpha": 1.0}

    def run():
        dev.finish()
        t0 = time.perf_counter()
        for i in range(n):
            dev.run("engine/saxpy.frag", out, inputs=inputs, uniforms=uniforms)
        dev.finish()
        return (time.perf_counter() - t0) / n

    return run


def transfer(dev, mb: float, repeats: int):
    n = int(mb * 2**20 / 4)
    side = int(np.sqrt(n / 4))
    a = np.random.default_rng(0).standard_normal((side, 4 * side)).astype(np.float32)
    x = dev.array(a)
    lay = x.layout
    img = lay.pack_array(a)
    nbytes = img.nbytes

    def up():
        dev.finish()
        t0 = time.perf_counter()
        x.texture.write(img)
        dev.finish()
        return time.perf_counter() - t0

    def down():
        dev.finish()
        t0 = time.perf_counter()
        x.texture.read()
        return time.perf_counter() - t0

    def up_full():
        t0 = time.perf_counter()
        x.set(a)
        dev.finish()
        return time.perf_counter() - t0

    def down_full():
        t0 = time.perf_counter()
        x.get()
        return time.perf_counter() - t0

    y = dev.empty_like(x)
    copy = dev.prepare("engine/copy.frag", y, inputs={"X": x})

    def cp():
        reps = 5
        dev.finish()
        t0 = time.perf_counter()
        for _ in range(reps):
            copy.run()
        dev.finish()
        return (time.perf_counter() - t0) / reps

    rows = []
    for name, fn, moved in [("upload (texture write)", up, nbytes),
                            ("upload incl. packing (DeviceArray.set)", up_full, nbytes),
                            ("readback (texture read)", down, nbytes),
                            ("readback incl. unpacking (DeviceArray.get)", down_full, nbytes),
                            ("copy kernel (read + write)", cp, 2 * nbytes)]:
        fn()
        t = best_of(fn, repeats)
        rows.append({"what": name, "MB": round(nbytes / 2**20, 1), "ms": t * 1e3,
                     "GB/s": moved / t / 1e9})
    for arr in (x, y):
        arr.release()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--passes", type=int, default=None, help="passes per timing (default 3000)")
    ap.add_argument("--mb", type=float, default=None, help="transfer size in MB (default 256)")
    ap.add_argument("--backend", default=None)
    args = ap.parse_args(argv)
    n = args.passes or (300 if args.quick else 3000)
    mb = args.mb or (16 if args.quick else 256)
    repeats = 3 if args.quick else 7

    dev = sg.Device(backend=args.backend)
    print(f"# engine benchmark on {dev.caps.renderer} ({dev.caps.version}), "
          f"{time.strftime('%Y-%m-%d')}\n")
    fns = {"raw moderngl": raw_passes(dev, n), "engine Pass.run (prepared)": engine_prepared(dev, n),
           "engine Device.run": engine_run(dev, n)}
    for f in fns.values():  # warm up
        f()
    # interleave the repeats so drift hits all three alike
    best = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            best[k] = min(best[k], f())
    raw = best["raw moderngl"]
    rows = [{"issuer": k, "us/pass": v * 1e6, "vs raw": v / raw} for k, v in best.items()]
    print(f"## Per-pass overhead ({n} tiny passes, best of {repeats})\n")
    print(markdown_table(rows, ["issuer", "us/pass", "vs raw"], ".3g"))
    print(f"## Transfers and copy bandwidth ({mb:g} MB array)\n")
    print(markdown_table(transfer(dev, mb, repeats), ["what", "MB", "ms", "GB/s"], ".3g"))
    ratio = best["engine Pass.run (prepared)"] / raw
    print(f"engine (prepared pass) / raw moderngl per pass: {ratio:.2f}  (target <= 1.20)")
    print(f"engine (Device.run)    / raw moderngl per pass: {best['engine Device.run'] / raw:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
