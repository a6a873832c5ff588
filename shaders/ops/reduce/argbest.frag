// Arg-min / arg-max level after the first: V and I (DUAL: and V2, I2) are the values and
// indices left by the previous level (packed row vectors). See argbest_core.glsl.
#include "argbest_defs.glsl"

void candidates(int t, out vec4 v, out vec4 idx) {
    ivec2 q = V_grid_of(t);
    v = V_texel(q.x, q.y);
    idx = I_texel(q.x, q.y);
}
#if DUAL
void candidates2(int t, out vec4 v, out vec4 idx) {
    ivec2 q = V2_grid_of(t);
    v = V2_texel(q.x, q.y);
    idx = I2_texel(q.x, q.y);
}
#endif

#include "argbest_core.glsl"
