// One SMO step on the device: kernel rows of the working pair (h, l) for every point t, fused
// in one walk over the data, and the gradient update
//     G_t += y_t (ch K(x_t, x_h) + cl K(x_t, x_l)),   ch = y_h dalpha_h, cl = y_l dalpha_l;
// the alphas of h and l become a_h, a_l. OUT0 = new G, OUT1 = new alpha (packed vectors).
// FROM_D2: the squared distances come from DH, DL (ops/rbf/pair_d2.frag, the split path past
// the loop cap) instead of the fused walk.
// FROM_STEP: h, l, ch, cl, a_h, a_l are not uniforms set by the host: every fragment solves
// the two-variable step itself from the selection results (step.glsl), and the fragment of
// the state texel writes the solver state there.
// DIRECT (0 or 1): 1 fetches this fragment's texels of G, A, Y (laid out like OUT0) at its
// own pixel instead of through the grid-to-texture accessors (the same texels), and the
// step indexes the 1-D vectors directly (step.glsl); chosen on a CPU renderer (svm.smo).
#if !FROM_D2
#include "../../ops/rbf/rbf_pair.glsl"
#endif
#if FROM_STEP
#include "step.glsl"
#endif
void main() {
    ivec2 g = OUT0_grid();
#if FROM_STEP
    int h, l;
    float ch, cl, a_h, a_l;
    vec4 state;
    smo_step(h, l, ch, cl, a_h, a_l, state);
#endif
    vec4 kh, kl;
#if FROM_D2
    kh = exp(-gamma * DH_texel(g.x, g.y));
    kl = exp(-gamma * DL_texel(g.x, g.y));
#else
    rbf_pair(g.y, h, l, gamma, kh, kl);
#endif
#if DIRECT
    ivec2 p = ivec2(gl_FragCoord.xy);
    vec4 y = texelFetch(sg_Y, p, 0);
    OUT0 = texelFetch(sg_G, p, 0) + y * (ch * kh + cl * kl);
    ivec4 t = Y_flat(g.x, g.y);
    vec4 a = texelFetch(sg_A, p, 0);
#else
    vec4 y = Y_texel(g.x, g.y);
    OUT0 = G_texel(g.x, g.y) + y * (ch * kh + cl * kl);
    ivec4 t = Y_flat(g.x, g.y);
    vec4 a = A_texel(g.x, g.y);
#endif
    a = mix(a, vec4(a_h), equal(t, ivec4(h)));
    OUT1 = mix(a, vec4(a_l), equal(t, ivec4(l)));
#if FROM_STEP && DIRECT
    if (g == ivec2(0, state_texel)) {
        OUT1 = state;
    }
#elif FROM_STEP
    if (g == A_grid_of(state_texel)) {
        OUT1 = state;
    }
#endif
}
