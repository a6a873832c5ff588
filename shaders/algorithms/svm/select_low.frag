// First level of argmax_{t in I_low} y_t G_t (the first-order partner, and Gmax2 of the
// duality-gap stopping test).
#include "../../ops/reduce/argbest_defs.glsl"
#include "sets.glsl"
void candidates(int t, ivec2 p, out vec4 v, out vec4 idx) { low_candidates(t, p, v, idx); }
#include "../../ops/reduce/argbest_core.glsl"
