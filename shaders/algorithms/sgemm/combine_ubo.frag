// SGEMM epilogue of the uniform-block variants: C_out = alpha * P + beta * C, gathering P from
// the N_OUT product targets. Element (row, col) of P: block row i = row / TILE_ROWS, tile row
// r = row - TILE_ROWS i; fragment column f = col / TILE_COLS, tile column c = col - TILE_COLS f;
// it lies in target t, lane l with 4 t + l = r TILE_COLS + c, at the texel of fragment f of
// block row i in the targets' geometry (ubo_geo.glsl).
// The TILE_COLS lanes of C from one fragment share one texel of the targets.
#define HAS_P 1
#include "epilogue.glsl"
#define TILE_ROWS (4 * N_OUT / TILE_COLS)
#include "ubo_geo.glsl"
vec4 ubo_part(int t, int i, int f) {
    ivec2 q = ubo_texel(i, f);
    int gi = q.x;
    int gj = q.y;
    if (t == 0) return P0_texel(gi, gj);
#if N_OUT > 1
    if (t == 1) return P1_texel(gi, gj);
#endif
#if N_OUT > 2
    if (t == 2) return P2_texel(gi, gj);
    if (t == 3) return P3_texel(gi, gj);
#endif
#if N_OUT > 4
    if (t == 4) return P4_texel(gi, gj);
    if (t == 5) return P5_texel(gi, gj);
    if (t == 6) return P6_texel(gi, gj);
    if (t == 7) return P7_texel(gi, gj);
#endif
    return vec4(0.0);
}
void main() {
    vec4 p = vec4(0.0);
    for (int l0 = 0; l0 < 4; l0 += TILE_COLS) {
        if (OUT_live(l0)) {
            ivec2 e = OUT_pos(l0);               // (row, col) of C, col a multiple of TILE_COLS
            int i = e.x / TILE_ROWS;
            int idx = (e.x - i * TILE_ROWS) * TILE_COLS;   // element r TILE_COLS of the tile
            int t = idx / 4;                               // its target
            int first = idx - t * 4;                       // and lane in the target's texel
            vec4 x = ubo_part(t, i, e.y / TILE_COLS);
            for (int c = 0; c < TILE_COLS; ++c) p[l0 + c] = x[first + c];
        }
    }
    OUT = sgemm_epilogue(p, true);
}
