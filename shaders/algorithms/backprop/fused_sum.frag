// Fused schedule, forward propagation when one layer's inputs exceed the loop cap: the linear
// part, Z[j+1][l] = sum over i in [i_begin, i_end) of W[i][j] A[i][l], row 0 zero; the engine
// cuts the range over blended passes and fused_activate.frag applies f.
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();
    vec4 s = vec4(0.0);
    if (g.x > 0)
        for (int i = i_begin; i < i_end; ++i)
            s += W_at(i, g.x - 1) * A_texel(i, g.y);
    OUT = s;
}
