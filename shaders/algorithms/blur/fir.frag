// Exact separable Gaussian, one axis: OUT = sum_{|d| <= R} W(|d|) X(. + d) with the border
// (BORDER 0: reflect = half-sample symmetric, 1: nearest, 2: constant zero) applied to the
// index. AXIS 1 filters down the columns (each texel's four components independently), AXIS 0
// along the rows; GRAY 1 means four pixels of a row per texel (packed grayscale), GRAY 0 one
// pixel (its channels) per texel.
//
// The tap distances d in [k_begin, k_end) (the split range, d in [0, R]), each a symmetric pair
// of taps: the engine cuts the range over blended passes when one fragment would loop too long.
// R (uniform) is the radius; W (one row) holds the weights W(0..R), read as W_at(0, d) (W_get(d)
// would divide by W's width, a uniform); the line lengths come from OUT's shape.
//
// The taps are summed less the centre value c, OUT = c + sum W(|d|) (X(. + d) - c) (the weights
// sum to 1; the slice that holds d = 0 adds c after its sum), so that a constant image comes
// out exact and the float32 rounding of a long sum is relative to the image's range, not its
// magnitude (summing the values themselves, 1000 + rand at a large sigma would err by a
// sizeable fraction of its range).

// index i of a line of n pixels extended by the border; -1 where the border gives zero.
// rm = 1 / (2 n), computed once per fragment: the period 2 n of "reflect" is taken by a float
// quotient corrected by one step either way (exact for |i| < 2^23), as an integer division by
// a non-constant would cost a division per tap (scalar on a CPU rasteriser).
int ext(int i, int n, float rm) {
#if BORDER == 0
    int m = 2 * n;
    i -= m * int(floor(float(i) * rm));
    i += i < 0 ? m : 0;
    i -= i >= m ? m : 0;
    return i < n ? i : m - 1 - i;
#elif BORDER == 1
    return clamp(i, 0, n - 1);
#else
    return (i < 0 || i >= n) ? -1 : i;
#endif
}

// ext for taps within one line length of the line (R <= n, the usual case): one reflection
int ext1(int i, int n, float rm) {
#if BORDER == 0
    return i < 0 ? -1 - i : (i < n ? i : 2 * n - 1 - i);
#else
    return ext(i, n, rm);
#endif
}

// A border index of -1 (BORDER 2, constant zero) reads zero.
#if BORDER == 2
#define XT(r, c) ((r) >= 0 ? X_texel(max(r, 0), c) : vec4(0.0))
#define XA(r, c) ((c) >= 0 ? X_at(r, max(c, 0)) : 0.0)
#define XH(r, c) ((c) >= 0 ? X_texel(r, max(c, 0)) : vec4(0.0))
#else
#define XT(r, c) X_texel(r, c)
#define XA(r, c) X_at(r, c)
#define XH(r, c) X_texel(r, c)
#endif

// The tap loops: iteration d adds the pair of taps at -d and +d, W(d) (X(i - d) + X(i + d)),
// (the centre, d = 0, with half its weight), with the border index function E (ext1 where
// R <= n, else ext: a branch on uniforms, outside the loop).
#define WD(d) (W_at(0, d) * ((d) == 0 ? 0.5 : 1.0))
// Each tap is taken less the centre c before the pair is added (x - c is exact for the close
// values of an offset image; a + b - 2 c rounded a + b to the magnitude's ulp).
#define TAPS_V(E) \
    for (int d = k_begin; d < k_end; ++d) { \
        s += WD(d) * ((XT(E(g.x - d, n, rm), g.y) - c) + (XT(E(g.x + d, n, rm), g.y) - c)); \
    }
#define TAPS_GRAY(E) \
    for (int d = k_begin; d < k_end; ++d) { \
        a += WD(d) * ((XA(p.x, E(p.y - d, n, rm)) - c) + (XA(p.x, E(p.y + d, n, rm)) - c)); \
    }
#define TAPS_H(E) \
    for (int d = k_begin; d < k_end; ++d) { \
        s += WD(d) * ((XH(g.x, E(g.y - d, n, rm)) - c) + (XH(g.x, E(g.y + d, n, rm)) - c)); \
    }
void main() {
    ivec2 g = OUT_grid();
#if AXIS == 1
    int n = OUT_ROWS;
#elif GRAY
    int n = OUT_COLS;
#else
    int n = OUT_GRID_W;  // one pixel per texel: the row's pixels are the texels of the grid row
#endif
    float rm = 0.5 / float(n);
    bool near = R <= n;
    bool centre = k_begin == 0;  // this slice adds the centre value back (after its sum)
#if AXIS == 1
    vec4 c = X_texel(g.x, g.y);
    vec4 s = vec4(0.0);
    if (near) { TAPS_V(ext1) } else { TAPS_V(ext) }
    if (centre) s += c;
    OUT = mix(vec4(0.0), s, OUT_lanes());
#elif GRAY
    vec4 s = vec4(0.0);
    // Interior texels (inside the texture's grid, every tap of the slice's distances a pixel
    // of the row, no border, the four lanes live): whole texels of the row (a gray image is packed by rows, X_LANES = 4
    // pixels a texel, lane 0 at OUT_pos(0)). Distance d = X_LANES kb + j takes the left taps
    // of the four lanes from texels g.y - kb - 1 and g.y - kb and the right ones from
    // g.y + kb and g.y + kb + 1, shifted by j lanes: two texel fetches and one weight per
    // distance where the lane loop below makes eight element fetches and four weights. The
    // same sums in the same order per lane.
    int x0 = OUT_pos(0).y;
    int x3 = OUT_pos(3).y;
    if (OUT_inside() && x0 - (k_end - 1) >= 0 && x3 + (k_end - 1) <= n - 1) {
        vec4 c = X_texel(g.x, g.y);
        vec4 a = vec4(0.0);
        for (int kb = k_begin / X_LANES; kb < (k_end + X_LANES - 1) / X_LANES; ++kb) {
            vec4 lm = X_texel(g.x, max(g.y - kb - 1, 0));   // clamped: read only where in the row
            vec4 l0 = X_texel(g.x, g.y - kb);
            vec4 r0 = X_texel(g.x, g.y + kb);
            vec4 r1 = X_texel(g.x, min(g.y + kb + 1, X_GRID_W - 1));
            int d = X_LANES * kb;
            if (d >= k_begin && d < k_end) a += WD(d) * ((l0 - c) + (r0 - c));
            d += 1;
            if (d >= k_begin && d < k_end)
                a += WD(d) * ((vec4(lm.w, l0.xyz) - c) + (vec4(r0.yzw, r1.x) - c));
            d += 1;
            if (d >= k_begin && d < k_end)
                a += WD(d) * ((vec4(lm.zw, l0.xy) - c) + (vec4(r0.zw, r1.xy) - c));
            d += 1;
            if (d >= k_begin && d < k_end)
                a += WD(d) * ((vec4(lm.yzw, l0.x) - c) + (vec4(r0.w, r1.xyz) - c));
        }
        OUT = centre ? a + c : a;
        return;
    }
    for (int q = 0; q < 4; ++q) {
        if (!OUT_live(q)) continue;
        ivec2 p = OUT_pos(q);
        float c = X_at(p.x, p.y);
        float a = 0.0;
        if (near) { TAPS_GRAY(ext1) } else { TAPS_GRAY(ext) }
        s[q] = centre ? a + c : a;
    }
    OUT = s;
#else
    vec4 c = X_texel(g.x, g.y);
    vec4 s = vec4(0.0);
    if (near) { TAPS_H(ext1) } else { TAPS_H(ext) }
    if (centre) s += c;
    OUT = s;
#endif
}
