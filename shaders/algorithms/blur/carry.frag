// Incoming states of the top-level blocks: causal state just before the block, w(s-1), and
// anticausal state just after it, v(e), including the border's contribution:
//   reflect  (half-sample symmetric, period 2N):
//            w(-1) = (Vt + p^N Ft) / (1 - p^2N),  v(N) = (Ft + p^N Vt) / (1 - p^2N)
//   nearest: w(-1) = x(0) / (1 - p),               v(N) = x(N-1) / (1 - p)
//   constant (zero): w(-1) = v(N) = 0
// where Ft, Vt are the zero-start causal/anticausal states over the whole line. The states are
// those of x - c (c the line's offset, iir.glsl): the border values are taken less c, so the
// constant border's zero becomes -c, as "nearest" with the value -c.
#include "iir.glsl"

// Step st of line l (the first or the last, for the border "nearest").
T step_value(int l, int st) {
#if SEQ
    return X_at(l, st);  // SEQ: line l is row l of the packed grayscale image X
#else
    return src_texel(l, st);
#endif
}

void main() {
    ivec2 g = FRAG_GRID();
    int l = line_of(g);
    int b = blk_of(g);
    T off = line_offset(l);  // the line's offset c
    CL w[2]; CL v[2]; CL wpre[2]; CL vpost[2];
    for (int k = 0; k < 2; ++k) { w[k] = czero(); v[k] = czero(); wpre[k] = czero(); vpost[k] = czero(); }
    for (int c = 0; c < NB; ++c) {
        if (c == b) { wpre[0] = w[0]; wpre[1] = w[1]; }
        int len = min(CSTEPS, NSTEPS - c * CSTEPS);
        CL cw[2];
        LOAD_W(S0_texel, S1_texel, S2_texel, S3_texel, l, c, cw)
        for (int k = 0; k < 2; ++k) w[k] = cadd(cmul(cpow(k, len), w[k]), cw[k]);
    }
    for (int c = NB - 1; c >= 0; --c) {
        if (c == b) { vpost[0] = v[0]; vpost[1] = v[1]; }
        int len = min(CSTEPS, NSTEPS - c * CSTEPS);
        CL cv[2];
        LOAD_W(S4_texel, S5_texel, S6_texel, S7_texel, l, c, cv)
        for (int k = 0; k < 2; ++k) v[k] = cadd(cmul(cpow(k, len), v[k]), cv[k]);
    }
    int s = b * CSTEPS;
    int e = min(s + CSTEPS, NSTEPS);
    CL win[2]; CL vin[2];
    for (int k = 0; k < 2; ++k) {
#if BORDER == 0
        vec2 pn = cpow(k, NSTEPS);
        vec2 d = k == 0 ? DREFL.xy : DREFL.zw;
        CL wl = cmul(d, cadd(v[k], cmul(pn, w[k])));
        CL vr = cmul(d, cadd(w[k], cmul(pn, v[k])));
#elif BORDER == 1
        vec2 cn = k == 0 ? CNEAR.xy : CNEAR.zw;
        CL wl = cscale(cn, step_value(l, 0) - off);
        CL vr = cscale(cn, step_value(l, NSTEPS - 1) - off);
#else
        vec2 cn = k == 0 ? CNEAR.xy : CNEAR.zw;
        CL wl = cscale(cn, -off);
        CL vr = wl;
#endif
        win[k] = cadd(cmul(cpow(k, s), wl), wpre[k]);
        vin[k] = cadd(cmul(cpow(k, NSTEPS - e), vr), vpost[k]);
    }
    STORE8(win, vin)
}
