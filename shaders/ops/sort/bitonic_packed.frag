// One bitonic stage texel by texel, for packed row-order (value, index) arrays V, I of OUT's
// layout (see bitonic.frag for the order and the padding). The partner of column c is
// c ^ stride: for stride >= 4 the same lanes of grid texel gj ^ tstride (tstride = stride in
// texels), for stride 2 or 1 another lane of the same texel (a swizzle). The four lanes are
// compared at once (0/1 masks in uvec4, selections with the boolean mix).

// Sortable keys of four values: unsigned order = numeric order, -0.0 as +0.0, NaN and padding
// (index >= n_real) largest.
uvec4 sg_keys(vec4 v, vec4 idx) {
    uvec4 b = floatBitsToUint(v);
    b &= uvec4(0u) - uvec4(notEqual(b, uvec4(0x80000000u)));            // -0.0 -> +0.0
    uvec4 key = b ^ ((uvec4(0u) - (b >> 31u)) | uvec4(0x80000000u));    // flip sign / all
    uvec4 top = uvec4(greaterThan(b & uvec4(0x7FFFFFFFu), uvec4(0x7F800000u))) |
                uvec4(greaterThanEqual(idx, vec4(float(n_real))));
    return key | (uvec4(0u) - top);
}

void main() {
    ivec2 g = OUT0_grid();
    vec4 va = V_texel(g.x, g.y), ia = I_texel(g.x, g.y), vb, ib;
    if (stride == 1) {
        vb = va.yxwz;
        ib = ia.yxwz;
    } else if (stride == 2) {
        vb = va.zwxy;
        ib = ia.zwxy;
    } else {
        vb = V_texel(g.x, g.y ^ tstride);
        ib = I_texel(g.x, g.y ^ tstride);
    }
    uvec4 ka = sg_keys(va, ia), kb = sg_keys(vb, ib);
    uvec4 a_less = uvec4(lessThan(ka, kb)) | (uvec4(equal(ka, kb)) & uvec4(lessThan(ia, ib)));
    ivec4 c = ivec4(OUT0_pos(0).y, OUT0_pos(1).y, OUT0_pos(2).y, OUT0_pos(3).y);
    uvec4 up = uvec4(equal(c & ivec4(block), ivec4(0)));
    uvec4 lower = uvec4(equal(c & ivec4(stride), ivec4(0)));
    // the lower column of a pair keeps the smaller (ascending block) or the larger element:
    // keep a  <=>  lower == (up == a_less)  <=>  lower ^ up ^ a_less (as 0/1 bits)
    bvec4 keep = equal(lower ^ up ^ a_less, uvec4(1u));
    bvec4 live = OUT0_lanes();
    OUT0 = mix(vec4(0.0), mix(vb, va, keep), live);
    OUT1 = mix(vec4(0.0), mix(ib, ia, keep), live);
}
