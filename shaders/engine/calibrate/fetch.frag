// Calibration: texel fetch rate. Each fragment sums n_iter consecutive texels of X's grid
// (wrapping at its end), starting at its own row: neighbouring fragments share cache lines,
// like the kernels' gathers. No division in the loop, so the time is the fetches.
void main() {
    ivec2 g = OUT_grid();
    vec4 s = vec4(0.0);
    int h = X_GRID_H, w = X_GRID_W;
    int gi = g.x % h, gj = g.y % w;
    for (int i = 0; i < n_iter; ++i) {
        s += X_texel(gi, gj);
        gj += 1;
        if (gj == w) { gj = 0; gi = gi + 1 == h ? 0 : gi + 1; }
    }
    OUT = s;
}
