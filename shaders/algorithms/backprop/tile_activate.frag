// Fused schedule, forward propagation after tile_forward.frag: gathers Z from the product's
// render targets P<t> and writes A' = f(Z) in the live lanes, row 0 = 1; with OUTPUT_LAYER also
// the output error DELTA = (y - t) y (1 - y).
#include "common.glsl"
#include "tile_gather.glsl"
void main() {
    ivec2 g = OUT_grid();
    vec4 mask = vec4(OUT_lanes());
    vec4 y = g.x == 0 ? mask : sigmoid(tile_row(g.x - 1, P0_ROWS, 0, g.y)) * mask;
    OUT = y;
#if OUTPUT_LAYER
    DELTA = g.x == 0 ? vec4(0.0) : (y - T_texel(g.x, g.y)) * y * (1.0 - y);
#endif
}
