// Shared constants of the arg-min / arg-max reductions.
// Indices travel as floats (exact up to 2^24); NO_INDEX marks "no candidate".
// MODE_MAX (0 or 1) picks arg-max; WORST is the value every candidate beats.
#define ARGBEST_DEFS 1
const float NO_INDEX = 16777216.0;
#if MODE_MAX
const uint WORST_BITS = 0xFF800000u;  // -inf
#else
const uint WORST_BITS = 0x7F800000u;  // +inf
#endif
float worst_value() { return uintBitsToFloat(WORST_BITS); }

// Ranking keys: candidates are compared by the bits of their values, never by float
// comparisons (GPUs and llvmpipe flush subnormals to zero in those, so 1e-45 == 0.0 == -1e-45
// there). A float's bits (sign, magnitude m) map to the int m for a non-negative value and -m
// for a negative one: signed order = numeric order, and -0.0 and +0.0 both map to 0 (numpy:
// -0.0 == 0.0). For arg-min the key is negated, so a larger key is always better; every NaN
// (any sign, any payload) gets the largest key, 0x7FFFFFFF, so the first NaN wins, as in
// numpy.argmin / argmax. The worst value (-inf for arg-max, +inf for arg-min) has key
// -0x7F800000, the smallest a candidate can have (equal keys are settled by the index, so a
// real index beats NO_INDEX).
ivec4 arg_keys(vec4 v) {
    ivec4 s = floatBitsToInt(v);
    ivec4 m = s & ivec4(0x7FFFFFFF);
#if MODE_MAX
    ivec4 t = s >> 31;                     // 0 (sign clear) or -1 (sign set)
#else
    ivec4 t = ~(s >> 31);
#endif
    ivec4 key = (m ^ t) - t;               // m or -m
    // NaN: max(key, 0x7FFFFFFF); otherwise max(key, INT_MIN) = key
    return max(key, (-ivec4(greaterThan(m, ivec4(0x7F800000)))) ^ ivec4(-0x7FFFFFFF - 1));
}

// a where t is false, b where it is true (bit-exact: integer blends, no float arithmetic)
uvec4 sel_bits(uvec4 a, uvec4 b, bvec4 t) {
    return a ^ ((a ^ b) & (uvec4(0u) - uvec4(t)));
}
ivec4 sel_bits(ivec4 a, ivec4 b, bvec4 t) {
    return a ^ ((a ^ b) & -ivec4(t));
}
