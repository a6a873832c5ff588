// Transpose for the "vtvt" schedule, out of the eight row planes of a vertical apply pass
// (row 8r+j of the source lies in plane j at grid row r).
//   GRAY 1: packed grayscale, four pixels of a row per texel; OUT holds the transpose packed
//           the same way, so its texel (i, gj) = source pixels (4 gj + q, i), q = 0..3.
//   GRAY 0: one pixel (its channels) per texel; OUT texel (i, j) = source texel (j, i).
#include "planes.glsl"

void main() {
    ivec2 g = OUT_grid();
#if GRAY
    vec4 o;
    for (int q = 0; q < 4; ++q) {
        int r = 4 * g.y + q;
        o[q] = r < SRC_ROWS ? plane_at(r - 8 * (r / 8), r / 8, g.x) : 0.0;
    }
    OUT = o;
#else
    int r = g.y;
    OUT = plane_texel(r - 8 * (r / 8), r / 8, g.x);
#endif
}
