// Included only where the pass binds the planes P0..P(NPL-1) (USE_PLANES 1).
#if USE_PLANES
// Texel t of a line lies in plane PLANE_OF(t) at position PLANE_POS(t) (NPL is 8 or 4).
#if NPL == 8
#define PLANE_POS(t) ((t) >> 3)
#else
#define PLANE_POS(t) ((t) >> 2)
#endif
#define PLANE_OF(t) ((t) & (NPL - 1))
// Texel (gi, gj) of plane k of a set P0..P(NPL-1) (the render targets of one apply pass).
vec4 plane_texel(int k, int gi, int gj) {
#if NPL == 8
    if (k >= 4) {
        if (k < 6) return k == 4 ? P4_texel(gi, gj) : P5_texel(gi, gj);
        return k == 6 ? P6_texel(gi, gj) : P7_texel(gi, gj);
    }
#endif
    if (k < 2) return k == 0 ? P0_texel(gi, gj) : P1_texel(gi, gj);
    return k == 2 ? P2_texel(gi, gj) : P3_texel(gi, gj);
}
float plane_at(int k, int r, int c) {
#if NPL == 8
    if (k >= 4) {
        if (k < 6) return k == 4 ? P4_at(r, c) : P5_at(r, c);
        return k == 6 ? P6_at(r, c) : P7_at(r, c);
    }
#endif
    if (k < 2) return k == 0 ? P0_at(r, c) : P1_at(r, c);
    return k == 2 ? P2_at(r, c) : P3_at(r, c);
}
#endif
