// OUT0 = K(x_t, x_h), OUT1 = K(x_t, x_l) for every point t (packed vectors), one pass.
#include "rbf_pair.glsl"
void main() {
    vec4 kh, kl;
    rbf_pair(OUT0_grid().y, h, l, gamma, kh, kl);
    OUT0 = kh;
    OUT1 = kl;
}
