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
//
// Y_STEP (0 or 1): how y_j is fetched. 0: Y_texel(j, 0) per pair. 1: the texture coordinate
// of the range's first point once (Y_coord), then one texel on per point of the sweep (the
// points j of the blocks are consecutive, and the positions hold one texel per point
// (Y_GRID_W == 1), texel t at (t % Y_TEX_W, t / Y_TEX_W), wrapped or not): no integer
// division by the shape uniform per pair, which a CPU renderer runs lane by lane; the pair
// terms in Y_DIMS (1 .. 4, the positions' m) components instead of all four (the others are
// 0 and add nothing); two blocks a loop step. The sammon geometry chooses it on every device
// (geometry.CPU_VARIANTS). The same texels and sums, so the same bits (but for the sign of a
// zero in G's padding lanes).
#include "source_dist.glsl"

#if Y_STEP
// The texture coordinate of the point after the one at c (one texel per point).
ivec2 y_next(ivec2 c) {
    return c.x + 1 < Y_TEX_W ? ivec2(c.x + 1, c.y) : ivec2(0, c.y + 1);
}
// YV: the positions' Y_DIMS coordinates; Y_OF(v) takes them from a texel, Y_VEC4 puts them back
#if Y_DIMS == 1
#define YV float
#define Y_OF(v) (v).x
#define Y_VEC4(v) vec4(v, 0.0, 0.0, 0.0)
#elif Y_DIMS == 2
#define YV vec2
#define Y_OF(v) (v).xy
#define Y_VEC4(v) vec4(v, 0.0, 0.0)
#elif Y_DIMS == 3
#define YV vec3
#define Y_OF(v) (v).xyz
#define Y_VEC4(v) vec4(v, 0.0)
#else
#define YV vec4
#define Y_OF(v) (v)
#define Y_VEC4(v) (v)
#endif

// The terms of the four pairs (i, j) of block b added to s and gv (yc: the texel of the
// block's first point j; moved on past the block).
void block_terms(int i, int b, YV yv, inout ivec2 yc, inout float s, inout YV gv) {
    ivec4 j4;
    vec4 dn4 = src_block(i, b, j4);
    for (int k = 0; k < 4; ++k) {
        int j = j4[k];
        float dn = dn4[k];
        ivec2 cj = yc;
        yc = y_next(yc);
        if (j < 0 || j == i || !(dn > 0.0)) continue;
        YV dy = yv - Y_OF(texelFetch(sg_Y, cj, 0));
        float dm = sqrt(dot(dy, dy));
        float e = dn - dm;
        s += e * e / dn;
        gv += (e / (dn * max(dm, dm_floor))) * dy;
    }
}
#endif

void main() {
    if (!OUT0_live(0)) {
        OUT0 = vec4(0.0); OUT1 = vec4(0.0); OUT2 = vec4(0.0);
        return;
    }
    int i = OUT0_pos(0).x;
    vec4 yi = Y_texel(i, 0);
    float s = 0.0;
#if Y_STEP
    YV yv = Y_OF(yi);
    YV gv = YV(0.0);
    // the first point of block blk0 + blk_begin: 4 per packed column, 1 per row of X
    ivec2 yc = Y_coord((blk0 + blk_begin) * (4 / SRC_STEP), 0);
    // two blocks a loop step (half the loop's trips), then the odd last one
    int b = blk0 + blk_begin;
    for (; b + SRC_STEP < blk0 + blk_end; b += 2 * SRC_STEP) {
        block_terms(i, b, yv, yc, s, gv);
        block_terms(i, b + SRC_STEP, yv, yc, s, gv);
    }
    if (b < blk0 + blk_end) {
        block_terms(i, b, yv, yc, s, gv);
    }
    vec4 g = Y_VEC4(gv);
#else
    vec4 g = vec4(0.0);
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
#endif
    float keep = blk_begin == 0 ? keep_prev : 0.0;
    OUT0 = keep * yi + mu * g;
    OUT1 = g;
    OUT2 = vec4(s, 0.0, 0.0, 0.0);
}
