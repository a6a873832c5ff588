// Mini-batch trainer, forward propagation of one layer: OUT[r] = f(A[src(r)] W + b) for the
// batch rows r < nb (0 elsewhere and in padding lanes). Uniforms: start, nb.
#include "mb_common.glsl"
void main() {
    ivec2 g = OUT_grid();
    int r = g.x;
    if (r >= nb) { OUT = vec4(0.0); return; }
#if GATHER
    int src = int(IDX_get(start + r));
#else
    int src = start + r;
#endif
    vec4 s = W_texel(W_ROWS - 1, g.y);
    for (int q = 0; q < A_GRID_W; ++q) {
        vec4 a = A_texel(src, q);
        int k = 4 * q;
        s += a.x * W_texel(k, g.y) + a.y * W_texel(k + 1, g.y)
           + a.z * W_texel(k + 2, g.y) + a.w * W_texel(k + 3, g.y);
    }
    OUT = activate(s) * vec4(OUT_lanes());
}
