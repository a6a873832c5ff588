// One compare-exchange stage of a bitonic sorting network over (value, index) pairs.
// Each row of OUT0 (values) / OUT1 (indices) is one sequence; the network runs over n columns
// (a power of two >= the real length `n_real`). Columns >= n_real are padding: their key is the
// largest, and their index (>= n_real) is larger than every real index, so they end up last and
// never reach the output (the last stage writes only the first `n_real` columns).
// Order: the value's sortable bit pattern (-0.0 == +0.0, every NaN largest), then the index,
// so equal values keep their input order (a stable sort) and NaNs go last, as numpy does.
// INIT = 1: the first stage reads the user's array X (row `seg` of the segments, by flat index
// so a flattened sort reads a 2-D array row-major); INIT = 0 reads the previous stage (V, I).

uint sg_key(float v, int idx) {
    if (idx >= n_real) return 0xFFFFFFFFu;                       // padding
    uint b = floatBitsToUint(v);
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;  // NaN (any sign, any payload)
    if (b == 0x80000000u) b = 0u;                             // -0.0 sorts as +0.0
    return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

void sg_read(int seg, int c, out float v, out int idx) {
#if INIT
    idx = c;
    v = c < n_real ? X_get(seg * n_real + c) : 0.0;
#else
    v = V_at(seg, c);
    idx = int(I_at(seg, c));
#endif
}

void main() {
    vec4 vals = vec4(0.0), idxs = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT0_live(l)) continue;
        ivec2 p = OUT0_pos(l);
        int c = p.y, q = p.y ^ stride;
        float va, vb;
        int ia, ib;
        sg_read(p.x, c, va, ia);
        sg_read(p.x, q, vb, ib);
        uint ka = sg_key(va, ia), kb = sg_key(vb, ib);
        bool a_less = ka < kb || (ka == kb && ia < ib);
        bool up = (c & block) == 0;
        // the lower column of the pair keeps the smaller (ascending block) or larger one
        bool keep_a = (c < q) == (up == a_less);
        vals[l] = keep_a ? va : vb;
        idxs[l] = float(keep_a ? ia : ib);
    }
    OUT0 = vals;
    OUT1 = idxs;
}
