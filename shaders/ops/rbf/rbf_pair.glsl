// RBF kernel of the four points of data texel column gj against points h and l, fused:
// one walk over the features computes both squared distances (the source's high/low loop).
// Inputs: XC, the n x d data in column order, packed (grid row = feature, a texel holds that
// feature of 4 consecutive points, so neighbouring fragments read neighbouring texels), and
// XR, the same data in row order, packed (a texel holds 4 features of one point).
void rbf_pair(int gj, int h, int l, float gamma, out vec4 kh, out vec4 kl) {
    vec4 sh = vec4(0.0);
    vec4 sl = vec4(0.0);
    for (int d4 = 0; d4 < XR_GRID_W; ++d4) {
        vec4 ph = XR_texel(h, d4);
        vec4 pl = XR_texel(l, d4);
        for (int c = 0; c < 4; ++c) {
            int d = 4 * d4 + c;
            if (d < XC_COLS) {
                vec4 x = XC_texel(d, gj);
                vec4 a = x - ph[c];
                vec4 b = x - pl[c];
                sh += a * a;
                sl += b * b;
            }
        }
    }
    kh = exp(-gamma * sh);
    kl = exp(-gamma * sl);
}

// The same against one point h.
vec4 rbf_one(int gj, int h, float gamma) {
    vec4 s = vec4(0.0);
    for (int d4 = 0; d4 < XR_GRID_W; ++d4) {
        vec4 ph = XR_texel(h, d4);
        for (int c = 0; c < 4; ++c) {
            int d = 4 * d4 + c;
            if (d < XC_COLS) {
                vec4 a = XC_texel(d, gj) - ph[c];
                s += a * a;
            }
        }
    }
    return exp(-gamma * s);
}
