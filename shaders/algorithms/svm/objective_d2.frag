// Split path of objective.frag: partial ||x_t - x_i||^2 over the feature texels
// [d4_begin, d4_end) (passes add by blending), i read from RES texel 0 on the device.
#include "../../ops/rbf/rbf_pair.glsl"
void main() {
    int i = int(min(RES_texel(0, 0).y, float(XC_ROWS - 1)));
    OUT = rbf_d2_one(OUT_grid().y, i, d4_begin, d4_end);
}
