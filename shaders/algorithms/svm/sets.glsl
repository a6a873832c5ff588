// SMO's index sets for the four points of a texel: labels y in {+1, -1} (0 = padding point,
// in neither set), alphas a, box bound C.
//   I_up  = {y = +1, a < C} U {y = -1, a > 0}
//   I_low = {y = +1, a > 0} U {y = -1, a < C}
bvec4 in_up(vec4 y, vec4 a, float C) {
    return bvec4(vec4(greaterThan(y, vec4(0.0))) * vec4(lessThan(a, vec4(C))) +
                 vec4(lessThan(y, vec4(0.0))) * vec4(greaterThan(a, vec4(0.0))));
}
bvec4 in_low(vec4 y, vec4 a, float C) {
    return bvec4(vec4(greaterThan(y, vec4(0.0))) * vec4(greaterThan(a, vec4(0.0))) +
                 vec4(lessThan(y, vec4(0.0))) * vec4(lessThan(a, vec4(C))));
}
#ifdef ARGBEST_DEFS
// Selection candidates of texel t at texture coordinate p (first level of an arg-max reduction
// over G, A, Y of one layout; needs reduce/argbest_defs.glsl included first): the I_up values
// -y G and the I_low values y G, with worst_value() / NO_INDEX outside the set. Indices are
// texel numbers (TEXEL_INDEX), turned into flat indices by flat_of_texel at the end (DIRECT:
// as grid texel (0, t) of the 1-D vector, without G_grid_of's division; see step.glsl).
#define SRC_TEX_W G_TEX_W
#define TEXEL_INDEX 1
ivec4 flat_of_texel(int t) {
#if DIRECT
    return G_flat(0, t);          // G is a 1-D vector: texel t is grid texel (0, t)
#else
    ivec2 q = G_grid_of(t);
    return G_flat(q.x, q.y);
#endif
}
void up_candidates(int t, ivec2 p, out vec4 v, out vec4 idx) {
    vec4 y = texelFetch(sg_Y, p, 0);
    bvec4 ok = in_up(y, texelFetch(sg_A, p, 0), C);
    v = mix(vec4(worst_value()), -y * texelFetch(sg_G, p, 0), ok);
    idx = mix(vec4(NO_INDEX), vec4(float(t)), ok);
}
void low_candidates(int t, ivec2 p, out vec4 v, out vec4 idx) {
    vec4 y = texelFetch(sg_Y, p, 0);
    bvec4 ok = in_low(y, texelFetch(sg_A, p, 0), C);
    v = mix(vec4(worst_value()), y * texelFetch(sg_G, p, 0), ok);
    idx = mix(vec4(NO_INDEX), vec4(float(t)), ok);
}
#endif
