// OUT (N x 1) = |G_i|^2 per point: with a sum reduction, the squared norm of the direction.
void main() {
    ivec2 q = OUT_grid();
    vec4 g = (OUT_inside() && q.x < G_ROWS) ? G_texel(q.x, 0) : vec4(0.0);
    OUT = vec4(dot(g, g), 0.0, 0.0, 0.0);
}
