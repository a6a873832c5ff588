// Partial squared distances over the feature texels [d4_begin, d4_end) (a split range: the
// engine cuts it across passes that add by blending when the device's loop cap requires):
// OUT0 = ||x_t - x_h||^2, OUT1 = ||x_t - x_l||^2 for every point t (packed vectors).
#include "rbf_pair.glsl"
void main() {
    vec4 sh, sl;
    rbf_d2_pair(OUT0_grid().y, h, l, d4_begin, d4_end, sh, sl);
    OUT0 = sh;
    OUT1 = sl;
}
