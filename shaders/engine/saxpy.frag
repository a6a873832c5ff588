// OUT = alpha * X + Y, texel by texel (X, Y, OUT share one layout).
void main() {
    ivec2 g = OUT_grid();
    OUT = alpha * X_texel(g.x, g.y) + Y_texel(g.x, g.y);
}
