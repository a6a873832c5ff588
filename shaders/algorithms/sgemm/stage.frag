// Staging: OUT = op(X) zero-padded to the output's shape (packed row-major).
// op(X) is X (TRANS 0) or its transpose (TRANS 1). Every lane past op(X)'s logical edge is
// written as an exact 0, so the product kernels can run over padded K without bounds checks
// (0 * finite = 0). TEXELS 1 (the host checked: X packed row-major, TRANS 0): an output texel
// is one texel of X, read once (instead of one read per lane), its lanes past the edge masked.
#if TRANS
#define OP_ROWS X_COLS
#define OP_COLS X_ROWS
float op_at(ivec2 e) { return X_at(e.y, e.x); }
#else
#define OP_ROWS X_ROWS
#define OP_COLS X_COLS
float op_at(ivec2 e) { return X_at(e.x, e.y); }
#endif
void main() {
    vec4 v = vec4(0.0);
#if TEXELS
    vec4 xt = vec4(0.0);
    ivec2 e0 = OUT_pos(0);
    if (OUT_inside() && e0.x < OP_ROWS && e0.y < OP_COLS) xt = X_texel(e0.x, OUT_grid().y);
#endif
    for (int l = 0; l < 4; ++l) {
        ivec2 e = OUT_pos(l);
        if (OUT_live(l) && e.x < OP_ROWS && e.y < OP_COLS) {
#if TEXELS
            v[l] = xt[l];
#else
            v[l] = op_at(e);
#endif
        }
    }
    OUT = v;
}
