// Output error (a pass the paper's count leaves out): D = (y - t) y (1 - y) per output neuron
// and training vector; row 0 (the threshold row) and padding lanes are 0.
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();
    vec4 y = Y_texel(g.x, g.y);
    vec4 t = T_texel(g.x, g.y);
    OUT = g.x == 0 ? vec4(0.0) : (y - t) * y * (1.0 - y) * vec4(OUT_lanes());
}
