// One SMO step on the device: kernel rows of the working pair (h, l) for every point t, fused
// in one walk over the data, and the gradient update
//     G_t += y_t (ch K(x_t, x_h) + cl K(x_t, x_l)),   ch = y_h dalpha_h, cl = y_l dalpha_l;
// the alphas of h and l become a_h, a_l. OUT0 = new G, OUT1 = new alpha (packed vectors).
#include "../rbf/rbf_pair.glsl"
uniform int h;
uniform int l;
uniform float gamma;
uniform float ch;
uniform float cl;
uniform float a_h;
uniform float a_l;
void main() {
    int gj = OUT0_grid().y;
    vec4 kh, kl;
    rbf_pair(gj, h, l, gamma, kh, kl);
    vec4 y = Y_texel(0, gj);
    OUT0 = G_texel(0, gj) + y * (ch * kh + cl * kl);
    ivec4 t = Y_flat(0, gj);
    vec4 a = A_texel(0, gj);
    a = mix(a, vec4(a_h), equal(t, ivec4(h)));
    OUT1 = mix(a, vec4(a_l), equal(t, ivec4(l)));
}
