// Final layout of the "hv" schedule: the vertical apply pass left row NPL r + j of texel
// column x in plane j at (r, line), lines in plane-major order (line = (x mod NPL) * WP +
// x / NPL, since the horizontal apply pass had put texel column x in plane x mod NPL at column
// x / NPL). WP (uniform) is the width of those planes in texels; NPL is 8 or 4. Padding lanes
// of the output are written as zero.
#include "planes.glsl"

void main() {
    ivec2 g = OUT_grid();
    int line = PLANE_OF(g.y) * WP + PLANE_POS(g.y);
    OUT = mix(vec4(0.0), plane_texel(PLANE_OF(g.x), PLANE_POS(g.x), line), OUT_lanes());
}
