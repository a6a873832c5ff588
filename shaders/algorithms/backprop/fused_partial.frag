// Fused schedule, weight update, stage 1: partial sums of the gradient over `chunk` texels of
// training vectors. Output row r = s * A_ROWS + i (chunk s, weight row i), column j:
// P[r][j] = sum over the texels b of chunk s of D[j+1][b] . A[i][b]. Uniform: chunk.
#include "common.glsl"
void main() {
    ivec2 p = OUT_pos(0);                 // one partial sum per texel
    int s = p.x / A_ROWS;
    int i = p.x - s * A_ROWS;
    int b0 = s * chunk;
    int b1 = min(b0 + chunk, A_GRID_W);
    float acc = 0.0;
    for (int b = b0; b < b1; ++b)
        acc += vec_dot(D_texel(p.y + 1, b), A_texel(i, b));
    OUT = vec4(acc);
}
