// Fragment ALU ceiling, form 2: per step 8 vec4 multiply-adds of the form SGEMM uses (vector += scalar *
// vector) on 8 accumulators, plus one vec4 multiply: 8 * 4 * 2 + 4 = 68 flops per step, ITERS
// steps. (On llvmpipe this form runs ~1.5x faster than x = x * m + a with a vec4 m.) The result
// is written so nothing is optimised away; values stay small and normal.
void main() {
    vec4 x0 = vec4(gl_FragCoord.xyxy) * 1e-4;
    vec4 x1 = x0 + 0.1, x2 = x0 + 0.2, x3 = x0 + 0.3, x4 = x0 + 0.4;
    vec4 x5 = x0 + 0.5, x6 = x0 + 0.6, x7 = x0 + 0.7;
    vec4 v = a;
    for (int i = 0; i < ITERS; ++i) {
        x0 += m.x * v; x1 += m.y * v; x2 += m.z * v; x3 += m.w * v;
        x4 += v.x * x0; x5 += v.y * x1; x6 += v.z * x2; x7 += v.w * x3;
        v = v * 0.999;
    }
    OUT = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
