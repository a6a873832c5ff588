// Generic arg-min / arg-max level (see argbest_core.glsl).
// FIRST: candidates are the logical elements of V (any layout), eligible where the mask M
// (same shape; MASK_SAME: same layout too) is nonzero when MASKED is defined.
// Otherwise: V and I (DUAL: and V2, I2) are the values and indices left by the previous level.
#include "argbest_defs.glsl"

#ifdef FIRST
void candidates(int t, out vec4 v, out vec4 idx) {
    ivec2 q = V_grid_of(t);
    ivec4 fl = V_flat(q.x, q.y);
    bvec4 ok = greaterThanEqual(fl, ivec4(0));
#ifdef MASKED
#ifdef MASK_SAME
    vec4 m = M_texel(q.x, q.y);
#else
    ivec4 g = max(fl, ivec4(0));
    vec4 m = vec4(M_get(g.x), M_get(g.y), M_get(g.z), M_get(g.w));
#endif
    ok = bvec4(vec4(ok) * vec4(notEqual(m, vec4(0.0))));
#endif
    v = mix(vec4(worst_value()), V_texel(q.x, q.y), ok);
    idx = mix(vec4(NO_INDEX), vec4(fl), ok);
}
#else
void candidates(int t, out vec4 v, out vec4 idx) {
    ivec2 q = V_grid_of(t);
    v = V_texel(q.x, q.y);
    idx = I_texel(q.x, q.y);
}
#ifdef DUAL
void candidates2(int t, out vec4 v, out vec4 idx) {
    ivec2 q = V2_grid_of(t);
    v = V2_texel(q.x, q.y);
    idx = I2_texel(q.x, q.y);
}
#endif
#endif

#include "argbest_core.glsl"
