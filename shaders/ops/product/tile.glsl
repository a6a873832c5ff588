// Register-tiled product micro-kernel: the inner step of SGEMM's 8x4 tile, shared by every
// kernel that computes TILE_ROWS x 4 outputs per fragment (TILE_ROWS render targets, 4 lanes).
// One step consumes four values of the inner index k (one "K-quad"):
//   a_t = (A[t][k], A[t][k+1], A[t][k+2], A[t][k+3])        row t of the tile, t < TILE_ROWS
//   b_u = (B[k+u][c], B[k+u][c+1], B[k+u][c+2], B[k+u][c+3]) the tile's 4 columns
//   c_t += a_t.x b_0 + a_t.y b_1 + a_t.z b_2 + a_t.w b_3
// so each fetched texel is reused TILE_ROWS (b_u) or 4 (a_t) times: 16 TILE_ROWS multiply-adds
// for TILE_ROWS + 4 fetches. The including kernel fetches the operands (any layout: a 4x4 block
// read the other way round is turned with tile_transpose) and defines TILE_ROWS (1, 4 or 8).
#define TILE_MAC(c, a, b0, b1, b2, b3) c += a.x * b0; c += a.y * b1; c += a.z * b2; c += a.w * b3

void tile_quad(vec4 a0, vec4 a1, vec4 a2, vec4 a3, vec4 a4, vec4 a5, vec4 a6, vec4 a7,
               vec4 b0, vec4 b1, vec4 b2, vec4 b3,
               inout vec4 c0, inout vec4 c1, inout vec4 c2, inout vec4 c3,
               inout vec4 c4, inout vec4 c5, inout vec4 c6, inout vec4 c7) {
    TILE_MAC(c0, a0, b0, b1, b2, b3);
#if TILE_ROWS >= 4
    TILE_MAC(c1, a1, b0, b1, b2, b3);
    TILE_MAC(c2, a2, b0, b1, b2, b3);
    TILE_MAC(c3, a3, b0, b1, b2, b3);
#endif
#if TILE_ROWS >= 8
    TILE_MAC(c4, a4, b0, b1, b2, b3);
    TILE_MAC(c5, a5, b0, b1, b2, b3);
    TILE_MAC(c6, a6, b0, b1, b2, b3);
    TILE_MAC(c7, a7, b0, b1, b2, b3);
#endif
}

// The 4x4 block (x0 x1 x2 x3) read as rows, returned as columns: y_u[v] = x_v[u].
void tile_transpose(inout vec4 x0, inout vec4 x1, inout vec4 x2, inout vec4 x3) {
    mat4 m = transpose(mat4(x0, x1, x2, x3));
    x0 = m[0]; x1 = m[1]; x2 = m[2]; x3 = m[3];
}
