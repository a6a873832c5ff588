// Mini-batch trainer, one layer's solver step. Each fragment owns one texel of the weights
// W (Lp + 1, L'): row k < Lp a weight row, row Lp the intercepts. The batch gradient's sum
// sum_r A[r][k] D[r] is row k of mb_gradient.frag's blocks (output G(k mod 4), block row k / 4,
// summed over its SLICES parts); the gradient is (that sum + alpha W[k]) / denom (the batch's
// weight sum; no penalty on the intercepts); SOLVER 0 is SGD with momentum (M the velocity,
// NESTEROV), 1 is Adam (M, V the moments; `lr` carries the bias correction). SQ adds W[k]^2
// (before the step, the penalty's part of the batch loss, times `sqscale`) to a running sum
// (`first` starts it). Uniforms: first, lr, alpha, mu (momentum or beta_1), beta2, eps, denom,
// sqscale.
#include "mb_common.glsl"
void main() {
    ivec2 g = W_OUT_grid();
    int k = g.x;
    vec4 live = vec4(W_OUT_lanes());
    vec4 w = W_texel(k, g.y);
    bool bias = k == W_OUT_ROWS - 1;
    int Q = G0_ROWS / SLICES;
    int q = k >> 2;
    int row = k & 3;
    vec4 grad = vec4(0.0);
    for (int part = 0; part < SLICES; ++part) {
        int t = part * Q + q;
        mat4 block = mat4(G0_texel(t, g.y), G1_texel(t, g.y), G2_texel(t, g.y),
                          G3_texel(t, g.y));
        grad += block[row];
    }
    float reg = bias ? 0.0 : alpha;
    grad = (grad + reg * w) / denom;
    SQ = (first != 0 ? vec4(0.0) : S_texel(k, g.y)) + (bias ? vec4(0.0) : w * w * sqscale);
#if SOLVER == 1
    vec4 m = mu * M_texel(k, g.y) + (1.0 - mu) * grad;
    vec4 v = beta2 * V_texel(k, g.y) + (1.0 - beta2) * grad * grad;
    W_OUT = (w - lr * m / (sqrt(v) + eps)) * live;
    M_OUT = m * live;
    V_OUT = v * live;
#else
    vec4 vel = mu * M_texel(k, g.y) - lr * grad;
#if NESTEROV
    W_OUT = (w + mu * vel - lr * grad) * live;
#else
    W_OUT = (w + vel) * live;
#endif
    M_OUT = vel * live;
#endif
}
