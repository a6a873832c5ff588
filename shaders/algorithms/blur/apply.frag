// Output of NPL (8 or 4) consecutive texels t0 .. t0+NPL-1 of a line, one per render target
// (OUTi holds texel t0+i). The level-1 block b1 (texels s1 .. e1-1) holds BLK / NPL chunks of
// NPL texels; this fragment's texels are chunk h. I0..I7 hold the block's incoming states: the
// causal one just before it, w(s1-1), and the anticausal one just after it, v(e1).
//
// The walk carries them to the fragment's chunk: the h chunks before it go through the causal
// recursion (forward), the chunks after it through the anticausal one (backward from the block's
// end), both from a zero state s = p s + x, then w = p^(steps before) w + s, and the same for v.
// Every fragment runs the same BLK / NPL - 1 chunks in one loop (one recursion state, switched
// from causal to anticausal at chunk h), so neighbouring fragments, which sit at different h,
// follow one path through the loop. Texels past the line's end and padding lanes read as zero:
// they come first on the backward path, where a zero state stays zero. The recursion runs on
// x - c (c the line's offset, iir.glsl; padding stays zero) and c is added to the outputs.
#include "iir.glsl"

#if SEQ
float xval(vec4 tx, int q) { return tx[q]; }
#else
vec4 xval(vec4 tx, int q) { return tx; }
#endif
// 2 Re(alpha_k s) from a2 = 2 alpha_k (cout2 with the factor 2 taken once per fragment)
T cre(vec2 a2, CL s) { return a2.x * s.re - a2.y * s.im; }

void main() {
    ivec2 g = OUT0_grid();
    int l = line_of(g);
    int t0 = blk_of(g) * NPL;
    int b1 = t0 / BLK;
    int s1 = b1 * BLK;
    int h = (t0 - s1) / NPL;
    bvec4 last = src_live(l, NPOS - 1);
    vec4 off = vec4(line_offset(l));  // the line's offset c
    CL w[2]; CL v[2];
    LOAD_W(I0_texel, I1_texel, I2_texel, I3_texel, l, b1, w)
    LOAD_W(I4_texel, I5_texel, I6_texel, I7_texel, l, b1, v)

    // the walk: chunks c < h forward (causal), then the rest backward from the block's end
    CL s[2]; CL sc[2];
    for (int k = 0; k < 2; ++k) { s[k] = czero(); sc[k] = czero(); }
    for (int c = 0; c < BLK / NPL - 1; ++c) {
        bool back = c < h;
        if (c == h) { sc[0] = s[0]; sc[1] = s[1]; s[0] = czero(); s[1] = czero(); }
        int base = back ? s1 + c * NPL : s1 + BLK - 1 - (c - h) * NPL;
        int dir = back ? 1 : -1;
        for (int i = 0; i < NPL; ++i) {
            int t = base + dir * i;
            vec4 tx = mix(vec4(0.0), src_texel(l, min(t, NPOS - 1)) - off, live_of(t, last));
#if SEQ
            if (!back) tx = tx.wzyx;  // backward through the texel's steps too
#endif
            for (int q = 0; q < SPT; ++q) {
                T x = xval(tx, q);
                s[0] = cstep(pole(0), s[0], x);
                s[1] = cstep(pole(1), s[1], x);
            }
        }
    }
    if (h == BLK / NPL - 1) { sc[0] = s[0]; sc[1] = s[1]; s[0] = czero(); s[1] = czero(); }
    // steps walked: all of the chunks before (no padding there), and after the chunk those up
    // to the block's end or the line's end
    int t1 = t0 + NPL;
    int nb = src_step(l, t0) - src_step(l, s1);
    int na = t1 < NPOS ? (s1 + BLK < NPOS ? src_step(l, s1 + BLK) : NSTEPS) - src_step(l, t1) : 0;
    for (int k = 0; k < 2; ++k) {
        w[k] = cadd(cmul(cpow(k, nb), w[k]), sc[k]);
        v[k] = cadd(cmul(cpow(k, na), v[k]), s[k]);
    }

    // the NPL texels: causal pass forward, anticausal pass backward (skipping padding lanes;
    // the causal outputs past the line's end are cleared at the end)
    vec4 a2 = 2.0 * ALPHA;
    vec4 xs[NPL];
    bvec4 live[NPL];
    vec4 y[NPL];
    for (int i = 0; i < NPL; ++i) {
        live[i] = live_of(t0 + i, last);
        xs[i] = mix(vec4(0.0), src_texel(l, min(t0 + i, NPOS - 1)) - off, live[i]);
    }
    for (int i = 0; i < NPL; ++i) {
        for (int q = 0; q < SPT; ++q) {
            T x = xval(xs[i], q);
            w[0] = cstep(pole(0), w[0], x);
            w[1] = cstep(pole(1), w[1], x);
            T yy = cre(a2.xy, w[0]) + cre(a2.zw, w[1]) - H0 * x;
#if SEQ
            y[i][q] = yy;
#else
            y[i] = yy;
#endif
        }
    }
    for (int i = NPL - 1; i >= 0; --i) {
        for (int q = SPT - 1; q >= 0; --q) {
            if (live[i][q]) {
                T x = xval(xs[i], q);
                v[0] = cstep(pole(0), v[0], x);
                v[1] = cstep(pole(1), v[1], x);
                T yy = cre(a2.xy, v[0]) + cre(a2.zw, v[1]);
#if SEQ
                y[i][q] += yy;
#else
                y[i] += yy;
#endif
            }
        }
        y[i] = mix(vec4(0.0), y[i] + off, live[i]);
    }
    OUT0 = y[0]; OUT1 = y[1]; OUT2 = y[2]; OUT3 = y[3];
#if NPL == 8
    OUT4 = y[4]; OUT5 = y[5]; OUT6 = y[6]; OUT7 = y[7];
#endif
}
