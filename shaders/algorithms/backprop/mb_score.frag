// Mini-batch trainer, a validation score's per-sample terms from the outputs P and targets Y
// (rows of the validation set). KIND 0 (regression): (y - p)^2 per output, summed per column by
// the caller for R^2. KIND 1 (one output per class, softmax): lane 0 of texel 0 is 1 when the
// first largest output is the target's class. KIND 2 (logistic outputs: binary or
// multilabel): lane 0 of texel 0 is 1 when every output thresholded at 0.5 equals its target.
// Each row's terms are weighted by its SW.
void main() {
    ivec2 g = OUT_grid();
    int r = g.x;
#if KIND == 0
    vec4 d = Y_texel(r, g.y) - P_texel(r, g.y);
    OUT = d * d * vec4(OUT_lanes()) * SW_get(r);
#else
    if (g.y != 0) { OUT = vec4(0.0); return; }
    float hit = 1.0;
#if KIND == 1
    float best = -1.0;
    int arg = -1;                                   // flat indices within the row
    int want = -2;
    for (int q = 0; q < P_GRID_W; ++q) {
        vec4 p = P_texel(r, q);
        vec4 y = Y_texel(r, q);
        ivec4 f = P_flat(r, q);                     // -1 in padding lanes
        for (int l = 0; l < 4; ++l) {
            if (f[l] >= 0) {
                if (p[l] > best) { best = p[l]; arg = f[l]; }
                if (y[l] > 0.5) want = f[l];
            }
        }
    }
    hit = arg == want ? 1.0 : 0.0;
#else
    for (int q = 0; q < P_GRID_W; ++q) {
        vec4 p = P_texel(r, q);
        vec4 y = Y_texel(r, q);
        ivec4 f = P_flat(r, q);
        for (int l = 0; l < 4; ++l)
            if (f[l] >= 0 && (p[l] > 0.5) != (y[l] > 0.5)) hit = 0.0;
    }
#endif
    OUT = vec4(hit * SW_get(r), 0.0, 0.0, 0.0);
#endif
}
