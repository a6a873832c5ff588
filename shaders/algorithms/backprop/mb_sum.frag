// Mini-batch trainer, the end of a forward pass cut into SLICES (mb_forward.frag):
// OUT[r] = f(b + sum_s P[s * OUT_ROWS + r]) for the batch rows r < nb (0 elsewhere and in
// padding lanes), b the intercepts (W's last row). Uniforms: nb.
#include "mb_common.glsl"
void main() {
    ivec2 g = OUT_grid();
    int r = g.x;
    if (r >= nb) { OUT = vec4(0.0); return; }
    vec4 s = W_texel(W_ROWS - 1, g.y);
    for (int part = 0; part < SLICES; ++part) s += P_texel(part * OUT_ROWS + r, g.y);
    OUT = activate(s) * vec4(OUT_lanes());
}
