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
