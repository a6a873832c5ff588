// Exact separable Gaussian, one axis: OUT = sum_{|d| <= R} W(|d|) X(. + d) with the border
// (BORDER 0: reflect = half-sample symmetric, 1: nearest, 2: constant zero) applied to the
// index. AXIS 1 filters down the columns (each texel's four components independently), AXIS 0
// along the rows; GRAY 1 means four pixels of a row per texel (packed grayscale), GRAY 0 one
// pixel (its channels) per texel.
//
// The taps d = k - R for k in [k_begin, k_end) (the split range, k in [0, 2R + 1)): the engine
// cuts the range over blended passes when one fragment would loop too long. R (uniform) is the
// radius; W holds the weights W(0..R); the line lengths come from OUT's shape.

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
    for (int k = k_begin; k < k_end; ++k) {
        int r = ext(g.x + k - R, OUT_ROWS);
        if (r >= 0) s += W_get(abs(k - R)) * X_texel(r, g.y);
    }
    OUT = mix(vec4(0.0), s, OUT_lanes());
#elif GRAY
    vec4 s = vec4(0.0);
    for (int q = 0; q < 4; ++q) {
        if (!OUT_live(q)) continue;
        ivec2 p = OUT_pos(q);
        float a = 0.0;
        for (int k = k_begin; k < k_end; ++k) {
            int c = ext(p.y + k - R, OUT_COLS);
            if (c >= 0) a += W_get(abs(k - R)) * X_at(p.x, c);
        }
        s[q] = a;
    }
    OUT = s;
#else
    // one pixel per texel: the row's pixels are the texels of the grid row
    vec4 s = vec4(0.0);
    for (int k = k_begin; k < k_end; ++k) {
        int c = ext(g.y + k - R, OUT_GRID_W);
        if (c >= 0) s += W_get(abs(k - R)) * X_texel(g.x, c);
    }
    OUT = s;
#endif
}
