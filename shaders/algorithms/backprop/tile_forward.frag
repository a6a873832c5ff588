// Fused schedule, forward propagation as a register-tiled product (ops/product/tile.glsl):
// Z[j][l] = sum_i W[i][j] A[i][l] over the K-quads q in [q_begin, q_end) (i = 4q .. 4q+3), for
// TILE_ROWS neurons j and the four training vectors of one texel per fragment.
// W is stored column-packed (W_texel(j, q) = W[4q .. 4q+3][j], zero past the last row; a
// texture, or a buffer of W^T packed by rows, the same texels: W_GRID_H neurons), so a
// fetch gives row j of the tile's "A" operand for one K-quad; A's rows are the "B" operand.
// ACTIVATE 0: neuron t H + h goes to render target t, row h (each Z<t> has H = ceil(L'/R)
//   rows, so neighbouring rows lie in one target); a gather pass (tile_activate.frag, or one
//   per target over its rows) applies f. Linear in the sum: the engine may cut the K-quad
//   range over accumulating passes.
// ACTIVATE 1 (TILE_ROWS 1, the whole range in one pass): writes the layer A' itself, row 0 = 1
//   in the live lanes, row j + 1 = f(Z[j]); with OUTPUT_LAYER also the output error
//   DELTA = (y - t) y (1 - y) from the targets T.
// RECOMPUTE 1: the rows of A (a hidden layer over at most three inputs) are not stored but
//   made from the layer below, X (<= 4 rows, threshold included), and its column-packed weights
//   WL: A[0] = 1, A[i] = f(WL[.][i-1] . X), a fetch of WL per row instead of one of A.
// WUBO 1 (ACTIVATE 0, the whole K range): W comes from the uniform block WB instead of a
//   texture, the column-packed texels of a window of R hw neurons in texture order (the
//   window bound for this draw). The targets hold the windows' tile rows one after another,
//   hw each, tile row r's texel c at grid texel (r rpt + c / S, c % S) (S = OUT0_GRID_W), so
//   a block of fragments lies in one tile row r, in window w = r / hw, and its target t holds
//   the window's neuron t hw + (r - w hw): every fragment of the block reads one address.
#include "common.glsl"
#include "ops/product/tile.glsl"
#if RECOMPUTE
#define B_ROWS (WL_GRID_H + 1)
vec4 rx0, rx1, rx2, rx3;                  // X rows 0 .. 3 at this fragment's texel
vec4 fwd_a(int i, int c) {
    vec4 w = WL_texel(max(min(i, B_ROWS - 1) - 1, 0), 0);
    return i == 0 ? rx0 : sigmoid(w.x * rx0 + w.y * rx1 + w.z * rx2 + w.w * rx3) * rx0;
}
#else
#define B_ROWS A_ROWS
vec4 fwd_a(int i, int c) { return A_texel(min(i, A_ROWS - 1), c); }
#endif
#if ACTIVATE || WUBO
#define Q_BEGIN 0
#define Q_END ((B_ROWS + 3) / 4)
#else
#define Q_BEGIN q_begin
#define Q_END q_end
#endif
#if WUBO
vec4 fwd_w(int j, int q) { return WB_vec4(j * Q_END + q); }       // j: neuron in the window
#else
vec4 fwd_w(int j, int q) { return W_texel(min(j, W_GRID_H - 1), q); }
#endif
void main() {
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    vec4 c4 = vec4(0.0), c5 = vec4(0.0), c6 = vec4(0.0), c7 = vec4(0.0);
    vec4 z = vec4(0.0);
#if ACTIVATE
    ivec2 g = OUT_grid();
    int r = g.x - 1;
    bool live = g.x > 0;
#else
    ivec2 g = OUT0_grid();
#if WUBO
    int row = g.x / rpt;                  // the tile row, and the texel column of A:
    g.y += (g.x - row * rpt) * OUT0_GRID_W;
    int h = hw;                           // tile rows per target and window
    int r = row - row / hw * hw;
    bool live = OUT0_inside() && g.y < A_GRID_W;
#else
    int r = g.x;
    int h = OUT0_ROWS;                    // rows of neurons per target
    bool live = OUT0_inside();
#endif
#endif
    if (live) {
#if RECOMPUTE
        int top = X_ROWS - 1;
        rx0 = X_texel(0, g.y); rx1 = X_texel(min(1, top), g.y);
        rx2 = X_texel(min(2, top), g.y); rx3 = X_texel(min(3, top), g.y);
#endif
        for (int q = Q_BEGIN; q < Q_END; ++q) {
            int i = q * 4;
            vec4 b0 = fwd_a(i, g.y), b1 = fwd_a(i + 1, g.y);
            vec4 b2 = fwd_a(i + 2, g.y), b3 = fwd_a(i + 3, g.y);
            vec4 a0 = fwd_w(r, q), a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z;
#if TILE_ROWS >= 4 && !ACTIVATE
            a1 = fwd_w(r + h, q); a2 = fwd_w(r + 2 * h, q); a3 = fwd_w(r + 3 * h, q);
#endif
#if TILE_ROWS >= 8 && !ACTIVATE
            a4 = fwd_w(r + 4 * h, q); a5 = fwd_w(r + 5 * h, q); a6 = fwd_w(r + 6 * h, q);
            a7 = fwd_w(r + 7 * h, q);
#endif
            tile_quad(a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3,
                      c0, c1, c2, c3, c4, c5, c6, c7);
        }
    }
#if ACTIVATE
    vec4 mask = vec4(OUT_lanes());
    vec4 y = live ? sigmoid(c0) * mask : mask;
    OUT = y;
#if OUTPUT_LAYER
    DELTA = live ? (y - T_texel(g.x, g.y)) * y * (1.0 - y) : vec4(0.0);
#endif
#else
    OUT0 = c0;
#if TILE_ROWS >= 4
    OUT1 = c1; OUT2 = c2; OUT3 = c3;
#endif
#if TILE_ROWS >= 8
    OUT4 = c4; OUT5 = c5; OUT6 = c6; OUT7 = c7;
#endif
#endif
}
