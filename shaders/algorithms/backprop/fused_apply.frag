// Fused schedule, weight update, stage 2: W'[i][j] = W[i][j] - eta * sum_s P[s * W_ROWS + i][j].
#include "common.glsl"
uniform float eta;
void main() {
    ivec2 g = OUT_grid();
    float acc = 0.0;
    for (int s = 0; s < P_ROWS / W_ROWS; ++s)
        acc += P_at(s * W_ROWS + g.x, g.y);
    OUT = vec4(W_at(g.x, g.y) - eta * acc);
}
