// Reshape output row 1 of Y (one column per point of a G x G grid, row-major) into a G x G
// matrix for display.
void main() {
    ivec2 g = OUT_grid();
    OUT = vec4(Y_at(1, g.x * OUT_COLS + g.y));
}
