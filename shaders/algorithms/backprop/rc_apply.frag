// Fused schedule on uniform blocks, the recompute path's weight update: W' = W - eta sum_s P
// over the chunks s of rc_gradient.frag's partial sums P (rows s, texel columns i = rows of W2).
// LAYER 1: texel (h, 0) of column-packed W1 (its rows k in the lanes) from P texel (s, h + 1);
// LAYER 2: texel (o, q) of column-packed W2 (rows 4q .. 4q + 3 of column o) from lane o of
// P texels (s, 4q .. 4q + 3). Padding lanes are written 0. Uniform: eta.
void main() {
    ivec2 g = OUT_grid();
    vec4 acc = vec4(0.0);
#if LAYER == 1
    for (int s = 0; s < P_GRID_H; ++s)
        acc += P_texel(s, g.x + 1);
#else
    int o = g.x, i = 4 * g.y, top = P_GRID_W - 1;
    int i1 = min(i + 1, top), i2 = min(i + 2, top), i3 = min(i + 3, top);
    for (int s = 0; s < P_GRID_H; ++s)
        acc += vec4(P_texel(s, i)[o], P_texel(s, i1)[o], P_texel(s, i2)[o], P_texel(s, i3)[o]);
#endif
    OUT = mix(vec4(0.0), W_texel(g.x, g.y) - eta * acc, OUT_lanes());
}
