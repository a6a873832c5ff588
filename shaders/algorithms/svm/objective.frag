// Second-order working-set selection (Fan, Chen and Lin 2005), per point t:
//   b_t = Gmax + y_t G_t,  a_t = K_ii + K_tt - 2 K_it = 2 - 2 K(x_i, x_t)  (RBF),
//   OUT = -b_t^2 / max(a_t, TAU) for t in I_low with b_t > 0, +inf otherwise.
// i and Gmax are read on the device from RES texel 0 (the I_up arg-max), no readback.
// FROM_D2: the squared distances ||x_t - x_i||^2 come from D (objective_d2.frag, the split
// path past the loop cap) instead of one fused walk over the features; otherwise the kernel
// row K(x_t, x_i) is written to KI as well (the device step reads K_ij from it).
// DIRECT (0 or 1): 1 fetches this fragment's texels of Y, G, A (laid out like OUT) at its own
// pixel instead of through the grid-to-texture accessors (the same texels; chosen on a CPU
// renderer, which runs their integer division lane by lane: see svm.smo).
#if !FROM_D2
#include "../../ops/rbf/rbf_pair.glsl"
#endif
#include "sets.glsl"
const float TAU = 1e-12;
void main() {
    ivec2 g = OUT_grid();
    vec4 r = RES_texel(0, 0);
    float gmax = r.x;
#if FROM_D2
    vec4 k = exp(-gamma * D_texel(g.x, g.y));
#else
    int i = int(min(r.y, float(XC_ROWS - 1)));
    vec4 k = rbf_one(g.y, i, gamma);
#endif
#if DIRECT
    ivec2 p = ivec2(gl_FragCoord.xy);
    vec4 y = texelFetch(sg_Y, p, 0);
    vec4 b = gmax + y * texelFetch(sg_G, p, 0);
    vec4 quad = max(2.0 - 2.0 * k, vec4(TAU));
    bvec4 ok = bvec4(vec4(in_low(y, texelFetch(sg_A, p, 0), C)) *
                     vec4(greaterThan(b, vec4(0.0))));
#else
    vec4 y = Y_texel(g.x, g.y);
    vec4 b = gmax + y * G_texel(g.x, g.y);
    vec4 quad = max(2.0 - 2.0 * k, vec4(TAU));
    bvec4 ok = bvec4(vec4(in_low(y, A_texel(g.x, g.y), C)) * vec4(greaterThan(b, vec4(0.0))));
#endif
    OUT = mix(vec4(uintBitsToFloat(0x7F800000u)), -(b * b) / quad, ok);
#if !FROM_D2
    KI = k;
#endif
}
