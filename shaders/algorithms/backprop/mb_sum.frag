// Mini-batch trainer, the end of a forward pass cut into SLICES parts: OUT[r] = f(b + the
// parts' partial sums of row r) for the batch rows r < nb (0 elsewhere and in padding lanes),
// b the intercepts (W's last row). BLOCK 0 (mb_forward.frag): row r's part s is P0 row
// s * OUT_ROWS + r. BLOCK 1 (mb_forward4.frag, four rows per fragment): it is row s * Q + r / 4
// of output P(r mod 4), Q = P0_ROWS / SLICES. Uniforms: nb.
#include "mb_common.glsl"
void main() {
    ivec2 g = OUT_grid();
    int r = g.x;
    if (r >= nb) { OUT = vec4(0.0); return; }
    vec4 s = W_texel(W_ROWS - 1, g.y);
#if BLOCK
    int Q = P0_ROWS / SLICES;
    int p = r >> 2;
    int row = r & 3;
    for (int part = 0; part < SLICES; ++part) {
        int t = part * Q + p;
        s += mat4(P0_texel(t, g.y), P1_texel(t, g.y), P2_texel(t, g.y), P3_texel(t, g.y))[row];
    }
#else
    for (int part = 0; part < SLICES; ++part) s += P0_texel(part * OUT_ROWS + r, g.y);
#endif
    OUT = activate(s) * vec4(OUT_lanes());
}
