"""Device time of long runs of small accumulating passes (raw moderngl, one timer query around
a run): what a pass costs as a function of its fragments, of the size of the texture it reads a
row from, and of additive float blending. The paper schedule at 2-1024-1, N = 16,384 draws
~9,000 such passes (1,025-4,096 fragments, one training vector's row each) at 4-5 us apiece
on an H200 where the calibrated floor says 1-2 us (issue 23).

    python benchmarks/diag/blend_passes.py [--passes 2000]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import shadergpgpu as sg  # noqa: E402

VS = """#version 330
void main() {
    vec2 p = vec2(float((gl_VertexID & 1) << 2) - 1.0, float((gl_VertexID & 2) << 1) - 1.0);
    gl_Position = vec4(p, 0.0, 1.0);
}"""
FS = """#version 330
uniform sampler2D X;
uniform int row;
uniform int column;
out vec4 o;
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    ivec2 s = textureSize(X, 0);
    int k = p.x + p.y * 1024;
    ivec2 at = column != 0 ? ivec2(row % s.x, k % s.y)        // one texel per row: a column
                           : ivec2(k % s.x, (row + k / s.x) % s.y);
    o = texelFetch(X, at, 0) * 0.5;
}"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--passes", type=int, default=2000)
    a = ap.parse_args()
    dev = sg.Device()
    ctx = dev.ctx
    prog = ctx.program(vertex_shader=VS, fragment_shader=FS)
    vao = ctx.vertex_array(prog, [])
    print(f"# {dev.caps.renderer}, {a.passes} passes per run, device us per pass "
          f"(one timer query per run)")
    print(f"{'frags':>6} {'target':>10} {'input':>12} {'blend':>5} {'row':>6} {'read':>6} "
          f"{'dev us':>8} {'wall us':>8}")
    for in_h, in_w, column in ((1024, 256, 0), (16384, 256, 0), (16384, 1024, 0),
                               (1024, 256, 1), (1025, 4096, 1), (4096, 4096, 1)):
        X = ctx.texture((in_w, in_h), 4, dtype="f4",
                        data=np.random.default_rng(0).standard_normal((in_h, in_w, 4))
                        .astype(np.float32).tobytes())
        X.filter = (0x2600, 0x2600)     # NEAREST
        for frags, (w, h) in ((64, (64, 1)), (1024, (1024, 1)), (3072, (1024, 3)),
                              (4096, (64, 64))):
            T = ctx.texture((w, h), 4, dtype="f4")
            fbo = ctx.framebuffer(color_attachments=[T])
            for blend in (False, True):
                for vary in ((True, False) if not column else (True,)):
                    fbo.use()
                    ctx.viewport = (0, 0, w, h)
                    X.use(0)
                    prog["X"].value = 0
                    prog["column"].value = column
                    u = prog["row"]
                    if blend:
                        ctx.enable(0x0BE2)                 # BLEND
                        ctx.blend_func = (1, 1)            # ONE, ONE
                    else:
                        ctx.disable(0x0BE2)

                    def run():
                        for i in range(a.passes):
                            u.value = (i * 7) % in_h if vary else 3
                            vao.render(4, vertices=3)

                    run()
                    ctx.finish()
                    best_d = best_w = float("inf")
                    for _ in range(3):
                        q = ctx.query(time=True)
                        t0 = time.perf_counter()
                        with q:
                            run()
                        ctx.finish()
                        best_w = min(best_w, time.perf_counter() - t0)
                        best_d = min(best_d, q.elapsed * 1e-9)
                    print(f"{frags:6d} {f'{w}x{h}':>10} {f'{in_w}x{in_h}':>12} "
                          f"{'yes' if blend else 'no':>5} {'vary' if vary else 'fixed':>6} "
                          f"{'column' if column else 'rows':>6} "
                          f"{best_d / a.passes * 1e6:8.2f} {best_w / a.passes * 1e6:8.2f}",
                          flush=True)
            ctx.disable(0x0BE2)
            fbo.release()
            T.release()
        X.release()


if __name__ == "__main__":
    main()
