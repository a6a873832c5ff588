// Output of NPL (8 or 4) consecutive texels t0 .. t0+NPL-1 of a line, one per render target
// (OUTi holds texel t0+i). The incoming states of the enclosing level-1 block (I0..I7) are
// carried to those texels by walking the rest of that block with running powers of the poles.
#include "algorithms/blur/iir.glsl"

#if SEQ
float xval(vec4 tx, int q) { return tx[q]; }
#else
vec4 xval(vec4 tx, int q) { return tx; }
#endif

void main() {
    ivec2 g = OUT0_grid();
    int l = line_of(g);
    int t0 = blk_of(g) * NPL;
    int b1 = t0 / BLK;
    int s1 = b1 * BLK;
    int e1 = min(s1 + BLK, NPOS);
    CL w[2]; CL v[2];
    LOAD_W(I0_texel, I1_texel, I2_texel, I3_texel, l, b1, w)
    LOAD_W(I4_texel, I5_texel, I6_texel, I7_texel, l, b1, v)

    // causal state just before t0: walk back over s1 .. t0-1
    CL acc[2]; vec2 pw[2];
    for (int k = 0; k < 2; ++k) { acc[k] = czero(); pw[k] = vec2(1.0, 0.0); }
    for (int i = 1; i <= BLK - NPL; ++i) {
        int t = t0 - i;
        if (t < s1) break;
        vec4 tx = src_texel(l, t);
        for (int q = SPT - 1; q >= 0; --q) {
            for (int k = 0; k < 2; ++k) {
                acc[k] = cadd(acc[k], cscale(pw[k], xval(tx, q)));
                pw[k] = cmul2(pw[k], pole(k));
            }
        }
    }
    for (int k = 0; k < 2; ++k) w[k] = cadd(cmul(pw[k], w[k]), acc[k]);

    // anticausal state just after t0+NPL-1: walk forward over t0+NPL .. e1-1
    for (int k = 0; k < 2; ++k) { acc[k] = czero(); pw[k] = vec2(1.0, 0.0); }
    for (int i = NPL; i < BLK; ++i) {
        int t = t0 + i;
        if (t >= e1) break;
        vec4 tx = src_texel(l, t);
        bvec4 live = src_live(l, t);
        for (int q = 0; q < SPT; ++q) {
            if (live[q]) {
                for (int k = 0; k < 2; ++k) {
                    acc[k] = cadd(acc[k], cscale(pw[k], xval(tx, q)));
                    pw[k] = cmul2(pw[k], pole(k));
                }
            }
        }
    }
    for (int k = 0; k < 2; ++k) v[k] = cadd(cmul(pw[k], v[k]), acc[k]);

    // the NPL texels: causal pass forward, anticausal pass backward
    vec4 xs[NPL];
    bvec4 live[NPL];
    vec4 y[NPL];
    for (int i = 0; i < NPL; ++i) {
        xs[i] = t0 + i < NPOS ? src_texel(l, t0 + i) : vec4(0.0);
        live[i] = src_live(l, t0 + i);
        y[i] = vec4(0.0);
    }
    for (int i = 0; i < NPL; ++i) {
        for (int q = 0; q < SPT; ++q) {
            if (live[i][q]) {
                T x = xval(xs[i], q);
                w[0] = cstep(pole(0), w[0], x);
                w[1] = cstep(pole(1), w[1], x);
                T yy = cout2(alpha(0), w[0]) + cout2(alpha(1), w[1]) - H0 * x;
#if SEQ
                y[i][q] = yy;
#else
                y[i] = yy;
#endif
            }
        }
    }
    for (int i = NPL - 1; i >= 0; --i) {
        for (int q = SPT - 1; q >= 0; --q) {
            if (live[i][q]) {
                T x = xval(xs[i], q);
                v[0] = cstep(pole(0), v[0], x);
                v[1] = cstep(pole(1), v[1], x);
                T yy = cout2(alpha(0), v[0]) + cout2(alpha(1), v[1]);
#if SEQ
                y[i][q] += yy;
#else
                y[i] += yy;
#endif
            }
        }
    }
    OUT0 = y[0]; OUT1 = y[1]; OUT2 = y[2]; OUT3 = y[3];
#if NPL == 8
    OUT4 = y[4]; OUT5 = y[5]; OUT6 = y[6]; OUT7 = y[7];
#endif
}
