// OUT (+)= scale * X: with additive blending this adds X into OUT.
void main() {
    ivec2 g = OUT_grid();
    OUT = scale * X_texel(g.x, g.y);
}
