// Included only where the pass binds P0..P7 (USE_PLANES 1).
#if USE_PLANES
// Texel (gi, gj) of plane k of a set P0..P7 (the eight render targets of one apply pass).
vec4 plane_texel(int k, int gi, int gj) {
    if (k < 4) {
        if (k < 2) return k == 0 ? P0_texel(gi, gj) : P1_texel(gi, gj);
        return k == 2 ? P2_texel(gi, gj) : P3_texel(gi, gj);
    }
    if (k < 6) return k == 4 ? P4_texel(gi, gj) : P5_texel(gi, gj);
    return k == 6 ? P6_texel(gi, gj) : P7_texel(gi, gj);
}
float plane_at(int k, int r, int c) {
    if (k < 4) {
        if (k < 2) return k == 0 ? P0_at(r, c) : P1_at(r, c);
        return k == 2 ? P2_at(r, c) : P3_at(r, c);
    }
    if (k < 6) return k == 4 ? P4_at(r, c) : P5_at(r, c);
    return k == 6 ? P6_at(r, c) : P7_at(r, c);
}
#endif
