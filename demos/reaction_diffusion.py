"""Gray-Scott reaction-diffusion with the public API only (Kernel, ElementwiseKernel): writes
gray_scott.png and gray_scott.gif into -o (default out/); --window, --steps, --size, --frames."""
import argparse
from pathlib import Path

import numpy as np
from PIL import Image

import _demo  # demos/_demo.py: one-line argument errors, the out/ folder, optional packages
import shadergpgpu as sg

# One pass per step: 5-point Laplacian (periodic borders) plus the reaction, both fields at once.
STEP = sg.Kernel(source="""
#define LAP(at) (at(up, c) + at(dn, c) + at(r, lf) + at(r, rt) - 4.0 * at(r, c))
void main() {
    vec4 u4 = vec4(0.0), v4 = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT0_live(l)) continue;
        int r = OUT0_pos(l).x, c = OUT0_pos(l).y, R = U_ROWS, C = U_COLS;
        int up = (r + R - 1) % R, dn = (r + 1) % R, lf = (c + C - 1) % C, rt = (c + 1) % C;
        float u = U_at(r, c), v = V_at(r, c), uvv = u * v * v;
        u4[l] = u + dt * (Du * LAP(U_at) - uvv + F * (1.0 - u));
        v4[l] = v + dt * (Dv * LAP(V_at) + uvv - (F + k) * v);
    }
    OUT0 = u4, OUT1 = v4;
}""", inputs=("U", "V"), outputs=2, name="gray_scott",
    uniforms={"Du": ("float", 0.16), "Dv": ("float", 0.08), "F": ("float", 0.035),
              "k": ("float", 0.065), "dt": ("float", 1.0)})
SHADE = sg.ElementwiseKernel("float32 v", "float32 g", "g = clamp(4.0 * v, 0.0, 1.0)", name="shade")


def bounded(lo, hi):
    def check(s):
        if not s.isdigit() or not lo <= int(s) <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer in {lo}..{hi}, got {s!r}")
        return int(s)
    return check


def main(argv=None):
    ap = _demo.Parser(description=__doc__)
    ap.add_argument("-o", "--out", type=Path, default=_demo.OUT_DIR, help="folder (./out/)")
    ap.add_argument("--steps", type=bounded(1, 10**7), default=3000, help="steps (3000)")
    ap.add_argument("--size", type=bounded(16, 2048), default=128, help="grid side (128)")
    ap.add_argument("--frames", type=bounded(1, 500), default=30, help="GIF frames (30)")
    ap.add_argument("--window", action="store_true", help="show it live (needs a display)")
    a = ap.parse_args(argv)
    view = None
    if a.window:  # a live view; without a display, run headless
        try:
            from shadergpgpu.frontends.window import Viewer
            view = Viewer(sg.Device(backend="glfw-visible"), title="Gray-Scott")
        except Exception as e:
            print(f"no window ({e}); running headless")
    dev, n = (view.device if view else sg.Device()), a.size
    u, v = np.ones((n, n)), np.zeros((n, n))
    for cy, cx in np.random.default_rng(0).integers(n // 8, n - n // 8, (6, 2)):  # seeds
        s = slice(cy - n // 16, cy + n // 16), slice(cx - n // 16, cx + n // 16)
        u[s], v[s] = 0.5, 0.25
    U, V = dev.pingpong((n, n)), dev.pingpong((n, n))
    U.front.set(u), V.front.set(v)
    frames, every = [], max(1, a.steps // a.frames)
    for t in range(1, a.steps + 1):
        STEP([U.back, V.back], U=U.front, V=V.front)
        U.swap(), V.swap()
        if t % every == 0 or t == a.steps:
            with SHADE(V.front) as g:
                frames.append(Image.fromarray((g.get() * 255).astype(np.uint8)))
            if view is not None and not view.show(V.front, 0.0, 0.4):
                break
    a.out.mkdir(parents=True, exist_ok=True)
    frames[-1].save(a.out / "gray_scott.png")
    frames[0].save(a.out / "gray_scott.gif", save_all=True, append_images=frames[1:], duration=80)
    print(f"{t} steps of {n}x{n}: wrote {a.out / 'gray_scott.png'} and {a.out / 'gray_scott.gif'}")


if __name__ == "__main__":
    main()
