// After the tile sweeps (tile.frag): point i's sums sit in the n_part tile texels (f, c),
// f = i / K_PTS, target G<a> (a = i - K_PTS * f) and lane a of S, or, with S_LANE, the w
// lane of G<a>; summed here. One texel per point again (positions layout):
//   OUT0 = y_i + mu * g_i (eq. 3), OUT1 = g_i (the direction), OUT2 = (s_i, 0, 0, 0).
void main() {
    if (!OUT0_live(0)) {
        OUT0 = vec4(0.0); OUT1 = vec4(0.0); OUT2 = vec4(0.0);
        return;
    }
    int i = OUT0_pos(0).x;
    int f = i / K_PTS;
    int a = i - K_PTS * f;
    vec4 g = vec4(0.0);
    float s = 0.0;
    for (int part = 0; part < n_part; ++part) {
        vec4 v = G0_texel(f, part);
#if K_PTS > 1
        if (a == 1) v = G1_texel(f, part);
#endif
#if K_PTS > 2
        if (a == 2) v = G2_texel(f, part);
#endif
#if K_PTS > 3
        if (a == 3) v = G3_texel(f, part);
#endif
#if K_PTS > 4
        if (a == 4) v = G4_texel(f, part);
#endif
#if K_PTS > 5
        if (a == 5) v = G5_texel(f, part);
#endif
#if K_PTS > 6
        if (a == 6) v = G6_texel(f, part);
#endif
#if K_PTS > 7
        if (a == 7) v = G7_texel(f, part);
#endif
#if S_LANE
        g += vec4(v.xyz, 0.0);
        s += v.w;
#else
        g += v;
        s += S_texel(f, part)[a];
#endif
    }
    OUT0 = Y_texel(i, 0) + mu * g;
    OUT1 = g;
    OUT2 = vec4(s, 0.0, 0.0, 0.0);
}
