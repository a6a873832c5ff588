// SGEMM micro-tile kernel: each fragment computes a TILE_ROWS x 4 tile of P = A * B.
// A (Mp x Kp, packed rows) is read through A_texel: a samplerBuffer (the plain buffer path)
// or a 2-D texture, whichever input the host binds; B (Kp x N, packed rows) through the 2-D
// texture path, one texel = 4 columns. For each K-quad q (k = 4q .. 4q+3):
//   b_u = B[4q+u, 4j .. 4j+3] (4 texels),  a_t = A[8i+t, 4q .. 4q+3] (8 texels),
//   c_t += a_t.x b_0 + a_t.y b_1 + a_t.z b_2 + a_t.w b_3        (t = 0 .. 7)
// and the rows go out through TILE_ROWS render targets: OUTt[i, j] = P[8i+t, 4j .. 4j+3].
// The loop runs over steps of UNROLL K-quads (UNROLL 1, 2 or 4, unrolled by hand so one step
// is one loop iteration); [ks_begin, ks_end) is a split range the engine cuts across passes
// summed by additive blending. TILE_ROWS 4 gives the smaller 4x4 tile (4 render targets).
void sgemm_quad(int r, int j, int q, inout vec4 c0, inout vec4 c1, inout vec4 c2,
                inout vec4 c3, inout vec4 c4, inout vec4 c5, inout vec4 c6, inout vec4 c7) {
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
void main() {
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    vec4 c4 = vec4(0.0), c5 = vec4(0.0), c6 = vec4(0.0), c7 = vec4(0.0);
    if (OUT0_inside()) {
        ivec2 g = OUT0_grid();
        int r = TILE_ROWS * g.x;
        for (int s = ks_begin; s < ks_end; ++s) {
            int q = s * UNROLL;
            sgemm_quad(r, g.y, q, c0, c1, c2, c3, c4, c5, c6, c7);
#if UNROLL > 1
            sgemm_quad(r, g.y, q + 1, c0, c1, c2, c3, c4, c5, c6, c7);
#endif
#if UNROLL > 2
            sgemm_quad(r, g.y, q + 2, c0, c1, c2, c3, c4, c5, c6, c7);
            sgemm_quad(r, g.y, q + 3, c0, c1, c2, c3, c4, c5, c6, c7);
#endif
        }
    }
    OUT0 = c0; OUT1 = c1; OUT2 = c2; OUT3 = c3;
#if TILE_ROWS == 8
    OUT4 = c4; OUT5 = c5; OUT6 = c6; OUT7 = c7;
#endif
}
