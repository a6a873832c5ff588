// First level of both selections in one pass (DUAL reduction): the I_up arg-max of -y G
// (candidates) and the I_low arg-max of y G (candidates2); the shared code is in sets.glsl.
#include "../../ops/reduce/argbest_defs.glsl"
#include "sets.glsl"
void candidates(int t, ivec2 p, out vec4 v, out vec4 idx) { up_candidates(t, p, v, idx); }
void candidates2(int t, ivec2 p, out vec4 v, out vec4 idx) { low_candidates(t, p, v, idx); }
#include "../../ops/reduce/argbest_core.glsl"
