// Fused schedule, forward propagation after tile_forward.frag: gathers Z from the product's
// render targets P<t> and writes A' = f(Z) in the live lanes, row 0 = 1; with OUTPUT_LAYER also
// the output error DELTA = (y - t) y (1 - y). WINDOWS 1: the product read its weights from
// uniform-block windows of TILE_ROWS hw neurons (tile_forward.frag's WUBO), the windows' tile
// rows one after another in the targets, tile row r's texel c at grid texel
// (r rpt + c / S, c % S) (uniforms hw, rpt; S = P0_GRID_W).
#include "common.glsl"
#include "tile_gather.glsl"
vec4 z_row(int n, int c) {                // Z of neuron n at texel c
#if WINDOWS
    int w = n / (TILE_ROWS * hw);
    int m = n - w * TILE_ROWS * hw;
    int t = m / hw;
    int q = c / P0_GRID_W;
    return tile_pick(t, (w * hw + m - t * hw) * rpt + q, c - q * P0_GRID_W);
#else
    return tile_row(n, P0_ROWS, 0, c);
#endif
}
void main() {
    ivec2 g = OUT_grid();
    vec4 mask = vec4(OUT_lanes());
    vec4 y = g.x == 0 ? mask : sigmoid(z_row(g.x - 1, g.y)) * mask;
    OUT = y;
#if OUTPUT_LAYER
    DELTA = g.x == 0 ? vec4(0.0) : (y - T_texel(g.x, g.y)) * y * (1.0 - y);
#endif
}
