// OUT (a packed vector) = X flattened in row-major order, read element by element through
// X_get: exercises the element accessors of any input layout.
void main() {
    ivec2 g = OUT_grid();
    int base = 4 * (g.x * OUT_GRID_W + g.y);
    vec4 v = vec4(0.0);
    for (int k = 0; k < 4; ++k) {
        int i = base + k;
        if (i < X_ROWS * X_COLS) v[k] = X_get(i);
    }
    OUT = v;
}
