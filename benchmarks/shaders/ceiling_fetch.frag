// Texel-fetch ceiling: FETCHES texel fetches per fragment from a small (cache-resident) input X,
// a 2-D texture or a texture buffer (the same accessor X_texel serves both), one vec4 add each
// into 4 independent sums. Neighbouring fragments read neighbouring texels (UNIFORM_ADDR 0), or
// every fragment reads the same texel at each step (UNIFORM_ADDR 1: a broadcast pattern).
#ifndef UNIFORM_ADDR
#define UNIFORM_ADDR 0
#endif
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
#if UNIFORM_ADDR
    p = ivec2(0);
#endif
    vec4 s0 = vec4(0.0), s1 = vec4(0.0), s2 = vec4(0.0), s3 = vec4(0.0);
    for (int i = 0; i < FETCHES; i += 4) {
        int gi = (p.y + i) % X_GRID_H;
        s0 += X_texel(gi, (p.x + i) % X_GRID_W);
        s1 += X_texel(gi, (p.x + i + 1) % X_GRID_W);
        s2 += X_texel(gi, (p.x + i + 2) % X_GRID_W);
        s3 += X_texel(gi, (p.x + i + 3) % X_GRID_W);
    }
    OUT = s0 + s1 + s2 + s3;
}
