// Debug mode's check pass: runs the kernel (its main() was renamed sg_kernel_main) and writes
// the first out-of-range read it recorded. SG_DEBUG_LIVE (defined by the sanitizer) is false
// for a fragment whose texel is padding in every output: what it reads reaches no element.
void main() {
    sg_kernel_main();
    sg_debug = SG_DEBUG_LIVE ? sg_debug_record : vec4(0.0);
}
