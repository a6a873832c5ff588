// Mini-batch trainer, forward propagation of the first layer, four batch rows per fragment:
// fragment (p, j) computes the partial sums A[4p + l] W of rows 4p + l (l = 0..3) for one
// texel j of W's columns into output Pl: per iteration one texel of each of the four rows of
// A and four texels of W (a 4 x 4 block) for 64 multiply-adds. The texels of A's rows are cut
// into SLICES ranges: Pl row s * Q + p (Q the fragments' rows) holds range s's partial sum,
// without the intercepts or the activation (mb_sum.frag adds them). Rows past A's are clamped
// (their sums are never read). Uniforms: nb.
void main() {
    ivec2 g = P0_grid();
    int Q = P0_ROWS / SLICES;
    int part = g.x / Q;
    int p = g.x - part * Q;
    int per = (A_GRID_W + SLICES - 1) / SLICES;
    int q0 = part * per;
    int q1 = min(A_GRID_W, q0 + per);
    ivec4 r = min(ivec4(4 * p) + ivec4(0, 1, 2, 3), ivec4(A_ROWS - 1));
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    if (4 * p < nb) {
        for (int q = q0; q < q1; ++q) {
            int k = 4 * q;
            mat4 w = mat4(W_texel(k, g.y), W_texel(k + 1, g.y), W_texel(k + 2, g.y),
                          W_texel(k + 3, g.y));
            s0 += w * A_texel(r.x, q);
            s1 += w * A_texel(r.y, q);
            s2 += w * A_texel(r.z, q);
            s3 += w * A_texel(r.w, q);
        }
    }
    P0 = s0;
    P1 = s1;
    P2 = s2;
    P3 = s3;
}
