// Calibration: texel fetch rate. Each fragment sums 4 n_iter texels of X's grid: four
// independent fetches per iteration along its own grid row (wrapping with a mask: X_GRID_W is a
// power of two), starting at a column set by the fragment, so neighbouring fragments share
// cache lines like the kernels' gathers. No branch and no division in the loop: the time is the
// fetches (and 4 vec4 adds, 16 flops, per iteration).
void main() {
    ivec2 g = OUT_grid();
    int m = X_GRID_W - 1;
    int gi = g.x % X_GRID_H;
    int gj = (g.y * 4) & m;
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    for (int i = 0; i < n_iter; ++i) {
        s0 += X_texel(gi, gj);
        s1 += X_texel(gi, (gj + 1) & m);
        s2 += X_texel(gi, (gj + 2) & m);
        s3 += X_texel(gi, (gj + 3) & m);
        gj = (gj + 4) & m;
    }
    OUT = s0 + s1 + s2 + s3;
}
