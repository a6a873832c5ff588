// Mini-batch trainer, the output layer from its pre-activations Z (OUT_ACT: 0 identity,
// 1 softmax over the row, 2 logistic). TRAIN: writes the output error DELTA = p - y (the
// gradient of the loss at Z for each of the three pairings: identity with squared error,
// softmax and logistic with log-loss) and adds each sample's loss into LOSS (ping-pong from
// LIN; `first` starts the sum). Each sample's error and loss are weighted by its SW, the
// loss also by `lscale` (scikit-learn's batch-size over weight-sum factor). Otherwise writes
// the outputs P. Uniforms: start, nb, first, lscale.
#include "mb_common.glsl"

const float PROB_EPS = 1.1920929e-07;   // float32 epsilon: log-loss clips p to [eps, 1 - eps]

vec4 xlogy(vec4 x, vec4 y) {           // x log y, 0 where x is 0
    return mix(x * log(y), vec4(0.0), equal(x, vec4(0.0)));
}

void main() {
#if TRAIN
    ivec2 g = DELTA_grid();
    vec4 live = vec4(DELTA_lanes());
#else
    ivec2 g = OUT_grid();
    vec4 live = vec4(OUT_lanes());
#endif
    int r = g.x;
    vec4 z = Z_texel(r, g.y);
#if OUT_ACT == 1
    float m = -3.4e38;
    for (int q = 0; q < Z_GRID_W; ++q) {
        vec4 t = Z_texel(r, q);
        ivec4 f = Z_flat(r, q);                     // -1 in padding lanes
        for (int l = 0; l < 4; ++l) if (f[l] >= 0) m = max(m, t[l]);
    }
    float total = 0.0;
    for (int q = 0; q < Z_GRID_W; ++q) {
        vec4 t = Z_texel(r, q);
        ivec4 f = Z_flat(r, q);
        for (int l = 0; l < 4; ++l) if (f[l] >= 0) total += exp(t[l] - m);
    }
    vec4 p = exp(z - m) / total * live;
#elif OUT_ACT == 2
    vec4 p = 1.0 / (1.0 + exp(-z)) * live;
#else
    vec4 p = z * live;
#endif
#if TRAIN
    vec4 before = first != 0 ? vec4(0.0) : LIN_texel(r, g.y);
    if (r >= nb) { DELTA = vec4(0.0); LOSS = before; return; }
    int src = int(IDX_get(start + r));
    vec4 y = Y_texel(src, g.y);
    float sw = SW_get(src);
    DELTA = (p - y) * live * sw;
    vec4 pc = clamp(p, PROB_EPS, 1.0 - PROB_EPS);
#if OUT_ACT == 1
    vec4 loss = -xlogy(y, pc);
#elif OUT_ACT == 2
    vec4 loss = -xlogy(y, pc) - xlogy(1.0 - y, 1.0 - pc);
#else
    vec4 loss = (y - p) * (y - p) / (2.0 * float(Z_COLS));
#endif
    LOSS = before + loss * live * (sw * lscale);
#else
    OUT = p;
#endif
}
