// Row sums of the source distances over the chunk j0 <= j < j1 (chunks are added by blending):
// r_i = sum_j dn_ij, for mu (eq. 4) when the distances are not cached. OUT is an N x 1 vector
// laid out like the positions, r_i in .x.
#include "source_dist.glsl"

uniform int j0;   // multiple of 4
uniform int j1;

void main() {
    ivec2 q = OUT_grid();
    int i = q.x;
    if (!OUT_inside() || i >= OUT_ROWS) { OUT = vec4(0.0); return; }
    float r = 0.0;
    for (int jb = j0; jb < j1; jb += 4) {
        vec4 d = src_dist4(i, jb);
        bvec4 ok = lessThan(ivec4(jb) + ivec4(0, 1, 2, 3), ivec4(j1));
        r += dot(mix(vec4(0.0), d, ok), vec4(1.0));
    }
    OUT = vec4(r, 0.0, 0.0, 0.0);
}
