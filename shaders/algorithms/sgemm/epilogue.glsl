// Shared tail of the SGEMM kernels that write C: alpha * product + beta * C, with exact zeros
// in the lanes that hold no element of C (the padding of a packed row stays clean).
// The including kernel defines HAS_P (a product term; uniform alpha) and HAS_C (input C and
// uniform beta); add_c selects the fragments that add beta * C (the first K slice only).
vec4 sgemm_epilogue(vec4 p, bool add_c) {
    vec4 v = vec4(0.0);
#if HAS_P
    v = alpha * p;
#endif
#if HAS_C
    if (add_c) {
        vec4 c = vec4(0.0);
        for (int l = 0; l < 4; ++l) {
            if (OUT_live(l)) {
                ivec2 e = OUT_pos(l);
                c[l] = C_at(e.x, e.y);
            }
        }
        v += beta * c;
    }
#endif
    return mix(vec4(0.0), v, OUT_lanes());
}
