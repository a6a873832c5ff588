// Transpose for the "vtvt" schedule, out of the eight row planes of a vertical apply pass
// (row 8r+j of the source lies in plane j at grid row r).
//   GRAY 1: packed grayscale; element (i, j) of OUT is source pixel (j, i), which is element
//           (j / 8, i) of plane j mod 8.
//   GRAY 0: one pixel (its channels) per texel; OUT texel (i, j) = source texel (j, i).
#include "planes.glsl"

void main() {
#if GRAY
    vec4 o = vec4(0.0);
    for (int q = 0; q < 4; ++q) {
        if (!OUT_live(q)) continue;
        ivec2 p = OUT_pos(q);
        o[q] = plane_at(p.y & 7, p.y >> 3, p.x);
    }
    OUT = o;
#else
    ivec2 g = OUT_grid();
    OUT = plane_texel(g.y & 7, g.y >> 3, g.x);
#endif
}
