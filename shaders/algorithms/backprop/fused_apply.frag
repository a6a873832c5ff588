// Fused schedule, weight update, stage 2: W'[i][j] = W[i][j] - eta * sum_s P[s * W_ROWS + i][j]
// over the chunks s in [s_begin, s_end). The pass holding chunk 0 also adds W, so the result is
// right when the engine cuts the chunk range over several blended passes. Uniform: eta.
#include "common.glsl"
void main() {
    ivec2 p = OUT_pos(0);                 // (i, j): one weight per texel
    float acc = 0.0;
    for (int s = s_begin; s < s_end; ++s)
        acc += P_at(s * W_ROWS + p.x, p.y);
    OUT = vec4((s_begin == 0 ? W_at(p.x, p.y) : 0.0) - eta * acc);
}
