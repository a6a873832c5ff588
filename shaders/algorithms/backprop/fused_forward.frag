// Fused schedule, forward propagation of one layer in one pass (loop over the inputs):
// A'[j+1][l] = f(sum_i W[i][j] A[i][l]), row 0 = 1 in the live lanes. With OUTPUT_LAYER it also
// writes the output error DELTA = (y - t) y (1 - y) from the targets T (same rows as A').
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();
    vec4 mask = vec4(OUT_lanes());
    vec4 y = mask;
    if (g.x > 0) {
        vec4 s = vec4(0.0);
        for (int i = 0; i < A_ROWS; ++i)
            s += W_at(i, g.x - 1) * A_texel(i, g.y);
        y = sigmoid(s) * mask;
    }
    OUT = y;
#if OUTPUT_LAYER
    DELTA = g.x == 0 ? vec4(0.0) : (y - T_texel(g.x, g.y)) * y * (1.0 - y);
#endif
}
