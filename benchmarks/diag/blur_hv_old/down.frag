// Incoming states of the blocks of a finer level from those of their parents (I0..I7) and
// their siblings' summaries (S0..S7): chain forward from the parent's start, backward from
// its end.
#include "algorithms/blur/iir.glsl"

void main() {
    ivec2 g = FRAG_GRID();
    int l = line_of(g);
    int c = blk_of(g);
    int par = c / G;
    CL w[2]; CL v[2];
    LOAD_W(I0_texel, I1_texel, I2_texel, I3_texel, l, par, w)
    LOAD_W(I4_texel, I5_texel, I6_texel, I7_texel, l, par, v)
    for (int i = par * G; i < c; ++i) {
        int len = min(CSTEPS, NSTEPS - i * CSTEPS);
        CL cw[2];
        LOAD_W(S0_texel, S1_texel, S2_texel, S3_texel, l, i, cw)
        for (int k = 0; k < 2; ++k) w[k] = cadd(cmul(cpow(k, len), w[k]), cw[k]);
    }
    for (int i = min(par * G + G, NB_CHILD) - 1; i > c; --i) {
        int len = min(CSTEPS, NSTEPS - i * CSTEPS);
        CL cv[2];
        LOAD_W(S4_texel, S5_texel, S6_texel, S7_texel, l, i, cv)
        for (int k = 0; k < 2; ++k) v[k] = cadd(cmul(cpow(k, len), v[k]), cv[k]);
    }
    STORE8(w, v)
}
