// Summaries of a coarser level: block B covers children B*G .. B*G+G-1 of CSTEPS steps each
// (the last one shorter where the line ends). Causal parts chain forward, anticausal backward.
#include "iir.glsl"

void main() {
    ivec2 g = FRAG_GRID();
    int l = line_of(g);
    int b = blk_of(g);
    CL w[2]; CL v[2]; vec2 pw[2];
    for (int k = 0; k < 2; ++k) { w[k] = czero(); v[k] = czero(); pw[k] = vec2(1.0, 0.0); }
    for (int i = 0; i < G; ++i) {
        int c = b * G + i;
        if (c >= NB_CHILD) break;
        int len = min(CSTEPS, NSTEPS - c * CSTEPS);
        CL cw[2]; CL cv[2];
        LOAD_W(S0_texel, S1_texel, S2_texel, S3_texel, l, c, cw)
        LOAD_W(S4_texel, S5_texel, S6_texel, S7_texel, l, c, cv)
        for (int k = 0; k < 2; ++k) {
            vec2 pl = cpow(k, len);
            w[k] = cadd(cmul(pl, w[k]), cw[k]);
            v[k] = cadd(v[k], cmul(pw[k], cv[k]));
            pw[k] = cmul2(pw[k], pl);
        }
    }
    STORE8(w, v)
}
