// Mini-batch trainer, one layer's batch gradient sum_r A[r]^T D[r] (the L2 term and the step are
// mb_update.frag's). Each fragment owns a 4 x 4 block of the weights (Lp + 1, L'): the four rows
// 4q .. 4q + 3 that meet texel q of A's rows, times one texel j of D's rows (four columns); its
// output Gl holds row 4q + l of the block, so each iteration fetches one texel of A and one of D
// for 16 multiply-adds. Block row q = A_GRID_W is the intercepts: G0 the sum of D's rows, G1..G3
// zero. SLICES > 1 cuts the batch rows into SLICES ranges: Gl row s * Q + q (Q the block rows)
// holds range s's partial sum, summed by mb_update.frag. Uniforms: nb.
void main() {
    ivec2 g = G0_grid();
    int Q = G0_ROWS / SLICES;
    int part = g.x / Q;
    int q = g.x - part * Q;
    int per = (D_ROWS + SLICES - 1) / SLICES;
    int r0 = part * per;
    int r1 = min(nb, r0 + per);
    vec4 g0 = vec4(0.0), g1 = vec4(0.0), g2 = vec4(0.0), g3 = vec4(0.0);
    if (q == A_GRID_W) {
        for (int r = r0; r < r1; ++r) g0 += D_texel(r, g.y);
    } else {
        for (int r = r0; r < r1; ++r) {
            vec4 a = A_texel(r, q);
            vec4 d = D_texel(r, g.y);
            g0 += a.x * d;
            g1 += a.y * d;
            g2 += a.z * d;
            g3 += a.w * d;
        }
    }
    G0 = g0;
    G1 = g1;
    G2 = g2;
    G3 = g3;
}
