// Fused schedule, weight update, stage 2: W'[i][j] = W[i][j] - eta * sum_s G_s[i][j] over the
// chunks s in [s_begin, s_end), the partial sums G_s gathered from tile_partial.frag's render
// targets P<t>. W and W' are column-packed (texel (j, iq) = rows 4 iq .. 4 iq + 3 of column j);
// padding lanes are written 0. The pass holding chunk 0 also adds W, so the result is right
// when the engine cuts the chunk range over accumulating passes. Uniform: eta.
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();                 // (j, iq)
    int h = (W_COLS + TILE_ROWS - 1) / TILE_ROWS;     // rows per target and chunk
    int t = g.x / h;                                   // the target holding column j
    int i = g.x - t * h;
    vec4 acc = vec4(0.0);
    // one loop per target, entered by the fragments whose column it holds (neighbouring
    // columns share a target, so a block of fragments runs one of these loops)
#define SUM_CHUNKS(T, P) if (t == T) for (int s = s_begin; s < s_end; ++s) acc += P(s * h + i, g.y);
    SUM_CHUNKS(0, P0_texel)
#if TILE_ROWS >= 4
    SUM_CHUNKS(1, P1_texel)
    SUM_CHUNKS(2, P2_texel)
    SUM_CHUNKS(3, P3_texel)
#endif
#if TILE_ROWS >= 8
    SUM_CHUNKS(4, P4_texel)
    SUM_CHUNKS(5, P5_texel)
    SUM_CHUNKS(6, P6_texel)
    SUM_CHUNKS(7, P7_texel)
#endif
    vec4 w = s_begin == 0 ? W_texel(g.x, g.y) : vec4(0.0);
    OUT = mix(vec4(0.0), w - eta * acc, OUT_lanes());
}
