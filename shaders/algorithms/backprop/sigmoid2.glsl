// The logistic function of a base-2 argument: sigmoid2(s) = 1 / (1 + 2^s), i.e. f(z) for
// s = -z log2(e) (kernels fold -log2(e), NEG_LOG2E, into their weights: one multiply per
// weight, not one per activation). 2^s takes the special-function unit; the reciprocal does
// too, except in the first SIG_NEWTON lanes (0 .. 4), where Newton's iteration from a guess
// made of the float's bits takes it with multiply-adds: on a GPU whose special-function unit
// bounds a sigmoid-heavy pass, that moves work to the arithmetic units, which have room.
// Newton lanes cap 2^s at 2^100 (the guess must stay a normal number; 1 / (1 + 2^100) is
// below 1e-30); three steps take the guess's 12% error below float32's rounding.
const float NEG_LOG2E = -1.4426950408889634;

float sig2_newton(float s) {
    float x = 1.0 + exp2(min(s, 100.0));
    float r = intBitsToFloat(0x7EF311C3 - floatBitsToInt(x));
    r = r * (2.0 - x * r);
    r = r * (2.0 - x * r);
    r = r * (2.0 - x * r);
    return r;
}

vec4 sigmoid2(vec4 s) {
#if SIG_NEWTON >= 4
    return vec4(sig2_newton(s.x), sig2_newton(s.y), sig2_newton(s.z), sig2_newton(s.w));
#else
    vec4 y = 1.0 / (1.0 + exp2(s));
#if SIG_NEWTON >= 1
    y.x = sig2_newton(s.x);
#endif
#if SIG_NEWTON >= 2
    y.y = sig2_newton(s.y);
#endif
#if SIG_NEWTON >= 3
    y.z = sig2_newton(s.z);
#endif
    return y;
#endif
}
