// Debug mode's check pass (shadergpgpu/engine/sanitizer.py), placed before the accessors.
// The guarded accessors call sg_debug_hit for an index out of range (then clamp it); the first
// call of a fragment is kept and written to the check pass's only render target as
// (code, index a, index b, 1), code = 1 + 4 * input number + kind (0: element (r, c),
// 1: flat index i, 2: grid texel (gi, gj), 3: uniform-block vec4 i). The kernel's own outputs
// are plain globals in this pass, and its main() becomes sg_kernel_main (debug_main.glsl).
layout(location = 0) out vec4 sg_debug;
vec4 sg_debug_record = vec4(0.0);

void sg_debug_hit(int code, int a, int b) {
    if (sg_debug_record.x == 0.0) sg_debug_record = vec4(float(code), float(a), float(b), 1.0);
}
