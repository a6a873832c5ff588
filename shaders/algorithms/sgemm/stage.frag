// Staging: OUT = op(X) zero-padded to the output's shape (packed row-major).
// op(X) is X (TRANS 0) or its transpose (TRANS 1). Every lane past op(X)'s logical edge is
// written as an exact 0, so the product kernels can run over padded K without bounds checks
// (0 * finite = 0).
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
    for (int l = 0; l < 4; ++l) {
        ivec2 e = OUT_pos(l);
        if (OUT_live(l) && e.x < OP_ROWS && e.y < OP_COLS) v[l] = op_at(e);
    }
    OUT = v;
}
