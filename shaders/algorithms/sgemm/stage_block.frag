// Staging for the uniform-block path: op(X) (TRANS 1: X transposed), zero-padded, rearranged
// into block windows. Output row r is window w = first + r: block row i = w / chunks, K chunk
// c = w - i * chunks; its vec4 number v = q * TILE_ROWS + t (q < chunk) holds
// op(X)[TILE_ROWS*i + t, 4*(c*chunk + q) .. +3]; everything else (padding past op(X)'s edges
// and past the chunk) is an exact 0. Copied in texture memory order into a uniform buffer.
// TEXELS 1 (the host checked: X packed row-major, TRANS 0): that vec4 is texel (row,
// c*chunk + q) of X, read once (instead of one read per lane), its lanes past the edge masked.
#if TRANS
#define OP_ROWS X_COLS
#define OP_COLS X_ROWS
float op_at(int r, int c) { return X_at(c, r); }
#else
#define OP_ROWS X_ROWS
#define OP_COLS X_COLS
float op_at(int r, int c) { return X_at(r, c); }
#endif
void main() {
    vec4 v4 = vec4(0.0);
#if TEXELS
    vec4 xt = vec4(0.0);
    {
        ivec2 e = OUT_pos(0);                  // lane 0: column 4 kq of op(X)
        int w = first + e.x;
        int i = w / chunks;
        int v = e.y / 4;
        int q = v / TILE_ROWS;
        int row = TILE_ROWS * i + (v - q * TILE_ROWS);
        int kq = (w - i * chunks) * chunk + q;
        if (OUT_inside() && q < chunk && row < OP_ROWS && e.y + 4 * (kq - v) < OP_COLS)
            xt = X_texel(row, kq);
    }
#endif
    for (int l = 0; l < 4; ++l) {
        ivec2 e = OUT_pos(l);                  // (window, element of the window)
        int w = first + e.x;
        int i = w / chunks;
        int c = w - i * chunks;
        int v = e.y / 4;                       // vec4 of the window
        int q = v / TILE_ROWS;
        int row = TILE_ROWS * i + (v - q * TILE_ROWS);
        int col = e.y + 4 * (c * chunk + q - v);
        if (OUT_live(l) && q < chunk && row < OP_ROWS && col < OP_COLS) {
#if TEXELS
            v4[l] = xt[l];
#else
            v4[l] = op_at(row, col);
#endif
        }
    }
    OUT = v4;
}
