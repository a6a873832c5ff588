// One Sammon iteration over the blocks blk0 + [blk_begin, blk_end) of the j sweep (the whole
// sweep, or one part of it when it is cut over several passes summed by additive blending).
//
// Fragment i owns point i (a gather: it reads every other point and writes only its own
// texels; no scatter, no atomics). With Y = prev positions (N x m, one texel per point):
//   g_i  = sum_{j != i, dn > 0} (dn_ij - dm_ij) / (dn_ij * max(dm_ij, dm_floor)) * (y_i - y_j)
//   s_i  = sum_{j != i, dn > 0} (dn_ij - dm_ij)^2 / dn_ij          (row of the stress, eq. 1)
//   OUT0 = keep * y_i + mu * g_i                                     (eq. 3)
//   OUT1 = g_i (the direction, kept for the step control), OUT2 = (s_i, 0, 0, 0).
// keep is keep_prev (1 in the first chunk of the sweep) in the first pass of a chunk and 0 in
// the passes the engine adds when it cuts the chunk, so y_i is added exactly once.
// Pairs with dn == 0 (duplicate source points) are skipped in both sums; dm is clamped from
// below by dm_floor in the update only, so y_i == y_j gives a zero term instead of 0 * inf.
#include "source_dist.glsl"

void main() {
    if (!OUT0_live(0)) {
        OUT0 = vec4(0.0); OUT1 = vec4(0.0); OUT2 = vec4(0.0);
        return;
    }
    int i = OUT0_pos(0).x;
    vec4 yi = Y_texel(i, 0);
    vec4 g = vec4(0.0);
    float s = 0.0;
    for (int b = blk0 + blk_begin; b < blk0 + blk_end; b += SRC_STEP) {
        ivec4 j4;
        vec4 dn4 = src_block(i, b, j4);
        for (int k = 0; k < 4; ++k) {
            int j = j4[k];
            float dn = dn4[k];
            if (j < 0 || j == i || !(dn > 0.0)) continue;
            vec4 dy = yi - Y_texel(j, 0);
            float dm = sqrt(dot(dy, dy));
            float e = dn - dm;
            s += e * e / dn;
            g += (e / (dn * max(dm, dm_floor))) * dy;
        }
    }
    float keep = blk_begin == 0 ? keep_prev : 0.0;
    OUT0 = keep * yi + mu * g;
    OUT1 = g;
    OUT2 = vec4(s, 0.0, 0.0, 0.0);
}
