// Paper schedule, error backpropagation: one pass per neuron k of the upper layer, which
// propagates its error to every neuron j of the lower layer for all training vectors:
// D[j][l] (+)= W[j][k] * Dup[k+1][l] * a (1 - a), a = A[j][l]. Row 0 (a = 1) stays 0.
// Pass k = 0 writes, the others accumulate with additive blending. Uniform: k.
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();
    vec4 a = A_texel(g.x, g.y);
    OUT = W_at(g.x, k) * DUP_texel(k + 1, g.y) * a * (1.0 - a);
}
