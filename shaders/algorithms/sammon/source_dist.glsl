// Source-space distances dn(i, j) for the three ways the source lives on the device (the
// SOURCE define):
//   SRC_ROWS   X (N x n) packed row-major: texel (j, t) holds coordinates 4t .. 4t+3 of
//              point j. A block is four consecutive points b .. b+3 (b a multiple of 4, the
//              sweep steps by 4): the fetch of point i's texel is shared by four pairs.
//   SRC_COLS   X packed column-major: texel (d, b) holds coordinate d of the four points of
//              packed column b, so one fetch serves four pairs (the sweep steps by 1).
//   SRC_CACHED D (N x N) packed row-major: texel (i, b) holds dn(i, j) for the four points j
//              of packed column b.
// src_block(i, b, j) returns the distances of point i to the four points of block b and writes
// their indices to j (-1 past the last point and for padding lanes). The packed sources take
// the indices from the layout's flat-index accessors (X_flat, D_flat), so no lane or padding
// arithmetic is written here.
#define SRC_ROWS 0
#define SRC_COLS 1
#define SRC_CACHED 2

#if SOURCE == SRC_ROWS
#define SRC_STEP 4
#else
#define SRC_STEP 1
#endif

// v where the flat index f is a real element (f >= 0), else -1.
ivec4 src_valid(ivec4 f, ivec4 v) {
    ivec4 keep = ivec4(greaterThanEqual(f, ivec4(0)));
    return v * keep + (keep - 1);
}

#if SOURCE == SRC_CACHED
vec4 src_block(int i, int b, out ivec4 j) {
    // Row 0's flat indices of packed column b are the lanes' columns j (-1 for padding). Not
    // D_flat(i, b) - i * N: i * N + j passes 2^31 from N = 46,341 (a wrapped, negative index
    // would drop the pair).
    j = D_flat(0, b);
    return D_texel(i, b);
}
#else
// dn(i, j) of one pair.
float src_dist1(int i, int j) {
    float acc = 0.0;
#if SOURCE == SRC_ROWS
    for (int t = 0; t < X_GRID_W; ++t) {
        vec4 d = X_texel(j, t) - X_texel(i, t);
        acc += dot(d, d);
    }
#else
    for (int c = 0; c < X_COLS; ++c) {
        float d = X_at(j, c) - X_at(i, c);
        acc += d * d;
    }
#endif
    return sqrt(acc);
}

#if SOURCE == SRC_COLS
vec4 src_block(int i, int b, out ivec4 j) {
    ivec4 f = X_flat(0, b);                    // flat index of coordinate 0 of each point: j * n
    j = src_valid(f, f / X_COLS);
    vec4 acc = vec4(0.0);
    for (int c = 0; c < X_COLS; ++c) {
        vec4 diff = X_texel(c, b) - vec4(X_at(i, c));
        acc += diff * diff;
    }
    return sqrt(acc);
}
#else
vec4 src_block(int i, int b, out ivec4 j) {
    ivec4 r = ivec4(b) + ivec4(0, 1, 2, 3);          // the block's four points (rows of X)
    ivec4 keep = ivec4(lessThan(r, ivec4(X_ROWS)));
    j = r * keep + (keep - 1);
    ivec4 q = min(r, ivec4(X_ROWS - 1));
    vec4 acc = vec4(0.0);
    for (int t = 0; t < X_GRID_W; ++t) {
        vec4 xi = X_texel(i, t);
        vec4 d0 = X_texel(q.x, t) - xi;
        vec4 d1 = X_texel(q.y, t) - xi;
        vec4 d2 = X_texel(q.z, t) - xi;
        vec4 d3 = X_texel(q.w, t) - xi;
        acc += vec4(dot(d0, d0), dot(d1, d1), dot(d2, d2), dot(d3, d3));
    }
    return sqrt(acc);
}
#endif
#endif
