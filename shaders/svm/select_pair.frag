// First level of both selections in one pass (DUAL reduction): the I_up arg-max of -y G
// (candidates) and the I_low arg-max of y G (candidates2).
#include "../reduce/argbest_defs.glsl"
#include "sets.glsl"
uniform float C;
void candidates(int t, out vec4 v, out vec4 idx) {
    ivec2 q = G_grid_of(t);
    vec4 y = Y_texel(q.x, q.y);
    bvec4 ok = in_up(y, A_texel(q.x, q.y), C);
    v = mix(vec4(worst_value()), -y * G_texel(q.x, q.y), ok);
    idx = mix(vec4(NO_INDEX), vec4(G_flat(q.x, q.y)), ok);
}
void candidates2(int t, out vec4 v, out vec4 idx) {
    ivec2 q = G_grid_of(t);
    vec4 y = Y_texel(q.x, q.y);
    bvec4 ok = in_low(y, A_texel(q.x, q.y), C);
    v = mix(vec4(worst_value()), y * G_texel(q.x, q.y), ok);
    idx = mix(vec4(NO_INDEX), vec4(G_flat(q.x, q.y)), ok);
}
#include "../reduce/argbest_core.glsl"
