// One Hillis-Steele step of a prefix sum along AXIS (1: along each row, 0: down each column).
//   OUT[k] = E(k) + (k >= offset ? E(k - offset) : 0)
// where E(k) is element k - shift of the segment (0 before its start). The first pass reads the
// user's array with shift 1 for an exclusive scan; later passes read the previous pass (shift 0).
// FLAT = 1 (the first pass of a flattened scan of a 2-D array: OUT is 1 x n) reads the source by
// row-major flat index, X_get(k); otherwise element k of segment seg is X_at(seg, k).
float sg_elem(int seg, int k) {
    k -= shift;
    if (k < 0) return 0.0;
#if FLAT
    return X_get(k);
#elif AXIS == 1
    return X_at(seg, k);
#else
    return X_at(k, seg);
#endif
}

void main() {
    vec4 s = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        ivec2 p = OUT_pos(l);
#if AXIS == 1
        int seg = p.x, k = p.y;
#else
        int seg = p.y, k = p.x;
#endif
        float v = sg_elem(seg, k);
        if (k >= offset) v += sg_elem(seg, k - offset);
        s[l] = v;
    }
    OUT = s;
}
