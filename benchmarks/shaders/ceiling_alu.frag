// Fragment ALU ceiling, form 1: 8 independent chains x = x * m + a of vec4 multiply-adds,
// ITERS steps (64 flops per step). The benchmark takes the faster of this and
// ceiling_alu_sv.frag (vector += scalar * vector, the form SGEMM uses), per device.
void main() {
    vec4 x0 = vec4(gl_FragCoord.xyxy) * 1e-4;
    vec4 x1 = x0 + 0.1, x2 = x0 + 0.2, x3 = x0 + 0.3, x4 = x0 + 0.4;
    vec4 x5 = x0 + 0.5, x6 = x0 + 0.6, x7 = x0 + 0.7;
    for (int i = 0; i < ITERS; ++i) {
        x0 = x0 * m + a; x1 = x1 * m + a; x2 = x2 * m + a; x3 = x3 * m + a;
        x4 = x4 * m + a; x5 = x5 * m + a; x6 = x6 * m + a; x7 = x7 * m + a;
    }
    OUT = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
