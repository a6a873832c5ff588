void main() {
    ivec2 g = OUT_grid();
    OUT = A_texel(g.x, g.y) + X_texel(g.x, g.y);
}
