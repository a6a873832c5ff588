// Mini-batch trainer, forward propagation of one layer: OUT[r] = f(A[start + r] W + b) for the
// batch rows r < nb (0 elsewhere and in padding lanes). Uniforms: start, nb.
// SLICES > 1 (hardware renderers: more fragments, shorter loops): the texels of A's rows are
// cut into SLICES ranges and OUT row s * A_ROWS + r holds slice s's partial sum A[r] W, without
// the intercepts or the activation (added by mb_sum.frag).
#include "mb_common.glsl"
void main() {
    ivec2 g = OUT_grid();
#if SLICES > 1
    int part = g.x / A_ROWS;
    int r = g.x - part * A_ROWS;
    int per = (A_GRID_W + SLICES - 1) / SLICES;
    int q0 = part * per;
    int q1 = min(A_GRID_W, q0 + per);
    vec4 s = vec4(0.0);
#else
    int r = g.x;
    int q0 = 0;
    int q1 = A_GRID_W;
    vec4 s = W_texel(W_ROWS - 1, g.y);
#endif
    if (r >= nb) { OUT = vec4(0.0); return; }
    int src = start + r;
    for (int q = q0; q < q1; ++q) {
        vec4 a = A_texel(src, q);
        int k = 4 * q;
        s += a.x * W_texel(k, g.y) + a.y * W_texel(k + 1, g.y)
           + a.z * W_texel(k + 2, g.y) + a.w * W_texel(k + 3, g.y);
    }
#if SLICES > 1
    OUT = s;
#else
    OUT = activate(s) * vec4(OUT_lanes());
#endif
}
