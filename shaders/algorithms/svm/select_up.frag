// First level of i = argmax_{t in I_up} -y_t G_t (libsvm's working-set selection).
#include "../../ops/reduce/argbest_defs.glsl"
#include "sets.glsl"
void candidates(int t, ivec2 p, out vec4 v, out vec4 idx) { up_candidates(t, p, v, idx); }
#include "../../ops/reduce/argbest_core.glsl"
