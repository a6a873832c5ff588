// OUT (a packed vector) = X flattened in row-major order, read element by element through
// X_get: exercises the element accessors of any input layout.
void main() {
    vec4 v = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (OUT_live(l) && OUT_index(l) < X_ROWS * X_COLS) v[l] = X_get(OUT_index(l));
    }
    OUT = v;
}
