// Row sums of the source distances over the blocks blk0 + [blk_begin, blk_end) of the j sweep
// (several passes add by blending): r_i = sum_j dn_ij, for mu (eq. 4) when the distances are
// not cached. OUT is an N x 1 vector laid out like the positions, r_i in .x.
#include "source_dist.glsl"

void main() {
    if (!OUT_live(0)) { OUT = vec4(0.0); return; }
    int i = OUT_pos(0).x;
    float r = 0.0;
    for (int b = blk0 + blk_begin; b < blk0 + blk_end; b += SRC_STEP) {
        ivec4 j;
        vec4 d = src_block(i, b, j);
        r += dot(mix(vec4(0.0), d, greaterThanEqual(j, ivec4(0))), vec4(1.0));
    }
    OUT = vec4(r, 0.0, 0.0, 0.0);
}
