"""Device time of copying a freshly written texture into a buffer object (the uniform-block and
buffer-texture mirrors of weights, refreshed after every update): ``Texture.read_into(buffer)``
(glGetTexImage) against ``Framebuffer.read_into(buffer)`` (glReadPixels), each right after a
pass that writes the texture, one timer query around a run (issue 23: the fused 2-1024-1 step's
two block copies took ~0.3-0.45 ms each of device time on an H200, for a few KB).

    python benchmarks/diag/block_copy.py [--runs 200]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import shadergpgpu as sg  # noqa: E402
from shadergpgpu.engine.builtin import SAXPY  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    a = ap.parse_args()
    dev = sg.Device()
    ctx = dev.ctx
    print(f"# {dev.caps.renderer}: device us per (pass + copy) and wall us, {a.runs} per run")
    print(f"{'bytes':>9} {'how':>22} {'dev us':>8} {'wall us':>8} {'check':>6}")
    for shape in ((4, 64), (16, 256), (64, 1024), (256, 1024)):
        x = dev.array(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        y = dev.empty(shape)
        p = dev.prepare(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 1.0})
        nbytes = y.layout.nbytes
        buf = ctx.buffer(reserve=nbytes)
        fbo = ctx.framebuffer(color_attachments=[y.texture])
        ways = {
            "pass only": lambda: None,
            "glGetTexImage": lambda: y.texture.read_into(buf, alignment=4),
            "glReadPixels": lambda: fbo.read_into(buf, components=4, dtype="f4", alignment=4),
        }
        for how, copy in ways.items():
            def run():
                for i in range(a.runs):
                    p.run(alpha=float(i % 3))
                    copy()
            run()
            dev.finish()
            bd = bw = float("inf")
            for _ in range(3):
                q = ctx.query(time=True)
                t0 = time.perf_counter()
                with q:
                    run()
                dev.finish()
                bw = min(bw, time.perf_counter() - t0)
                bd = min(bd, q.elapsed * 1e-9)
            ok = "-"
            if how != "pass only":
                want = y.texture.read()
                ok = "ok" if np.frombuffer(want, np.float32).tobytes() == buf.read() else \
                    "MISMATCH"
            print(f"{nbytes:9d} {how:>22} {bd / a.runs * 1e6:8.2f} {bw / a.runs * 1e6:8.2f} "
                  f"{ok:>6}", flush=True)
        buf.release()
        fbo.release()


if __name__ == "__main__":
    main()
