// SGEMM, simple variant: one output texel (1 row x 4 columns of C) per fragment.
// K is split across passes by [kq0, kq1) (the host sums the slices into C by additive blending,
// reading beta * C in the first slice only), keeping each pass's loop within the loop budget.
// Per K-quad q: a = A[r, 4q .. 4q+3] (1 texel), b_u = B[4q+u, 4j .. 4j+3] (4 texels),
// c += a.x b_0 + a.y b_1 + a.z b_2 + a.w b_3; then C = alpha * c + beta * C.
#include "epilogue.glsl"
uniform int kq0;
uniform int kq1;
void main() {
    ivec2 g = OUT_grid();
    vec4 c = vec4(0.0);
    if (!OUT_inside()) { OUT = c; return; }
#if HAS_P
    int r = g.x;
    int j = g.y;
    for (int q = kq0; q < kq1; ++q) {
        int k = 4 * q;
        vec4 a = A_texel(r, q);
        c += a.x * B_texel(k, j);
        c += a.y * B_texel(k + 1, j);
        c += a.z * B_texel(k + 2, j);
        c += a.w * B_texel(k + 3, j);
    }
#endif
    OUT = sgemm_epilogue(c, g.x, g.y);
}
