// Reshape output row 1 of Y (one column per point of a G x G grid, row-major) into a G x G
// matrix for display.
void main() {
    OUT = vec4(Y_at(1, OUT_index(0)));
}
