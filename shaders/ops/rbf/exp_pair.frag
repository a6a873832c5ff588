// K = exp(-gamma d2) of the distances D0, D1 left by pair_d2.frag (the split path).
void main() {
    ivec2 g = OUT0_grid();
    OUT0 = exp(-gamma * D0_texel(g.x, g.y));
    OUT1 = exp(-gamma * D1_texel(g.x, g.y));
}
