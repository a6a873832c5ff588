// Source-space distances dn(i, j) for a block of four points j = jb .. jb+3 (jb a multiple
// of 4), for the three ways the source lives on the device:
//   SRC_CACHED  D: the N x N matrix of distances, packed row-major: one fetch gives four dn.
//   SRC_COLS    X: coordinates column-major (order="col"): texel (d, jb/4) holds coordinate d
//               of the four points jb .. jb+3, so one fetch serves four pairs.
//   (default)   X: coordinates row-major (order="row"): texel (j, t) holds coordinates
//               4t .. 4t+3 of point j; the fetch of point i is shared by the four pairs.
// Lanes past the last point (j >= N) are garbage-free but meaningless; callers mask them.
// Texels are read only through the layout accessors (D_texel, X_texel, X_at), which do the
// packing and wrapping. The only index arithmetic here is on the j block: jb >> 2 turns the
// first point of the block into its texel index along the packed axis (jb is a multiple of
// 4, so this is jb / 4), and the row-major path offsets jb by 0..3 and clamps to X_ROWS - 1
// to name the four points' rows.
#ifdef SRC_CACHED
vec4 src_dist4(int i, int jb) {
    return D_texel(i, jb >> 2);
}
#elif defined(SRC_COLS)
vec4 src_dist4(int i, int jb) {
    int jg = jb >> 2;
    vec4 acc = vec4(0.0);
    for (int d = 0; d < X_COLS; ++d) {
        vec4 diff = X_texel(d, jg) - vec4(X_at(i, d));
        acc += diff * diff;
    }
    return sqrt(acc);
}
#else
vec4 src_dist4(int i, int jb) {
    ivec4 j = min(ivec4(jb) + ivec4(0, 1, 2, 3), ivec4(X_ROWS - 1));
    vec4 acc = vec4(0.0);
    for (int t = 0; t < X_GRID_W; ++t) {
        vec4 xi = X_texel(i, t);
        vec4 d0 = X_texel(j.x, t) - xi;
        vec4 d1 = X_texel(j.y, t) - xi;
        vec4 d2 = X_texel(j.z, t) - xi;
        vec4 d3 = X_texel(j.w, t) - xi;
        acc += vec4(dot(d0, d0), dot(d1, d1), dot(d2, d2), dot(d3, d3));
    }
    return sqrt(acc);
}
#endif
