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
// Selection candidates of texel t (first level of an arg-max reduction over G, A, Y; needs
// reduce/argbest_defs.glsl included first): the I_up values -y G and the I_low values y G,
// with worst_value() / NO_INDEX outside the set.
void up_candidates(int t, out vec4 v, out vec4 idx) {
    ivec2 q = G_grid_of(t);
    vec4 y = Y_texel(q.x, q.y);
    bvec4 ok = in_up(y, A_texel(q.x, q.y), C);
    v = mix(vec4(worst_value()), -y * G_texel(q.x, q.y), ok);
    idx = mix(vec4(NO_INDEX), vec4(G_flat(q.x, q.y)), ok);
}
void low_candidates(int t, out vec4 v, out vec4 idx) {
    ivec2 q = G_grid_of(t);
    vec4 y = Y_texel(q.x, q.y);
    bvec4 ok = in_low(y, A_texel(q.x, q.y), C);
    v = mix(vec4(worst_value()), y * G_texel(q.x, q.y), ok);
    idx = mix(vec4(NO_INDEX), vec4(G_flat(q.x, q.y)), ok);
}
#endif
