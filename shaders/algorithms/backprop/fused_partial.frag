// Fused schedule, weight update, stage 1: partial sums of the gradient over CHUNK texels of
// training vectors. Output row r = s * A_ROWS + i (chunk s, weight row i), column j:
// P[r][j] = sum over the texels b of chunk s of D[j+1][b] . A[i][b].
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();
    int s = g.x / A_ROWS;
    int i = g.x - s * A_ROWS;
    int b0 = s * CHUNK;
    int b1 = min(b0 + CHUNK, A_GRID_W);
    float acc = 0.0;
    for (int b = b0; b < b1; ++b)
        acc += vec_dot(D_texel(g.y + 1, b), A_texel(i, b));
    OUT = vec4(acc);
}
