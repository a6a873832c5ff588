// Mini-batch trainer, error backpropagation into one hidden layer:
// OUT[r][k] = (sum_j D[r][j] W[k][j]) f'(A[r][k]) for the four units k of the texel.
#include "mb_common.glsl"
void main() {
    ivec2 g = OUT_grid();
    int r = g.x;
    int k = OUT_pos(0).y;                        // the texel's first unit
    vec4 s = vec4(0.0);
    for (int q = 0; q < D_GRID_W; ++q) {
        vec4 d = D_texel(r, q);
        s += vec4(dot(d, W_texel(k, q)), dot(d, W_texel(k + 1, q)),
                  dot(d, W_texel(k + 2, q)), dot(d, W_texel(k + 3, q)));
    }
    OUT = s * activate_derivative(A_texel(r, g.y)) * vec4(OUT_lanes());
}
