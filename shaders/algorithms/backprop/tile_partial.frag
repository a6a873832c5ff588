// Fused schedule, weight update, stage 1, as a register-tiled product (ops/product/tile.glsl):
// partial sums of the gradient G[i][j] = sum_l A[i][l] D[j+1][l] over `chunk` texels of
// training vectors, for TILE_ROWS upper neurons j (render targets) and four lower neurons i
// (lanes) per fragment. Target t, row s H + h, texel column iq holds chunk s of
// G[4 iq .. 4 iq + 3][t H + h] (H = ceil(L' / R) neurons per target): the column-packed
// layout of W, gathered by tile_apply.frag. Per texel b: the four A texels of rows 4 iq .. are
// transposed into the "B" operand (one vector per lane), the D texels are the "A" rows.
// FUSED_DELTA 1: the errors D of the layer are not stored but made here from the layer above
// (at most four neurons): D[j+1][l] = a (1 - a) sum_k W[j+1][k] Dup[k+1][l], a = AH[j+1][l]
// (inputs AH, WU, DUP for A', W', Dup), which saves a full pass writing D.
// RECOMPUTE 1: the lower layer (a hidden layer over at most three inputs) is not stored but
// made from its own lower layer (<= 4 rows: X, or A with FUSED_DELTA) and column-packed
// weights WL: row 0 = 1, row i = f(WL[.][i-1] . X) (with FUSED_DELTA: the rows a of AH).
// Uniform: chunk.
#include "common.glsl"
#include "ops/product/tile.glsl"
vec4 rx0, rx1, rx2, rx3;                // the stored layer under a recomputed one, at texel b
#if RECOMPUTE
vec4 rec(vec4 w) { return sigmoid(w.x * rx0 + w.y * rx1 + w.z * rx2 + w.w * rx3) * rx0; }
vec4 wl(int i) { return WL_texel(max(min(i, WL_GRID_H) - 1, 0), 0); }  // weights, row i >= 1
#endif
#if RECOMPUTE && !FUSED_DELTA
#define LOW_GRID_W X_GRID_W
#else
#define LOW_GRID_W A_GRID_W
vec4 gr_a(int i, int b) { return A_texel(min(i, A_ROWS - 1), b); }
#endif
#if FUSED_DELTA && RECOMPUTE
#define E_ROWS (WL_GRID_H + 1)
#elif FUSED_DELTA
#define E_ROWS AH_ROWS
#endif
#if FUSED_DELTA
float wu(int r, int k) { return k < WU_COLS ? WU_at(r, min(k, WU_COLS - 1)) : 0.0; }
vec4 wrow(int j) {                      // W'[j+1][0 .. 3], 0 past the upper layer's width
    int r = min(j + 1, WU_ROWS - 1);
    return vec4(wu(r, 0), wu(r, 1), wu(r, 2), wu(r, 3));
}
vec4 u0, u1, u2, u3;                    // Dup rows 1 .. 4 at the current texel
vec4 gr_e(int j, vec4 w, vec4 wh, int b) {
#if RECOMPUTE
    vec4 a = rec(wh);
#else
    vec4 a = AH_texel(min(j + 1, AH_ROWS - 1), b);
#endif
    return (w.x * u0 + w.y * u1 + w.z * u2 + w.w * u3) * a * (1.0 - a);
}
#define GR_D(J, W, H, B) gr_e(J, W, H, B)
#else
#define E_ROWS D_ROWS
vec4 gr_d(int j, int b) { return D_texel(min(j + 1, D_ROWS - 1), b); }
#define GR_D(J, W, H, B) gr_d(J, B)
#endif
void main() {
    vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
    vec4 c4 = vec4(0.0), c5 = vec4(0.0), c6 = vec4(0.0), c7 = vec4(0.0);
    if (OUT0_inside()) {
        ivec2 g = OUT0_grid();
        int jr_n = (E_ROWS - 1 + TILE_ROWS - 1) / TILE_ROWS;
        int s = g.x / jr_n;
        int j = g.x - s * jr_n;
        int i = g.y * 4;
        int b0 = s * chunk;
        int b1 = min(b0 + chunk, LOW_GRID_W);
        vec4 z = vec4(0.0);
        vec4 w0 = z, w1 = z, w2 = z, w3 = z, w4 = z, w5 = z, w6 = z, w7 = z;
        vec4 h0 = z, h1 = z, h2 = z, h3 = z, h4 = z, h5 = z, h6 = z, h7 = z;
        vec4 v0 = z, v1 = z, v2 = z, v3 = z;
#if RECOMPUTE && FUSED_DELTA
        h0 = wl(j + 1);
#if TILE_ROWS >= 4
        h1 = wl(j + jr_n + 1); h2 = wl(j + 2 * jr_n + 1); h3 = wl(j + 3 * jr_n + 1);
#endif
#if TILE_ROWS >= 8
        h4 = wl(j + 4 * jr_n + 1); h5 = wl(j + 5 * jr_n + 1); h6 = wl(j + 6 * jr_n + 1);
        h7 = wl(j + 7 * jr_n + 1);
#endif
#elif RECOMPUTE
        v0 = wl(i); v1 = wl(i + 1); v2 = wl(i + 2); v3 = wl(i + 3);
#endif
#if FUSED_DELTA
        w0 = wrow(j);
#if TILE_ROWS >= 4
        w1 = wrow(j + jr_n); w2 = wrow(j + 2 * jr_n); w3 = wrow(j + 3 * jr_n);
#endif
#if TILE_ROWS >= 8
        w4 = wrow(j + 4 * jr_n); w5 = wrow(j + 5 * jr_n); w6 = wrow(j + 6 * jr_n);
        w7 = wrow(j + 7 * jr_n);
#endif
#endif
        for (int b = b0; b < b1; ++b) {
#if FUSED_DELTA
            int top = DUP_ROWS - 1;
            u0 = DUP_texel(min(1, top), b); u1 = DUP_texel(min(2, top), b);
            u2 = DUP_texel(min(3, top), b); u3 = DUP_texel(min(4, top), b);
#endif
#if RECOMPUTE && !FUSED_DELTA
            int top = X_ROWS - 1;
            rx0 = X_texel(0, b); rx1 = X_texel(min(1, top), b);
            rx2 = X_texel(min(2, top), b); rx3 = X_texel(min(3, top), b);
            vec4 x0 = i == 0 ? rx0 : rec(v0), x1 = rec(v1), x2 = rec(v2), x3 = rec(v3);
#else
            vec4 x0 = gr_a(i, b), x1 = gr_a(i + 1, b), x2 = gr_a(i + 2, b), x3 = gr_a(i + 3, b);
            rx0 = x0; rx1 = x1; rx2 = x2; rx3 = x3;
#endif
            tile_transpose(x0, x1, x2, x3);
            vec4 a0 = GR_D(j, w0, h0, b), a1 = z, a2 = z, a3 = z, a4 = z, a5 = z, a6 = z, a7 = z;
#if TILE_ROWS >= 4
            a1 = GR_D(j + jr_n, w1, h1, b); a2 = GR_D(j + 2 * jr_n, w2, h2, b);
            a3 = GR_D(j + 3 * jr_n, w3, h3, b);
#endif
#if TILE_ROWS >= 8
            a4 = GR_D(j + 4 * jr_n, w4, h4, b); a5 = GR_D(j + 5 * jr_n, w5, h5, b);
            a6 = GR_D(j + 6 * jr_n, w6, h6, b); a7 = GR_D(j + 7 * jr_n, w7, h7, b);
#endif
            tile_quad(a0, a1, a2, a3, a4, a5, a6, a7, x0, x1, x2, x3,
                      c0, c1, c2, c3, c4, c5, c6, c7);
        }
    }
    OUT0 = c0;
#if TILE_ROWS >= 4
    OUT1 = c1; OUT2 = c2; OUT3 = c3;
#endif
#if TILE_ROWS >= 8
    OUT4 = c4; OUT5 = c5; OUT6 = c6; OUT7 = c7;
#endif
}
