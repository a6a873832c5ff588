// First arg-min / arg-max level over the logical elements of V (any order, wrapped or not; the
// kernel is declared once per packing): the candidates of source texel t are its lanes, with
// their row-major flat indices; padding lanes never win. MASKED: only elements where the mask
// M (same shape, read by element) is nonzero are eligible. Values pass as their bits (integer
// blends): a subnormal reaches the comparison (arg_keys) unflushed.
// FAST (packed, row order, no padding lanes before the last texel, no mask; set by the host):
// the lanes carry texel numbers, turned into flat indices once at the end, and only the last
// texel is checked for padding lanes.
#include "argbest_defs.glsl"
#define SRC_TEX_W V_TEX_W

#if FAST && !MASKED
#define TEXEL_INDEX 1
ivec4 flat_of_texel(int t) {
    ivec2 q = V_grid_of(t);
    return V_flat(q.x, q.y);
}

void candidates(int t, ivec2 p, out vec4 v, out vec4 idx) {
    v = texelFetch(sg_V, p, 0);
    idx = vec4(float(t));
    if (t == n_src - 1) {
        bvec4 ok = greaterThanEqual(flat_of_texel(t), ivec4(0));
        v = uintBitsToFloat(sel_bits(uvec4(WORST_BITS), floatBitsToUint(v), ok));
        idx = mix(vec4(NO_INDEX), idx, ok);
    }
}
#else
void candidates(int t, ivec2 p, out vec4 v, out vec4 idx) {
    ivec2 q = V_grid_of(t);
    ivec4 fl = V_flat(q.x, q.y);
    bvec4 ok = greaterThanEqual(fl, ivec4(0));
#if MASKED
    ivec4 g = max(fl, ivec4(0));
    vec4 m = vec4(M_get(g.x), M_get(g.y), M_get(g.z), M_get(g.w));
    ok = bvec4(vec4(ok) * vec4(notEqual(m, vec4(0.0))));
#endif
    v = uintBitsToFloat(sel_bits(uvec4(WORST_BITS), floatBitsToUint(texelFetch(sg_V, p, 0)), ok));
    idx = mix(vec4(NO_INDEX), vec4(fl), ok);
}
#endif

#include "argbest_core.glsl"
