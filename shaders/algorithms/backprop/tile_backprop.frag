// Fused schedule, error backpropagation as a register-tiled product (ops/product/tile.glsl):
// S[i][l] = sum_k W[i][k] Dup[k+1][l] over the K-quads q in [q_begin, q_end) (k = 4q .. 4q+3),
// for TILE_ROWS (4 or 8) lower neurons i and four training vectors per fragment. W is
// column-packed: W_texel(k, p) holds W[4p .. 4p+3][k], so four fetches give a 4x4 block that
// tile_transpose turns into four rows of the tile (W_GRID_H = upper neurons, texture or
// buffer): the fragment at row h of the targets
// computes the quads of rows p = h (targets 0-3) and, with 8 rows, p = h + H (targets 4-7;
// H rows per target), read back by tile_row_quads in tile_delta.frag, which multiplies by
// a (1 - a). Linear in the sum: the range may be cut.
#include "common.glsl"
#include "ops/product/tile.glsl"
vec4 bp_w(int k, int iq) {
    return W_texel(min(k, W_GRID_H - 1), min(iq, W_GRID_W - 1)) * float(k < W_GRID_H);
}
vec4 bp_d(int k, int c) { return DUP_texel(min(k + 1, DUP_ROWS - 1), c); }
void main() {
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    vec4 c4 = vec4(0.0), c5 = vec4(0.0), c6 = vec4(0.0), c7 = vec4(0.0);
    if (OUT0_inside()) {
        ivec2 g = OUT0_grid();
        int iq = g.x;                             // texel column of W: rows 4 iq .. 4 iq + 3
        for (int q = q_begin; q < q_end; ++q) {
            int k = q * 4;
            vec4 b0 = bp_d(k, g.y), b1 = bp_d(k + 1, g.y);
            vec4 b2 = bp_d(k + 2, g.y), b3 = bp_d(k + 3, g.y);
            vec4 a0 = bp_w(k, iq), a1 = bp_w(k + 1, iq), a2 = bp_w(k + 2, iq);
            vec4 a3 = bp_w(k + 3, iq);
            tile_transpose(a0, a1, a2, a3);
            vec4 a4 = vec4(0.0), a5 = vec4(0.0), a6 = vec4(0.0), a7 = vec4(0.0);
#if TILE_ROWS >= 8
            int iq2 = iq + OUT0_ROWS;
            a4 = bp_w(k, iq2); a5 = bp_w(k + 1, iq2); a6 = bp_w(k + 2, iq2);
            a7 = bp_w(k + 3, iq2);
            tile_transpose(a4, a5, a6, a7);
#endif
            tile_quad(a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3,
                      c0, c1, c2, c3, c4, c5, c6, c7);
        }
    }
    OUT0 = c0; OUT1 = c1; OUT2 = c2; OUT3 = c3;
#if TILE_ROWS >= 8
    OUT4 = c4; OUT5 = c5; OUT6 = c6; OUT7 = c7;
#endif
}
