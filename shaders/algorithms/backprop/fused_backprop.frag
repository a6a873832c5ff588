// Fused schedule, error backpropagation to one layer in one pass (loop over the upper layer):
// D[j][l] = a (1 - a) sum_k W[j][k] Dup[k+1][l], a = A[j][l]; row 0 (a = 1) gives 0.
// Linear in the sum over k in [k_begin, k_end): blended passes add up when the range is cut.
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();
    vec4 s = vec4(0.0);
    for (int k = k_begin; k < k_end; ++k)
        s += W_at(g.x, k) * DUP_texel(k + 1, g.y);
    vec4 a = A_texel(g.x, g.y);
    OUT = s * a * (1.0 - a);
}
