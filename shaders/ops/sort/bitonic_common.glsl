// Compare-exchange helpers of the bitonic sort, four (key, index) lanes a texel.
// The passes move sortable keys, not values: an element's key is an integer whose signed order
// is the order of the values (-0.0 == +0.0; every NaN, and every padding column, gets SG_TOP,
// above +inf), stored as the float with those bits; equal keys are ordered by index (a stable
// sort: NaNs after +inf in input order, padding, whose indices are >= n_real, after them).
// Keys are compared as integers and moved by selection only: no float comparison or
// arithmetic touches them (GPUs flush subnormals to zero in those). The last pass turns keys
// back into the input's stored bits (see sg_value). A key is never a NaN bit pattern (see
// sg_key); the keys of +-0.0 and of NaN and padding are the patterns of -inf (0xFF800000) and
// +inf (0x7F800000).

const int SG_TOP = 0x7F800000;

// Where the work arrays (packed, row order) hold texel t (columns 4t .. 4t+3) of sequence seq:
// each sequence fills 2**rsh grid rows of 2**tsh texels, in order.
ivec2 sg_cell(int seq, int t) {
    return ivec2((seq << rsh) + (t >> tsh), t & ((1 << tsh) - 1));
}

// The sequence and texel held by grid texel g of the work arrays.
void sg_place(ivec2 g, out int seq, out int t) {
    seq = g.x >> rsh;
    t = ((g.x & ((1 << rsh) - 1)) << tsh) | g.y;
}

// The key of one value: its sign-magnitude bits s as an integer (-0x7F800000 .. 0x7F800000,
// both zeros 0), moved monotonically onto the float patterns that are no NaN: s <= 0 to
// -2**31 .. -2**23 (the patterns of -0.0 .. -inf), s > 0 to 0 .. 0x7F7FFFFF; SG_TOP for a NaN.
int sg_key(float x) {
    int b = floatBitsToInt(x);
    int mag = b & 0x7FFFFFFF;
    if (mag > SG_TOP) return SG_TOP;
    int s = b < 0 ? -mag : mag;
    return s > 0 ? s - 1 : s - 0x800000;
}

// Lane by lane, (ka, ia) keeps the smaller (want_min) or the larger of itself and (kb, ib).
void sg_keep(inout vec4 ka, inout vec4 ia, vec4 kb, vec4 ib, bool want_min) {
    ivec4 a = floatBitsToInt(ka), b = floatBitsToInt(kb);
    bvec4 lt = bvec4(uvec4(lessThan(a, b)) | (uvec4(equal(a, b)) & uvec4(lessThan(ia, ib))));
    bvec4 keep = equal(lt, bvec4(want_min));
    ka = mix(kb, ka, keep);
    ia = mix(ib, ia, keep);
}

// Two compare-exchanges at once: pair p's smaller element goes to a (up[p]) or to b.
void sg_cx2(inout vec2 ka, inout vec2 ia, inout vec2 kb, inout vec2 ib, bvec2 up) {
    ivec2 a = floatBitsToInt(ka), b = floatBitsToInt(kb);
    bvec2 lt = bvec2(uvec2(lessThan(a, b)) | (uvec2(equal(a, b)) & uvec2(lessThan(ia, ib))));
    bvec2 keep = equal(lt, up);            // a stays where it is
    vec2 k0 = mix(kb, ka, keep), i0 = mix(ib, ia, keep);
    kb = mix(ka, kb, keep);
    ib = mix(ia, ib, keep);
    ka = k0;
    ia = i0;
}

// The stage of stride 2 inside a texel: pairs (x, z) and (y, w), up[p]: pair p ascending.
void sg_stride2(inout vec4 k, inout vec4 i, bvec2 up) {
    vec2 ka = k.xy, kb = k.zw, ia = i.xy, ib = i.zw;
    sg_cx2(ka, ia, kb, ib, up);
    k = vec4(ka, kb);
    i = vec4(ia, ib);
}

// The stage of stride 1 inside a texel: pairs (x, y) and (z, w), up[p]: pair p ascending.
void sg_stride1(inout vec4 k, inout vec4 i, bvec2 up) {
    vec2 ka = k.xz, kb = k.yw, ia = i.xz, ib = i.yw;
    sg_cx2(ka, ia, kb, ib, up);
    k = vec4(ka.x, kb.x, ka.y, kb.y);
    i = vec4(ia.x, ib.x, ia.y, ib.y);
}

#if FINAL
// The value of the element of sequence seq with key k and index idx: the input's stored bits.
// The key gives them back but for a zero (its sign) and a NaN (its payload): those are read
// from X, the array being sorted (flatten != 0: the sequence is X flattened row-major).
float sg_value(int seq, float k, float idx) {
    int p = floatBitsToInt(k);
    int s = p >= 0 ? p + 1 : p + 0x800000;                 // sg_key's s
    if (s == 0 || p == SG_TOP) {
        int c = int(idx);
        return flatten != 0 ? X_get(seq * n_real + c) : X_at(seq, c);
    }
    return intBitsToFloat(s > 0 ? s : (-s | int(0x80000000u)));
}
#endif
