// Split path with the step on the device: partial squared distances of every point to the
// selected pair (i, j), read from the selection results RES (step.glsl), over the feature
// texels [d4_begin, d4_end) (passes add by blending or ping-pong accumulation). After the
// solver stopped the distances are unused (the step is a no-op).
#include "../../ops/rbf/rbf_pair.glsl"
#define SMO_PAIR_ONLY 1
#include "step.glsl"
void main() {
    ivec2 p = min(smo_pair(), ivec2(XR_ROWS - 1));
    vec4 sh, sl;
    rbf_d2_pair(OUT0_grid().y, p.x, p.y, d4_begin, d4_end, sh, sl);
    OUT0 = sh;
    OUT1 = sl;
}
