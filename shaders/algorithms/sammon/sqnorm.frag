// OUT (N x 1) = |G_i|^2 per point: with a sum reduction, the squared norm of the direction.
void main() {
    if (!OUT_live(0)) { OUT = vec4(0.0); return; }
    vec4 g = G_texel(OUT_pos(0).x, 0);
    OUT = vec4(dot(g, g), 0.0, 0.0, 0.0);
}
