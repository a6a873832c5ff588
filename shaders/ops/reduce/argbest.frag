// Arg-min / arg-max level after the first: V and I (DUAL: and V2, I2) are the values and
// indices left by the previous level (packed row vectors of one layout). See argbest_core.glsl.
#include "argbest_defs.glsl"
#define SRC_TEX_W V_TEX_W

void candidates(int t, ivec2 p, out vec4 v, out vec4 idx) {
    v = texelFetch(sg_V, p, 0);
    idx = texelFetch(sg_I, p, 0);
}
#if DUAL
void candidates2(int t, ivec2 p, out vec4 v, out vec4 idx) {
    v = texelFetch(sg_V2, p, 0);
    idx = texelFetch(sg_I2, p, 0);
}
#endif

#include "argbest_core.glsl"
