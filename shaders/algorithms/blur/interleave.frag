// Final layout of the "hv" schedule: the vertical apply pass left row 8r+j of texel column x
// in plane j at (r, line), lines in plane-major order (line = (x mod 8) * WP + x / 8, since the
// horizontal apply pass had put texel column x in plane x mod 8 at column x / 8). WP (uniform)
// is the width of those planes in texels. Padding lanes of the output are written as zero.
#include "planes.glsl"

void main() {
    ivec2 g = OUT_grid();
    int line = (g.y & 7) * WP + (g.y >> 3);
    OUT = mix(vec4(0.0), plane_texel(g.x & 7, g.x >> 3, line), OUT_lanes());
}
