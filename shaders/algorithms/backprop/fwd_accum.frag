// Paper schedule, forward propagation: one pass per row i of A (threshold row included).
// Z[j][l] (+)= W[i][j] * A[i][l] for all N training vectors and all neurons j of the next layer;
// pass i = 0 writes (clears), the others accumulate with additive blending. Uniform: i.
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();                 // (neuron j, training-vector texel)
    OUT = W_at(i, g.x) * A_texel(i, g.y);
}
