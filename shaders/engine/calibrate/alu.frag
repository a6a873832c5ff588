// Calibration: fragment ALU rate. Four independent vec4 multiply-adds per iteration
// (32 flops), n_iter iterations, nothing fetched: the time is arithmetic only.
void main() {
    vec4 a = vec4(OUT_grid().xyxy) * 1e-4;
    vec4 b = a + 0.5, c = a + 0.25, d = a + 0.125;
    for (int i = 0; i < n_iter; ++i) {
        a = a * 0.999 + 0.001;
        b = b * 0.999 + 0.001;
        c = c * 0.999 + 0.001;
        d = d * 0.999 + 0.001;
    }
    OUT = a + b + c + d;
}
