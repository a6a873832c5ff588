// OUT = A (op) B texel by texel: the engine's accumulation by ping-pong passes on devices (or
// profiles) without float32 blending. MODE 0 adds, 1 keeps the larger, 2 the smaller value.
void main() {
    ivec2 g = OUT_grid();
    vec4 a = A_texel(g.x, g.y);
    vec4 b = B_texel(g.x, g.y);
#if MODE == 1
    OUT = max(a, b);
#elif MODE == 2
    OUT = min(a, b);
#else
    OUT = a + b;
#endif
}
