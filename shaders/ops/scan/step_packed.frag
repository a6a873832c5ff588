// One Hillis-Steele step along the rows of a packed row-order array, texel by texel:
//   OUT = S(t0, l0) + S(t1, l1)
// where S(t, l) is X shifted right by t texels and l lanes within the row, zeros shifted in
// (elements before the row's start are 0). The host splits each shift into (texels, lanes):
// a step of offset d reads S(shift) + S(shift + d), shift = 1 in an exclusive scan's first
// pass. Padding lanes sit at the end of a row, so a right shift never moves them into a live
// lane; the output's padding lanes are written as 0.
vec4 sg_tex(int gi, int gj) {
    return gj < 0 ? vec4(0.0) : X_texel(gi, gj);
}

vec4 sg_shift(ivec2 g, int t, int l) {
    vec4 a = sg_tex(g.x, g.y - t);
    if (l == 0) return a;
    vec4 b = sg_tex(g.x, g.y - t - 1);
    if (l == 1) return vec4(b.w, a.xyz);
    if (l == 2) return vec4(b.zw, a.xy);
    return vec4(b.yzw, a.x);
}

void main() {
    ivec2 g = OUT_grid();
    vec4 v = sg_shift(g, t0, l0) + sg_shift(g, t1, l1);
    bvec4 live = OUT_lanes();
    for (int l = 0; l < 4; ++l) {
        if (!live[l]) v[l] = 0.0;
    }
    OUT = v;
}
