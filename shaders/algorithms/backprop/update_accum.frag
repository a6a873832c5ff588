// Paper schedule, weight update: one pass per training-vector texel b (one training vector
// unpacked, four packed): dW[i][j] (+)= -eta * sum over the vectors l in texel b of
// D[j+1][l] * A[i][l]. Pass b = 0 writes, the others accumulate with additive blending.
// Uniforms: b, eta.
#include "common.glsl"
void main() {
    ivec2 p = OUT_pos(0);                 // (i, j): one weight per texel
    OUT = vec4(-eta * vec_dot(D_texel(p.y + 1, b), A_texel(p.x, b)));
}
