// First level of the second-order partner selection with the gain computed on the fly (no
// objective pass of its own): for the four points of source texel t, with i and Gmax read on
// the device from SEL texel 0 (the I_up arg-max: the
// selection results, read here and written by the chain's final level, so this level is never
// the final one),
//   b_t = Gmax + y_t G_t,  a_t = 2 - 2 K(x_i, x_t)  (RBF),
//   value = -b_t^2 / max(a_t, TAU) for t in I_low with b_t > 0 (else not a candidate),
// and the level keeps the arg-min. Same values as objective.frag followed by a plain arg-min
// level; the kernel row itself is not kept (the device step walks x_i, x_j for K_ij).
#include "../../ops/reduce/argbest_defs.glsl"
#include "../../ops/rbf/rbf_pair.glsl"
#include "sets.glsl"
const float TAU = 1e-12;
void candidates(int t, ivec2 p, out vec4 v, out vec4 idx) {
    vec4 r = SEL_texel(0, 0);
    int i = int(min(r.y, float(XC_ROWS - 1)));
    vec4 k = rbf_one(t, i, gamma);
    vec4 y = texelFetch(sg_Y, p, 0);
    vec4 b = r.x + y * texelFetch(sg_G, p, 0);
    vec4 quad = max(2.0 - 2.0 * k, vec4(TAU));
    bvec4 ok = bvec4(vec4(in_low(y, texelFetch(sg_A, p, 0), C)) *
                     vec4(greaterThan(b, vec4(0.0))));
    v = mix(vec4(worst_value()), -(b * b) / quad, ok);
    idx = mix(vec4(NO_INDEX), vec4(float(t)), ok);
}
#include "../../ops/reduce/argbest_core.glsl"
