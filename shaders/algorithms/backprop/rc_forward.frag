// Fused schedule on uniform blocks, the recompute path (one hidden layer over at most three
// inputs, at most four outputs): forward propagation through both layers and the output error
// in one pass; the hidden layer is made and consumed in registers, never stored. Fragment
// (r, c) of the output layer: row r > 0 is output o = r - 1 for the training vectors of
// texel c,
//   y = f(sum_i W2[i][o] a_i),  a_0 = 1,  a_i = f(sum_k W1[k][i - 1] x_k)  (i = 1 .. nh),
// written with DELTA = (y - t) y (1 - y); row 0 is the constant row (1 in live lanes).
// Both weight matrices come from uniform blocks, every fragment of the draw reading the same
// address at each step (the constant cache, no texel fetch): WB1_vec4(h) = W1[0 .. 3][h] (the
// column-packed texel of hidden unit h), WB2_vec4(o nq + q) = W2[4q .. 4q + 3][o] (zero past
// the last row; the block holds zeros past the weights, so no index is clamped). The vec4
// lanes are the four training vectors of a texel. X: IN_ROWS rows (threshold row included),
// scaled by -log2(e) once (sigmoid2.glsl); OUTS outputs. Uniforms: nh hidden units,
// nq = ceil((nh + 1) / 4).
#include "common.glsl"
#include "sigmoid2.glsl"
vec4 x1, x2, x3;                          // the inputs at this fragment's texel, times -log2(e)
vec4 hidden(int h) {                      // a_{h+1}: one uniform read, one vec4 sigmoid
    vec4 w = WB1_vec4(h);                 // (past the last unit the block holds zeros)
    vec4 s = vec4(w.x * NEG_LOG2E) + w.y * x1;
#if IN_ROWS >= 3
    s += w.z * x2;
#endif
#if IN_ROWS >= 4
    s += w.w * x3;
#endif
    return sigmoid2(s);
}
vec4 w2_quad(int o, int q) {              // W2[4q .. 4q + 3][o]: OUTS uniform reads, one kept
    vec4 w = WB2_vec4(q);
#if OUTS >= 2
    vec4 u = WB2_vec4(nq + q); w = o == 1 ? u : w;
#endif
#if OUTS >= 3
    u = WB2_vec4(2 * nq + q); w = o == 2 ? u : w;
#endif
#if OUTS >= 4
    u = WB2_vec4(3 * nq + q); w = o == 3 ? u : w;
#endif
    return w;
}
void main() {
    ivec2 g = OUT_grid();
    vec4 mask = vec4(OUT_lanes());
    if (g.x == 0 || !OUT_inside()) {
        OUT = mask;
        DELTA = vec4(0.0);
        return;
    }
    int o = g.x - 1, c = g.y;
    x1 = X_texel(1, c) * NEG_LOG2E;
#if IN_ROWS >= 3
    x2 = X_texel(2, c) * NEG_LOG2E;
#endif
#if IN_ROWS >= 4
    x3 = X_texel(3, c) * NEG_LOG2E;
#endif
    // row 0 of W2 (the threshold, a_0 = 1) and hidden units 0 .. 2, then four units a step
    vec4 w2 = w2_quad(o, 0);
    vec4 acc = w2.x + w2.y * hidden(0) + w2.z * hidden(1) + w2.w * hidden(2);
    for (int q = 1; q < nq; ++q) {
        w2 = w2_quad(o, q);
        int h = 4 * q - 1;                // past the last unit W2 is 0 (and the block too)
        acc += w2.x * hidden(h);
        acc += w2.y * hidden(h + 1);
        acc += w2.z * hidden(h + 2);
        acc += w2.w * hidden(h + 3);
    }
    vec4 y = sigmoid2(acc * NEG_LOG2E) * mask;
    OUT = y;
    DELTA = (y - T_texel(g.x, c)) * y * (1.0 - y);
}
