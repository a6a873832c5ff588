// SGEMM micro-tile kernel with A from a uniform block (variant "tile8x4-ubo").
// One draw covers ONE block of TILE_ROWS rows of C (block row i), so every fragment of the draw
// reads the same A values: the block window holds A[TILE_ROWS*i + t, 4*(kq0+q) .. +3] as vec4
// number q * TILE_ROWS + t (t = 0 .. TILE_ROWS-1, q = K-quad within the chunk), served by the
// constant cache instead of texel fetches. Per K-quad a fragment fetches 4 texels of B
// (2-D texture path, one texel = 4 columns) for 32 * TILE_ROWS flops:
//   b_u = B[4(kq0+q)+u, 4j .. 4j+3],  c_t += a_t.x b_0 + a_t.y b_1 + a_t.z b_2 + a_t.w b_3.
// Geometry (ubo_geo.glsl): block row i's fragments form a rect of band x width texels of the
// targets (a 2-D rect keeps the rasterizer's pixel quads full); the rects tile the targets.
// Fragment j of the rect computes C's texel column j of the block row; rect texels with j >=
// geo.z (past B's grid width) compute nothing. The host draws one rect per block row and K
// chunk (quads kq0 .. kq0 + ks_n * UNROLL - 1), moving the block window between draws;
// chunks after the first add by blending.
#include "ubo_geo.glsl"
void ubo_quad(int j, int q, inout vec4 c0, inout vec4 c1, inout vec4 c2, inout vec4 c3,
              inout vec4 c4, inout vec4 c5, inout vec4 c6, inout vec4 c7) {
    int k = 4 * (kq0 + q);
    vec4 b0 = B_texel(k, j);
    vec4 b1 = B_texel(k + 1, j);
    vec4 b2 = B_texel(k + 2, j);
    vec4 b3 = B_texel(k + 3, j);
    int v = q * TILE_ROWS;
    vec4 a;
    a = A_vec4(v);
    c0 += a.x * b0; c0 += a.y * b1; c0 += a.z * b2; c0 += a.w * b3;
    a = A_vec4(v + 1);
    c1 += a.x * b0; c1 += a.y * b1; c1 += a.z * b2; c1 += a.w * b3;
    a = A_vec4(v + 2);
    c2 += a.x * b0; c2 += a.y * b1; c2 += a.z * b2; c2 += a.w * b3;
    a = A_vec4(v + 3);
    c3 += a.x * b0; c3 += a.y * b1; c3 += a.z * b2; c3 += a.w * b3;
#if TILE_ROWS == 8
    a = A_vec4(v + 4);
    c4 += a.x * b0; c4 += a.y * b1; c4 += a.z * b2; c4 += a.w * b3;
    a = A_vec4(v + 5);
    c5 += a.x * b0; c5 += a.y * b1; c5 += a.z * b2; c5 += a.w * b3;
    a = A_vec4(v + 6);
    c6 += a.x * b0; c6 += a.y * b1; c6 += a.z * b2; c6 += a.w * b3;
    a = A_vec4(v + 7);
    c7 += a.x * b0; c7 += a.y * b1; c7 += a.z * b2; c7 += a.w * b3;
#endif
}
void main() {
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    vec4 c4 = vec4(0.0), c5 = vec4(0.0), c6 = vec4(0.0), c7 = vec4(0.0);
    ivec2 g = OUT0_grid();
    int j = ubo_fragment(g);
    if (j < geo.z) {
        for (int s = 0; s < ks_n; ++s) {
            int q = s * UNROLL;
            ubo_quad(j, q, c0, c1, c2, c3, c4, c5, c6, c7);
#if UNROLL > 1
            ubo_quad(j, q + 1, c0, c1, c2, c3, c4, c5, c6, c7);
#endif
#if UNROLL > 2
            ubo_quad(j, q + 2, c0, c1, c2, c3, c4, c5, c6, c7);
            ubo_quad(j, q + 3, c0, c1, c2, c3, c4, c5, c6, c7);
#endif
        }
    }
    OUT0 = c0; OUT1 = c1; OUT2 = c2; OUT3 = c3;
#if TILE_ROWS == 8
    OUT4 = c4; OUT5 = c5; OUT6 = c6; OUT7 = c7;
#endif
}
