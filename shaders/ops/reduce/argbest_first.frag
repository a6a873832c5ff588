// First arg-min / arg-max level over the logical elements of V (any order, wrapped or not; the
// kernel is declared once per packing): the candidates of source texel t are its lanes, with
// their row-major flat indices; padding lanes never win. MASKED: only elements where the mask
// M (same shape, read by element) is nonzero are eligible.
#include "argbest_defs.glsl"

void candidates(int t, out vec4 v, out vec4 idx) {
    ivec2 q = V_grid_of(t);
    ivec4 fl = V_flat(q.x, q.y);
    bvec4 ok = greaterThanEqual(fl, ivec4(0));
#if MASKED
    ivec4 g = max(fl, ivec4(0));
    vec4 m = vec4(M_get(g.x), M_get(g.y), M_get(g.z), M_get(g.w));
    ok = bvec4(vec4(ok) * vec4(notEqual(m, vec4(0.0))));
#endif
    v = mix(vec4(worst_value()), V_texel(q.x, q.y), ok);
    idx = mix(vec4(NO_INDEX), vec4(fl), ok);
}

#include "argbest_core.glsl"
