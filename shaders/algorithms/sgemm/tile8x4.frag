// SGEMM micro-tile kernel: each fragment computes an 8-row x 4-column tile of P = A * B.
// A (Mp x Kp, packed rows) is read through A_texel: a samplerBuffer (the plain buffer path)
// or a 2-D texture, whichever input the host binds; B (Kp x Np, packed rows) through the
// 2-D texture path, one texel = 4 columns. For each K-quad q (k = 4q .. 4q+3):
//   b_u = B[4q+u, 4j .. 4j+3] (4 texels),  a_t = A[8i+t, 4q .. 4q+3] (8 texels),
//   c_t += a_t.x b_0 + a_t.y b_1 + a_t.z b_2 + a_t.w b_3        (t = 0 .. 7)
// and the 8 rows go out through 8 render targets: OUTt[i, j] = P[8i+t, 4j .. 4j+3].
// K is split across passes by [kq0, kq1) (additive blending sums the slices).
// TILE_ROWS 4 gives the smaller 4x4 tile (4 render targets) for comparison.
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef TILE_ROWS
#define TILE_ROWS 8
#endif
uniform int kq0;
uniform int kq1;
void main() {
    ivec2 g = OUT0_grid();
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    vec4 c4 = vec4(0.0), c5 = vec4(0.0), c6 = vec4(0.0), c7 = vec4(0.0);
    if (OUT0_inside()) {
        int r = TILE_ROWS * g.x;
        int j = g.y;
        for (int q0 = kq0; q0 < kq1; q0 += UNROLL) {
            for (int u = 0; u < UNROLL; ++u) {
                int q = q0 + u;
                int k = 4 * q;
                vec4 b0 = B_texel(k, j);
                vec4 b1 = B_texel(k + 1, j);
                vec4 b2 = B_texel(k + 2, j);
                vec4 b3 = B_texel(k + 3, j);
                vec4 a;
                a = A_texel(r, q);
                c0 += a.x * b0; c0 += a.y * b1; c0 += a.z * b2; c0 += a.w * b3;
                a = A_texel(r + 1, q);
                c1 += a.x * b0; c1 += a.y * b1; c1 += a.z * b2; c1 += a.w * b3;
                a = A_texel(r + 2, q);
                c2 += a.x * b0; c2 += a.y * b1; c2 += a.z * b2; c2 += a.w * b3;
                a = A_texel(r + 3, q);
                c3 += a.x * b0; c3 += a.y * b1; c3 += a.z * b2; c3 += a.w * b3;
#if TILE_ROWS == 8
                a = A_texel(r + 4, q);
                c4 += a.x * b0; c4 += a.y * b1; c4 += a.z * b2; c4 += a.w * b3;
                a = A_texel(r + 5, q);
                c5 += a.x * b0; c5 += a.y * b1; c5 += a.z * b2; c5 += a.w * b3;
                a = A_texel(r + 6, q);
                c6 += a.x * b0; c6 += a.y * b1; c6 += a.z * b2; c6 += a.w * b3;
                a = A_texel(r + 7, q);
                c7 += a.x * b0; c7 += a.y * b1; c7 += a.z * b2; c7 += a.w * b3;
#endif
            }
        }
    }
    OUT0 = c0; OUT1 = c1; OUT2 = c2; OUT3 = c3;
#if TILE_ROWS == 8
    OUT4 = c4; OUT5 = c5; OUT6 = c6; OUT7 = c7;
#endif
}
