// Transpose for the "vtvt" schedule, out of the NPL row planes of a vertical apply pass
// (row NPL r + j of the source lies in plane j at grid row r; NPL is 8 or 4).
//   GRAY 1: packed grayscale; element (i, j) of OUT is source pixel (j, i), which is element
//           (j / NPL, i) of plane j mod NPL.
//   GRAY 0: one pixel (its channels) per texel; OUT texel (i, j) = source texel (j, i).
#include "planes.glsl"

void main() {
#if GRAY
    vec4 o = vec4(0.0);
    for (int q = 0; q < 4; ++q) {
        if (!OUT_live(q)) continue;
        ivec2 p = OUT_pos(q);
        o[q] = plane_at(PLANE_OF(p.y), PLANE_POS(p.y), p.x);
    }
    OUT = o;
#else
    ivec2 g = OUT_grid();
    OUT = plane_texel(PLANE_OF(g.y), PLANE_POS(g.y), g.x);
#endif
}
