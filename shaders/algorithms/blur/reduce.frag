// Level-1 block summaries of the source: the zero-start causal state at the block's last step,
//   w_k = sum_j p_k^(e-1-j) x(j),
// and the zero-start anticausal state at its first step,
//   v_k = sum_j p_k^(j-s) x(j),
// for each block of C1 texels of each line (the padding past the line's end counts as absent),
// of x - c with c the line's offset (iir.glsl).
#include "iir.glsl"

void main() {
    ivec2 g = FRAG_GRID();
    int l = line_of(g);
    int t0 = blk_of(g) * BLK;
    T off = line_offset(l);  // the line's offset c
#if SEQ
    bvec4 last = src_live(l, NPOS - 1);  // only the line's last texel can hold padding lanes
#endif
    CL w[2]; CL v[2]; vec2 pw[2];
    for (int k = 0; k < 2; ++k) { w[k] = czero(); v[k] = czero(); pw[k] = vec2(1.0, 0.0); }
    for (int t = 0; t < BLK; ++t) {
        int pos = t0 + t;
        if (pos >= NPOS) break;
#if SEQ
        vec4 tx = src_texel(l, pos);
        bvec4 live = live_of(pos, last);
        for (int q = 0; q < 4; ++q) {
            if (live[q]) {
                float x = tx[q] - off;
                for (int k = 0; k < 2; ++k) {
                    w[k] = cstep(pole(k), w[k], x);
                    v[k] = cadd(v[k], cscale(pw[k], x));
                    pw[k] = cmul2(pw[k], pole(k));
                }
            }
        }
#else
        vec4 tx = src_texel(l, pos) - off;
        for (int k = 0; k < 2; ++k) {
            w[k] = cstep(pole(k), w[k], tx);
            v[k] = cadd(v[k], cscale(pw[k], tx));
            pw[k] = cmul2(pw[k], pole(k));
        }
#endif
    }
    STORE8(w, v)
}
