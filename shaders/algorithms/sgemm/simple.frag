// SGEMM, simple variant: one output texel (1 row x 4 columns of C) per fragment.
// The K-quad range [kq_begin, kq_end) is a split range: the engine cuts it across passes summed
// by additive blending when the loop cap (or the caller's slices) asks for it; beta * C is
// added by the first slice only (kq_begin == 0).
// Per K-quad q: a = A[r, 4q .. 4q+3] (1 texel), b_u = B[4q+u, 4j .. 4j+3] (4 texels),
// c += a.x b_0 + a.y b_1 + a.z b_2 + a.w b_3; then C = alpha * c + beta * C.
#define HAS_P 1
#include "epilogue.glsl"
void main() {
    vec4 c = vec4(0.0);
    if (OUT_inside()) {
        ivec2 g = OUT_grid();
        for (int q = kq_begin; q < kq_end; ++q) {
            int k = 4 * q;
            vec4 a = A_texel(g.x, q);
            c += a.x * B_texel(k, g.y);
            c += a.y * B_texel(k + 1, g.y);
            c += a.z * B_texel(k + 2, g.y);
            c += a.w * B_texel(k + 3, g.y);
        }
    }
    OUT = sgemm_epilogue(c, kq_begin == 0);
}
