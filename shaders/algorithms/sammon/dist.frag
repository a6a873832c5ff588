// The cached source distances: OUT (N x N, packed row-major) lane (i, j) = dn(i, j); padding
// lanes are written as 0.
#include "source_dist.glsl"

void main() {
#if SOURCE == SRC_COLS
    // OUT's packed column b holds the same four points as X's: one fetch per coordinate.
    ivec2 q = OUT_grid();
    ivec4 j;
    vec4 d = src_block(q.x, q.y, j);
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
