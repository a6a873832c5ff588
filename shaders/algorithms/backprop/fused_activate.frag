// Fused schedule, forward propagation after fused_sum.frag: A' = f(Z) in the live lanes, row 0
// = 1; with OUTPUT_LAYER also the output error DELTA = (y - t) y (1 - y).
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();
    vec4 mask = vec4(OUT_lanes());
    vec4 y = g.x == 0 ? mask : sigmoid(Z_texel(g.x, g.y)) * mask;
    OUT = y;
#if OUTPUT_LAYER
    DELTA = g.x == 0 ? vec4(0.0) : (y - T_texel(g.x, g.y)) * y * (1.0 - y);
#endif
}
