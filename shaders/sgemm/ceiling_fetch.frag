// Texel-fetch ceiling: FETCHES texel fetches per fragment from a small (cache-resident) input X,
// a 2-D texture or a texture buffer (the same accessor X_texel serves both), one vec4 add each.
// Neighbouring fragments read neighbouring texels; each step moves to another grid row.
void main() {
    ivec2 p = ivec2(gl_FragCoord.xy);
    vec4 s = vec4(0.0);
    for (int i = 0; i < FETCHES; ++i) {
        s += X_texel((p.y + i) % X_GRID_H, (p.x + 3 * i) % X_GRID_W);
    }
    OUT = s;
}
