// Exact separable Gaussian, one axis: OUT = sum_{|k| <= R} W(|k|) X(. + k) with the border
// (BORDER 0: reflect = half-sample symmetric, 1: nearest, 2: constant zero) applied to the
// index. AXIS 1 filters down the rows (each texel's four components independently), AXIS 0
// along a row; GRAY 1 means four pixels of a row per texel, GRAY 0 one pixel per texel.
uniform int R;

// index i of a line of n pixels extended by the border; -1 where the border gives zero
int ext(int i, int n) {
#if BORDER == 0
    int m = 2 * n;
    i = i - m * (i / m);
    if (i < 0) i += m;
    return i < n ? i : m - 1 - i;
#elif BORDER == 1
    return clamp(i, 0, n - 1);
#else
    return (i < 0 || i >= n) ? -1 : i;
#endif
}

void main() {
    ivec2 g = OUT_grid();
#if AXIS == 1
    vec4 s = vec4(0.0);
    for (int k = -R; k <= R; ++k) {
        int r = ext(g.x + k, LINE_N);
        if (r >= 0) s += W_get(abs(k)) * X_texel(r, g.y);
    }
    OUT = s;
#elif GRAY
    vec4 s = vec4(0.0);
    for (int q = 0; q < 4; ++q) {
        int c0 = 4 * g.y + q;
        if (c0 >= LINE_N) break;
        float a = 0.0;
        for (int k = -R; k <= R; ++k) {
            int c = ext(c0 + k, LINE_N);
            if (c >= 0) a += W_get(abs(k)) * X_at(g.x, c);
        }
        s[q] = a;
    }
    OUT = s;
#else
    vec4 s = vec4(0.0);
    for (int k = -R; k <= R; ++k) {
        int c = ext(g.y + k, LINE_N);
        if (c >= 0) s += W_get(abs(k)) * X_texel(g.x, c);
    }
    OUT = s;
#endif
}
