// SGEMM epilogue pass: C_out = alpha * P + beta * C, where the micro-tile kernel left row
// TILE_ROWS*i+t of P in P<t>[i] (one render target per row of the tile). TILE_ROWS 0: no
// product (alpha == 0), C_out = beta * C. With band > 1 (uniform-block variant) block row i
// occupies rows i*band .. i*band+band-1 of P, C's texel column j at (j / P_GRID_W, j % P_GRID_W).
#define HAS_P (TILE_ROWS > 0)
#include "epilogue.glsl"
void main() {
    vec4 p = vec4(0.0);
#if TILE_ROWS > 0
    if (OUT_inside()) {
        ivec2 g = OUT_grid();
        int i = g.x / TILE_ROWS;
        int t = g.x - TILE_ROWS * i;
        // block row i lies in `band` rows of P (1 except for the uniform-block variant)
        int h = g.y / P0_GRID_W;
        int pi = i * band + h;
        int pj = g.y - h * P0_GRID_W;
        if (t == 0) p = P0_texel(pi, pj);
        else if (t == 1) p = P1_texel(pi, pj);
        else if (t == 2) p = P2_texel(pi, pj);
        else if (t == 3) p = P3_texel(pi, pj);
#if TILE_ROWS == 8
        else if (t == 4) p = P4_texel(pi, pj);
        else if (t == 5) p = P5_texel(pi, pj);
        else if (t == 6) p = P6_texel(pi, pj);
        else if (t == 7) p = P7_texel(pi, pj);
#endif
    }
#endif
    OUT = sgemm_epilogue(p, true);
}
