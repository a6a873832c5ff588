"""Engine benchmark: per-pass overhead against raw moderngl, upload/readback, copy bandwidth.

    python benchmarks/engine.py [--quick] [--passes N] [--mb MB] [--apis gl,gles]

Per-pass overhead is measured on tiny passes (a 1x1 output, one input, one uniform) so the cost
is the Python + driver work of issuing a pass. Three ways issue the same passes in the same run:
raw moderngl calls, the engine's prepared pass (``Device.prepare(...).run``) and the engine's
one-shot ``Device.run``. The ratio engine/raw is the engine's overhead (target: <= 1.10).
The prepared pass is timed twice: with the same uniform value every pass (the engine skips a
write the program already holds, raw moderngl writes it) and with a new value every pass (both
write it); the target applies to both.

Sizes reach kernels as uniforms (one program per layout kind, not per size). The last table
measures what that costs: the same final source compiled once as the engine runs it and once
with every shape uniform turned into a constant (``const ivec4 sg_X_shape = ivec4(...)``), on an
element-addressed kernel with a long loop (a row sum) and on the texel copy.

With ``--apis gl,gles`` (the default) the OpenGL ES backend (``Device(api="gles")``, a native ES
context on the same device) issues the same passes in the same interleaved rounds: raw moderngl
on the ES context, the prepared pass and ``Device.run``. Target: the ES backend's per-pass cost
at most 1.5x the desktop backend's. Where no ES context can be made, the ES rows are left out
with the reason.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.engine.builtin import COPY, SAXPY  # noqa: E402
from shadergpgpu.analysis.reports.common import markdown_table  # noqa: E402

ROW_SUMS = sg.Kernel(source="""
void main() {
    vec4 s = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        int r = OUT_pos(l).y;
        for (int c = 0; c < X_COLS; ++c) s[l] += X_at(r, c);
    }
    OUT = s;
}""", inputs=("X",), loop=lambda a: 4 * a.X.cols + 4, name="bench/rowsum")


def best_of(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        best = min(best, fn())
    return best


def raw_passes(dev, n: int, vary: bool = False):
    """The same tiny saxpy passes through moderngl directly (program compiled by hand)."""
    ctx = dev.ctx
    x = dev.array(np.ones(4))
    out = dev.empty_like(x)
    k = dev.compiled(SAXPY, {"X": x, "Y": x}, {"OUT": out}, {})
    # A separate program object and framebuffer, so nothing of the engine is on the path.
    prog = ctx.program(vertex_shader=dev.shaders.vertex_source, fragment_shader=k.text)
    vao = ctx.vertex_array(prog, [])
    fbo = ctx.framebuffer(color_attachments=[out.texture])
    prog["sg_X"].value = 0
    prog["sg_Y"].value = 1
    for name in ("X", "Y", "OUT"):
        if f"sg_{name}_shape" in prog:
            prog[f"sg_{name}_shape"].value = x.layout.shape_uniform
    u = prog["alpha"]
    tex = x.texture

    vals = [float(i % 7) for i in range(n)] if vary else [1.0] * n

    def run():
        dev.finish()
        t0 = time.perf_counter()
        for v in vals:
            fbo.use()
            ctx.viewport = (0, 0, 1, 1)
            tex.use(0)
            tex.use(1)
            u.value = v
            vao.render(4, vertices=3)
        ctx.finish()
        return (time.perf_counter() - t0) / n

    return run


def engine_prepared(dev, n: int, vary: bool = False):
    x = dev.array(np.ones(4))
    out = dev.empty_like(x)
    p = dev.prepare(SAXPY, out, inputs={"X": x, "Y": x}, uniforms={"alpha": 1.0})
    vals = [float(i % 7) for i in range(n)] if vary else [1.0] * n

    def run():
        dev.finish()
        t0 = time.perf_counter()
        for v in vals:
            p.run(alpha=v)
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
            dev.run(SAXPY, out, inputs=inputs, uniforms=uniforms)
        dev.finish()
        return (time.perf_counter() - t0) / n

    return run


def elementwise_call(dev, n: int):
    """An ElementwiseKernel call on device arrays (output given), the CuPy-style one-liner."""
    k = sg.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = x * y + 1.0",
                             "bench_fma")
    x = dev.array(np.ones(4))
    out = dev.empty_like(x)

    def run():
        dev.finish()
        t0 = time.perf_counter()
        for i in range(n):
            k(x, x, out)
        dev.finish()
        return (time.perf_counter() - t0) / n

    return run


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


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
        dev.finish()
        t0 = time.perf_counter()
        x.set(a)
        dev.finish()
        return time.perf_counter() - t0

    def down_full():
        dev.finish()
        t0 = time.perf_counter()
        x.get()
        return time.perf_counter() - t0

    pre = np.empty_like(a)

    def down_out():
        dev.finish()
        t0 = time.perf_counter()
        x.get(out=pre)
        return time.perf_counter() - t0

    def down_async():
        dev.finish()
        t0 = time.perf_counter()
        x.get(out=pre, wait=False).result()
        return time.perf_counter() - t0

    y = dev.empty_like(x)
    copy = dev.prepare(COPY, y, inputs={"X": x})

    def cp():
        reps = 5
        dev.finish()
        t0 = time.perf_counter()
        for _ in range(reps):
            copy.run()
        dev.finish()
        return (time.perf_counter() - t0) / reps

    cases = [("upload (raw texture write)", up, nbytes),
             ("DeviceArray.set", up_full, nbytes),
             ("readback (raw texture read to bytes)", down, nbytes),
             ("DeviceArray.get()", down_full, nbytes),
             ("DeviceArray.get(out=preallocated)", down_out, nbytes),
             ("DeviceArray.get(out=..., wait=False).result()", down_async, nbytes),
             ("copy kernel (read + write)", cp, 2 * nbytes)]
    th = _torch()
    if th is not None:   # the same bytes through torch on the same GPU
        g = th.empty(a.shape, device="cuda")
        ta, tpre = th.from_numpy(a), th.from_numpy(pre)

        def t_up():
            t0 = time.perf_counter()
            g.copy_(ta)
            th.cuda.synchronize()
            return time.perf_counter() - t0

        def t_down():
            t0 = time.perf_counter()
            tpre.copy_(g)
            th.cuda.synchronize()
            return time.perf_counter() - t0

        def t_cpu():
            t0 = time.perf_counter()
            g.cpu()
            return time.perf_counter() - t0

        cases += [("torch: host->device, pageable", t_up, nbytes),
                  ("torch: device->host into preallocated", t_down, nbytes),
                  ("torch: .cpu()", t_cpu, nbytes)]
    rows = []
    for name, fn, moved in cases:
        fn()
        t = best_of(fn, repeats)
        rows.append({"what": name, "MB": round(nbytes / 2**20, 1), "ms": t * 1e3,
                     "GB/s": moved / t / 1e9})
    for arr in (x, y):
        arr.release()
    return rows


#: issue 20's transfer targets: (ours, torch's, least ratio ours / torch)
TRANSFER_TARGETS = [("DeviceArray.set", "torch: host->device, pageable", 0.5),
                    ("DeviceArray.get(out=preallocated)", "torch: device->host into preallocated",
                     0.5),
                    ("DeviceArray.get()", "torch: .cpu()", 1.0)]


def uniform_cost(dev, repeats: int, quick: bool):
    """Engine program (sizes as uniforms) vs the same source with the sizes as constants."""
    import re
    ctx = dev.ctx
    rows = []
    cases = [("row sum, element access", ROW_SUMS, (256, 2048) if quick else (1024, 8192),
              (1, 256 if quick else 1024)),
             ("copy, texel access", COPY, (1024, 1024) if quick else (4096, 4096), None)]
    for name, kern, shape, oshape in cases:
        x = dev.array(np.random.default_rng(0).standard_normal(shape))
        out = dev.empty(oshape) if oshape else dev.empty_like(x)
        p = dev.prepare(kern, out, inputs={"X": x})
        c = p.compiled
        text = c.text
        for n, a in (("X", x), ("OUT", out)):
            v = a.layout.shape_uniform
            text = re.sub(rf"uniform ivec4 sg_{n}_shape;",
                          f"const ivec4 sg_{n}_shape = ivec4{tuple(v)};", text)
        prog = ctx.program(vertex_shader=dev.shaders.vertex_source, fragment_shader=text)
        vao = ctx.vertex_array(prog, [])
        fbo = ctx.framebuffer(color_attachments=[out.texture])
        prog["sg_X"].value = 0

        def engine():
            dev.finish()
            t0 = time.perf_counter()
            for _ in range(3):
                p.run()
            dev.finish()
            return (time.perf_counter() - t0) / 3

        def const():
            dev.finish()
            t0 = time.perf_counter()
            for _ in range(3):
                fbo.use()
                x.texture.use(0)
                vao.render(4, vertices=3)
            ctx.finish()
            return (time.perf_counter() - t0) / 3

        engine(), const()
        te, tc = float("inf"), float("inf")
        for _ in range(repeats):
            te = min(te, engine())
            tc = min(tc, const())
        ref = x.get().sum(axis=1) if oshape else x.get()
        got = out.get()[0] if oshape else out.get()
        ok = np.allclose(got, ref, rtol=1e-3, atol=1e-2)
        rows.append({"kernel": name, "shape": f"{shape[0]}x{shape[1]}", "uniform ms": te * 1e3,
                     "const ms": tc * 1e3, "uniform / const": te / tc,
                     "check": "ok" if ok else "MISMATCH"})
        for o in (vao, fbo, prog):
            o.release()
        x.release()
        out.release()
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--passes", type=int, default=None, help="passes per timing (default 3000)")
    ap.add_argument("--mb", type=float, default=None, help="transfer size in MB (default 256)")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--apis", default="gl,gles",
                    help="gl, or gl,gles to time the OpenGL ES backend beside it (default)")
    args = ap.parse_args(argv)
    n = args.passes or (300 if args.quick else 3000)
    mb = args.mb or (16 if args.quick else 256)
    repeats = 3 if args.quick else 7

    dev = sg.Device(backend=args.backend)
    print(f"# engine benchmark on {dev.caps.renderer} ({dev.caps.version}), "
          f"{time.strftime('%Y-%m-%d')}\n")
    # the same value every pass (the engine skips a uniform write the program already holds;
    # raw moderngl writes it), and a new value every pass (both write it)
    fns = {"raw moderngl": raw_passes(dev, n), "engine Pass.run (prepared)": engine_prepared(dev, n),
           "engine Device.run": engine_run(dev, n),
           "ElementwiseKernel call (device arrays)": elementwise_call(dev, n),
           "raw moderngl, new value each pass": raw_passes(dev, n, vary=True),
           "engine Pass.run, new value each pass": engine_prepared(dev, n, vary=True)}
    es = None
    if "gles" in args.apis.split(","):
        try:
            es = sg.Device(api="gles")
        except sg.CapabilityError as e:
            print(f"(no OpenGL ES backend here: {e}; its rows are left out)\n")
    if es is not None:
        print(f"# OpenGL ES backend: {es.caps.renderer} ({es.caps.version})\n")
        fns.update({"ES: raw moderngl": raw_passes(es, n),
                    "ES: engine Pass.run (prepared)": engine_prepared(es, n),
                    "ES: engine Device.run": engine_run(es, n)})
    for f in fns.values():  # warm up
        f()
    # interleave the repeats so drift hits all three alike
    best = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            best[k] = min(best[k], f())
    raw = best["raw moderngl"]
    raw_vary = best["raw moderngl, new value each pass"]
    def raw_of(k):
        return (best["ES: raw moderngl"] if k.startswith("ES: ")
                else raw_vary if "new value" in k else raw)
    rows = [{"issuer": k, "us/pass": v * 1e6, "vs raw": v / raw_of(k)} for k, v in best.items()]
    print(f"## Per-pass overhead ({n} tiny passes, best of {repeats})\n")
    print(markdown_table(rows, ["issuer", "us/pass", "vs raw"], ".3g"))
    print(f"## Transfers and copy bandwidth ({mb:g} MB array)\n")
    trows = transfer(dev, mb, repeats)
    print(markdown_table(trows, ["what", "MB", "ms", "GB/s"], ".3g"))
    print("## Sizes as uniforms vs baked constants (same final source)\n")
    urows = uniform_cost(dev, repeats, args.quick)
    print(markdown_table(urows, ["kernel", "shape", "uniform ms", "const ms", "uniform / const",
                                 "check"], ".3g"))
    status = 0
    for name, target in (("engine Pass.run (prepared)", 1.10), ("engine Device.run", 2.0),
                         ("ElementwiseKernel call (device arrays)", 3.0),
                         ("engine Pass.run, new value each pass", 1.10)):
        ratio = best[name] / (raw_vary if "new value" in name else raw)
        print(f"{name} / raw moderngl per pass: {ratio:.2f}  (target <= {target:.2f})")
        if ratio > target:
            print(f"MISSED: {name} {ratio:.2f}x raw moderngl (target <= {target:.2f})")
            status = 1
    if es is not None:
        for name in ("engine Pass.run (prepared)", "engine Device.run"):
            ratio = best["ES: " + name] / best[name]
            print(f"ES / desktop, {name} per pass: {ratio:.2f}  (target <= 1.50)")
            if ratio > 1.5:
                print(f"MISSED: the ES backend's {name} at {ratio:.2f}x the desktop's "
                      f"(target <= 1.50)")
                status = 1
    gbs = {r["what"]: r["GB/s"] for r in trows}
    for ours, theirs, least in TRANSFER_TARGETS:
        if theirs not in gbs:
            print(f"{ours}: {gbs[ours]:.2f} GB/s (no torch on a GPU here to compare)")
            continue
        ratio = gbs[ours] / gbs[theirs]
        print(f"{ours} / {theirs}: {ratio:.2f}  (target >= {least:.2f})")
        if ratio < least:
            print(f"MISSED: {ours} at {ratio:.2f} of {theirs} (target >= {least:.2f})")
            status = 1
    if any(r["check"] != "ok" for r in urows):
        print("MISMATCH: a uniform-cost kernel returned a wrong result")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
