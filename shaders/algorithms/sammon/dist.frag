// The cached source distances: OUT (N x N, packed row-major) lane (i, j) = dn(i, j); padding
// lanes are written as 0.
//
// SHARED (0 or 1; row-major X only): 0 computes each lane on its own (src_dist1), 1 the four
// lanes together (src_block over the texel's four points: point i's texel fetched once per
// coordinate texel for the four pairs; the same sums, in the same order, so the same bits).
// The sammon geometry chooses 1 on every device (geometry.CPU_VARIANTS).
#include "source_dist.glsl"

void main() {
#if SOURCE == SRC_COLS
    // OUT's packed column b holds the same four points as X's: one fetch per coordinate.
    ivec2 q = OUT_grid();
    ivec4 j;
    vec4 d = src_block(q.x, q.y, j);
    OUT = mix(vec4(0.0), d, OUT_lanes());
#elif SHARED
    // OUT's packed column b holds the points 4b .. 4b+3, a block of four rows of X
    ivec2 q = OUT_grid();
    ivec4 j;
    vec4 d = src_block(q.x, 4 * q.y, j);
    OUT = mix(vec4(0.0), d, OUT_lanes());
#else
    vec4 d = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT_live(l)) continue;
        ivec2 p = OUT_pos(l);
        d[l] = src_dist1(p.x, p.y);
    }
    OUT = d;
#endif
}
