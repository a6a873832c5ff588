// Paper schedule, weight update: one pass per training-vector texel b (one training vector
// unpacked, four packed): dW[i][j] (+)= -eta * sum over the vectors l in texel b of
// D[j+1][l] * A[i][l]. Pass b = 0 writes, the others accumulate with additive blending.
#include "common.glsl"
uniform int b;
uniform float eta;
void main() {
    ivec2 g = OUT_grid();                 // (i, j): one weight per texel
    OUT = vec4(-eta * vec_dot(D_texel(g.y + 1, b), A_texel(g.x, b)));
}
