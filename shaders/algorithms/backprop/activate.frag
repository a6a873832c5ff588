// Paper schedule, forward propagation: the pass that applies f. Writes the next layer's
// activations with their constant row 0 (1 in the lanes that hold a training vector).
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();                 // (row r of A', training-vector texel)
    vec4 mask = vec4(OUT_lanes());
    OUT = g.x == 0 ? mask : sigmoid(Z_texel(g.x - 1, g.y)) * mask;
}
