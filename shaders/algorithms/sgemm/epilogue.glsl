// Shared tail of the SGEMM kernels that write C: alpha * product + beta * C, and exact zeros
// in the lanes past the last column (the padding of a packed row stays clean).
uniform float alpha;
uniform float beta;
vec4 sgemm_epilogue(vec4 p, int r, int j) {
    vec4 v = vec4(0.0);
#if HAS_P
    v = alpha * p;
#endif
#if HAS_C
#if C_PACKED_ROW
    v += beta * C_texel(r, j);
#else
    vec4 cv = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (4 * j + l < OUT_COLS) cv[l] = C_at(r, 4 * j + l);
    }
    v += beta * cv;
#endif
#endif
    bvec4 live = lessThan(ivec4(4 * j) + ivec4(0, 1, 2, 3), ivec4(OUT_COLS));
    return mix(vec4(0.0), v, live);
}
