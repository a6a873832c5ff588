// Final layout of the "hv" schedule: the vertical apply pass left row 8r+j of texel column x
// in plane j at (r, line), lines in plane-major order (line = (x mod 8) * WP + x / 8, since the
// horizontal apply pass had put texel column x in plane x mod 8 at column x / 8).
#include "planes.glsl"

void main() {
    ivec2 g = OUT_grid();
    int y = g.x;
    int x = g.y;
    int line = (x - 8 * (x / 8)) * WP + x / 8;
    OUT = plane_texel(y - 8 * (y / 8), y / 8, line);
}
