// Mini-batch trainer, one layer's gradient and solver step in one pass. Each fragment owns one
// texel of the weights W (Lp + 1, L'): row k < Lp a weight row, row Lp the intercepts. The
// gradient of the batch is (sum_r A[src(r)][k] D[r] + alpha W[k]) / denom (the batch's
// weight sum; no penalty on the intercepts); SOLVER 0 is SGD with momentum (M the velocity, NESTEROV), 1 is Adam (M, V the
// moments; `lr` carries the bias correction). SQ adds W[k]^2 (before the step, the penalty's
// part of the batch loss, times `sqscale`) to a running sum (`first` starts it).
// Uniforms: start, nb, first, lr, alpha, mu (momentum or beta_1), beta2, eps, denom, sqscale.
#include "mb_common.glsl"
void main() {
    ivec2 g = W_OUT_grid();
    int k = g.x;
    vec4 live = vec4(W_OUT_lanes());
    vec4 w = W_texel(k, g.y);
    bool bias = k == W_OUT_ROWS - 1;
    vec4 grad = vec4(0.0);
    if (bias) {
        for (int r = 0; r < nb; ++r) grad += D_texel(r, g.y);
    } else {
        for (int r = 0; r < nb; ++r) {
#if GATHER
            int src = int(IDX_get(start + r));
#else
            int src = r;
#endif
            grad += A_at(src, k) * D_texel(r, g.y);
        }
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
