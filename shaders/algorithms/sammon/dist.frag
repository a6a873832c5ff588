// The cached source distances: OUT (N x N, packed row-major) texel (i, jg) holds
// dn(i, 4jg .. 4jg+3). Lanes past the last point are written as 0 (padding).
#include "source_dist.glsl"

void main() {
    ivec2 q = OUT_grid();
    int jb = q.y * 4;
    vec4 d = src_dist4(q.x, jb);
    bvec4 ok = lessThan(ivec4(jb) + ivec4(0, 1, 2, 3), ivec4(OUT_ROWS));
    OUT = OUT_inside() ? mix(vec4(0.0), d, ok) : vec4(0.0);
}
