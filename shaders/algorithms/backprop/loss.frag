// Squared error, partial sums: fragment c adds 1/2 (y - t)^2 over the output rows and the
// `chunk` training-vector texels of chunk c; the host adds the few partial sums. The loop runs
// over q = (output row - 1) * chunk + texel offset in [q_begin, q_end), so the engine can cut it
// over blended passes. Uniform: chunk.
#include "common.glsl"
void main() {
    int b0 = OUT_pos(0).y * chunk;
    float acc = 0.0;
    for (int q = q_begin; q < q_end; ++q) {
        int r = q / chunk;
        int b = b0 + q - r * chunk;
        if (b < Y_GRID_W) {
            vec4 d = Y_texel(r + 1, b) - T_texel(r + 1, b);
            acc += vec_dot(d, d);
        }
    }
    OUT = vec4(0.5 * acc);
}
