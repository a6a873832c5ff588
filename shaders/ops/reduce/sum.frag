// Sum reduction, one level. Output texel f adds the source texels t = f + k * stride
// (k < FANIN, t < X_N_TEXELS) of X's texel grid, lane by lane; padding lanes count as 0.
// Neighbouring fragments read neighbouring texels at every step k.
// FINAL: the single output texel (at grid column `slot`) gets the four lanes' total in .x.
uniform int stride;
uniform int slot;

void main() {
#ifdef FINAL
    int f = OUT_grid().y - slot;
#else
    int f = OUT_grid().y;
#endif
    vec4 acc = vec4(0.0);
    for (int k = 0; k < FANIN; ++k) {
        int t = f + k * stride;
        if (t < X_N_TEXELS) {
            ivec2 q = X_grid_of(t);
            bvec4 ok = greaterThanEqual(X_flat(q.x, q.y), ivec4(0));
            acc += mix(vec4(0.0), X_texel(q.x, q.y), ok);
        }
    }
#ifdef FINAL
    OUT = vec4((acc.x + acc.y) + (acc.z + acc.w), 0.0, 0.0, 0.0);
#else
    OUT = acc;
#endif
}
