// Squared distances of the four points of data texel column gj to points h and l, over the
// feature texels [d4_lo, d4_hi) (a range, so long feature vectors can be cut across passes).
// Inputs: XC, the n x d data in column order, packed (grid row = feature, a texel holds that
// feature of 4 consecutive points, so neighbouring fragments read neighbouring texels), and
// XR, the same data in row order, packed (a texel holds 4 features of one point). The feature
// of each lane of XR's texel d4 comes from XR_flat(0, d4) (row 0's flat index = the feature;
// -1 marks padding lanes).
void rbf_acc(int d, int gj, float ph, float pl, inout vec4 sh, inout vec4 sl) {
    if (d >= 0) {
        vec4 x = XC_texel(d, gj);
        vec4 a = x - ph;
        vec4 b = x - pl;
        sh += a * a;
        sl += b * b;
    }
}

void rbf_d2_pair(int gj, int h, int l, int d4_lo, int d4_hi, out vec4 sh, out vec4 sl) {
    sh = vec4(0.0);
    sl = vec4(0.0);
    for (int d4 = d4_lo; d4 < d4_hi; ++d4) {
        ivec4 d = XR_flat(0, d4);
        vec4 ph = XR_texel(h, d4);
        vec4 pl = XR_texel(l, d4);
        rbf_acc(d.x, gj, ph.x, pl.x, sh, sl);
        rbf_acc(d.y, gj, ph.y, pl.y, sh, sl);
        rbf_acc(d.z, gj, ph.z, pl.z, sh, sl);
        rbf_acc(d.w, gj, ph.w, pl.w, sh, sl);
    }
}

void rbf_one_acc(int d, int gj, float ph, inout vec4 s) {
    if (d >= 0) {
        vec4 a = XC_texel(d, gj) - ph;
        s += a * a;
    }
}

// The same against one point h.
vec4 rbf_d2_one(int gj, int h, int d4_lo, int d4_hi) {
    vec4 s = vec4(0.0);
    for (int d4 = d4_lo; d4 < d4_hi; ++d4) {
        ivec4 d = XR_flat(0, d4);
        vec4 ph = XR_texel(h, d4);
        rbf_one_acc(d.x, gj, ph.x, s);
        rbf_one_acc(d.y, gj, ph.y, s);
        rbf_one_acc(d.z, gj, ph.z, s);
        rbf_one_acc(d.w, gj, ph.w, s);
    }
    return s;
}

// Fused RBF kernel rows: K(x_t, x_h), K(x_t, x_l) in one walk over all the features.
void rbf_pair(int gj, int h, int l, float gamma, out vec4 kh, out vec4 kl) {
    vec4 sh, sl;
    rbf_d2_pair(gj, h, l, 0, XR_GRID_W, sh, sl);
    kh = exp(-gamma * sh);
    kl = exp(-gamma * sl);
}

vec4 rbf_one(int gj, int h, float gamma) {
    return exp(-gamma * rbf_d2_one(gj, h, 0, XR_GRID_W));
}
