// Fused schedule, error backpropagation after tile_backprop.frag: D = S a (1 - a), S gathered
// from the product's render targets P<t>, a = A; row 0 (a = 1) and padding lanes give 0.
#include "common.glsl"
#include "tile_gather.glsl"
void main() {
    ivec2 g = OUT_grid();
    vec4 a = A_texel(g.x, g.y);
    OUT = tile_row_quads(g.x, P0_ROWS, g.y) * a * (1.0 - a);
}
