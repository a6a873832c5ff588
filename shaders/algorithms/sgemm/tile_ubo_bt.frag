// SGEMM micro-tile kernel with A from a uniform block and B transposed (variants
// "tile16x2-ubo", "tile32x1-ubo"): each fragment computes TILE_ROWS x TILE_COLS elements of C
// (TILE_COLS 2 or 1 columns, TILE_ROWS = 4 N_OUT / TILE_COLS rows, N_OUT render targets).
// B arrives as op(B)^T, packed rows (one texel = 4 consecutive K of one column of C), so a
// K-quad costs TILE_COLS texel fetches: with 32 elements per fragment, 128 (2 columns) or 256
// (1 column) flops per fetch instead of the 64 of the 8x4 tile; A's rows come from the
// block window as in tile8x4_ubo.frag (vec4 number q * TILE_ROWS + r = A[TILE_ROWS*i + r,
// 4*(kq0+q) .. +3]), one address per draw. For K-quad q and column c of the tile:
//   b_c = op(B)[4(kq0+q) .. +3, TILE_COLS*f + c],  C[r, c] += a_r . b_c (4 multiply-adds).
// Element (r, c) of the tile goes to target t, lane l with 4 t + l = r TILE_COLS + c.
// Geometry as in tile8x4_ubo.frag (ubo_geo.glsl); f = the fragment within its block row.
#include "ubo_geo.glsl"
#define TILE_ROWS (4 * N_OUT / TILE_COLS)
#define ROWS_PER_TARGET (4 / TILE_COLS)
// s += a . b as 4 multiply-adds (K ascending)
#define DOT_ADD(s, a, b) s += a.x * b.x; s += a.y * b.y; s += a.z * b.z; s += a.w * b.w
void ubo_target(int v, vec4 b0, vec4 b1, inout vec4 c) {
#if TILE_COLS == 2
    vec4 a = A_vec4(v);
    DOT_ADD(c.x, a, b0); DOT_ADD(c.y, a, b1);
    a = A_vec4(v + 1);
    DOT_ADD(c.z, a, b0); DOT_ADD(c.w, a, b1);
#else
    vec4 a = A_vec4(v);
    DOT_ADD(c.x, a, b0);
    a = A_vec4(v + 1);
    DOT_ADD(c.y, a, b0);
    a = A_vec4(v + 2);
    DOT_ADD(c.z, a, b0);
    a = A_vec4(v + 3);
    DOT_ADD(c.w, a, b0);
#endif
}
void ubo_quad(int f, int q, inout vec4 c0, inout vec4 c1, inout vec4 c2, inout vec4 c3,
              inout vec4 c4, inout vec4 c5, inout vec4 c6, inout vec4 c7) {
    int kq = kq0 + q;
    int v = q * TILE_ROWS;
    vec4 b0 = B_texel(TILE_COLS * f, kq);
#if TILE_COLS == 2
    vec4 b1 = B_texel(TILE_COLS * f + 1, kq);
#else
    vec4 b1 = b0;
#endif
    ubo_target(v, b0, b1, c0);
#if N_OUT > 1
    ubo_target(v + ROWS_PER_TARGET, b0, b1, c1);
#endif
#if N_OUT > 2
    ubo_target(v + 2 * ROWS_PER_TARGET, b0, b1, c2);
    ubo_target(v + 3 * ROWS_PER_TARGET, b0, b1, c3);
#endif
#if N_OUT > 4
    ubo_target(v + 4 * ROWS_PER_TARGET, b0, b1, c4);
    ubo_target(v + 5 * ROWS_PER_TARGET, b0, b1, c5);
    ubo_target(v + 6 * ROWS_PER_TARGET, b0, b1, c6);
    ubo_target(v + 7 * ROWS_PER_TARGET, b0, b1, c7);
#endif
}
void main() {
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    vec4 c4 = vec4(0.0), c5 = vec4(0.0), c6 = vec4(0.0), c7 = vec4(0.0);
    ivec2 g = OUT0_grid();
    int f = ubo_fragment(g);
    if (f < geo.z) {
        for (int s = 0; s < ks_n; ++s) {
            int q = s * UNROLL;
            ubo_quad(f, q, c0, c1, c2, c3, c4, c5, c6, c7);
#if UNROLL > 1
            ubo_quad(f, q + 1, c0, c1, c2, c3, c4, c5, c6, c7);
#endif
#if UNROLL > 2
            ubo_quad(f, q + 2, c0, c1, c2, c3, c4, c5, c6, c7);
            ubo_quad(f, q + 3, c0, c1, c2, c3, c4, c5, c6, c7);
#endif
        }
    }
    OUT0 = c0;
#if N_OUT > 1
    OUT1 = c1;
#endif
#if N_OUT > 2
    OUT2 = c2; OUT3 = c3;
#endif
#if N_OUT > 4
    OUT4 = c4; OUT5 = c5; OUT6 = c6; OUT7 = c7;
#endif
}
