// Staging: OUT = op(X) zero-padded to the output's shape, packed row-major.
// op(X) is X (TRANS 0) or its transpose (TRANS 1); OP_ROWS x OP_COLS is op(X)'s logical shape.
// Every lane past the logical edge is written as an exact 0, so the product kernels can run
// over padded K without bounds checks (0 * finite = 0).
#ifndef TRANS
#define TRANS 0
#endif
float op_at(int r, int c) {
#if TRANS
    return X_at(c, r);
#else
    return X_at(r, c);
#endif
}
void main() {
    ivec2 g = OUT_grid();
    vec4 v = vec4(0.0);
    if (OUT_inside() && g.x < OP_ROWS) {
        for (int l = 0; l < 4; ++l) {
            int c = 4 * g.y + l;
            if (c < OP_COLS) v[l] = op_at(g.x, c);
        }
    }
    OUT = v;
}
