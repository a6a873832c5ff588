// OUT = X, texel by texel (same layout): the fragment copy-bandwidth kernel.
void main() {
    ivec2 g = OUT_grid();
    OUT = X_texel(g.x, g.y);
}
