// SGEMM epilogue pass: C_out = alpha * P + beta * C, where the micro-tile kernel left row
// TILE_ROWS*i+t of P in P<t>[i] (one render target per row of the tile). TILE_ROWS 0: no
// product (alpha == 0), C_out = beta * C. (The uniform-block variants: combine_ubo.frag.)
#define HAS_P (TILE_ROWS > 0)
#include "epilogue.glsl"
void main() {
    vec4 p = vec4(0.0);
#if TILE_ROWS > 0
    if (OUT_inside()) {
        ivec2 g = OUT_grid();
        int i = g.x / TILE_ROWS;
        int t = g.x - TILE_ROWS * i;
        if (t == 0) p = P0_texel(i, g.y);
        else if (t == 1) p = P1_texel(i, g.y);
        else if (t == 2) p = P2_texel(i, g.y);
        else if (t == 3) p = P3_texel(i, g.y);
#if TILE_ROWS == 8
        else if (t == 4) p = P4_texel(i, g.y);
        else if (t == 5) p = P5_texel(i, g.y);
        else if (t == 6) p = P6_texel(i, g.y);
        else if (t == 7) p = P7_texel(i, g.y);
#endif
    }
#endif
    OUT = sgemm_epilogue(p, true);
}
