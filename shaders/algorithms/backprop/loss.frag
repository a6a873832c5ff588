// Squared error, partial sums: fragment c adds 1/2 (y - t)^2 over every output row and the
// CHUNK training-vector texels of chunk c; the host adds the few partial sums.
#include "common.glsl"
void main() {
    ivec2 g = OUT_grid();
    int b0 = g.y * CHUNK;
    int b1 = min(b0 + CHUNK, Y_GRID_W);
    float acc = 0.0;
    for (int r = 1; r < Y_ROWS; ++r)
        for (int b = b0; b < b1; ++b) {
            vec4 d = Y_texel(r, b) - T_texel(r, b);
            acc += vec_dot(d, d);
        }
    OUT = vec4(0.5 * acc);
}
