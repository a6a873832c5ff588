// Several consecutive compare-exchange stages of one merge level of the bitonic sort in one
// pass, over the work arrays K (keys) and I (indices) of the previous pass (see
// bitonic_common.glsl for the keys, the order and where a sequence lies).
// The stages are those of texel strides GT/2 << lsh, ..., 1 << lsh (GT texels a group: the
// texels whose columns differ only in those bits), then, when lanes != 0, the strides 2 and 1
// inside a texel; merge direction: ascending where (column & block) == 0. A fragment reads
// its group, GT texels, and runs the stages on registers only as far as its own texel needs:
// each stage halves the texels it keeps (GT - 1 half compare-exchanges of four lanes in all),
// so nothing is computed that only another fragment's texel depends on.
// FINAL = 0: writes keys and indices (the next pass's K and I); 1: the last pass, it writes the
// sorted values and indices. OUT_PACKED = 1: outputs packed in row order (one texel a
// fragment); 0: any layout (each lane computes its texel).
#include "bitonic_common.glsl"

// Group texel a of sequence seq and its partner of the group's first stage, b: a keeps the
// smaller or the larger.
void sg_first(int seq, int a, bool want_min, out vec4 k, out vec4 idx) {
    ivec2 ca = sg_cell(seq, a), cb = sg_cell(seq, a + ((GT / 2) << lsh));
    k = K_texel(ca.x, ca.y);
    idx = I_texel(ca.x, ca.y);
    sg_keep(k, idx, K_texel(cb.x, cb.y), I_texel(cb.x, cb.y), want_min);
}

// Texel t of sequence seq after the pass's stages: keys and indices.
void sg_texel(int seq, int t, out vec4 k, out vec4 idx) {
    int p = (t >> lsh) & (GT - 1);             // the texel's place in its group
    int base = t - (p << lsh);
    bool up = ((t << 2) & block) == 0;
    vec4 wk[GT], wi[GT];
#if GT == 1
    ivec2 c = sg_cell(seq, t);
    wk[0] = K_texel(c.x, c.y);
    wi[0] = I_texel(c.x, c.y);
#else
    // the kept texels of a stage go to wk/wi[0 .. s-1]: w[j] and w[j + s] are a pair
    bool w = ((p & (GT / 2)) == 0) == up;
#define SG_FIRST(j) sg_first(seq, base + ((j) << lsh), w, wk[j], wi[j]);
#define SG_KEEP(j, s) sg_keep(wk[j], wi[j], wk[(j) + (s)], wi[(j) + (s)], w);
    SG_FIRST(0)
#if GT > 2
    SG_FIRST(1)
#endif
#if GT > 4
    SG_FIRST(2) SG_FIRST(3)
#endif
#if GT > 8
    SG_FIRST(4) SG_FIRST(5) SG_FIRST(6) SG_FIRST(7)
#endif
#if GT > 16
    SG_FIRST(8) SG_FIRST(9) SG_FIRST(10) SG_FIRST(11)
    SG_FIRST(12) SG_FIRST(13) SG_FIRST(14) SG_FIRST(15)
#endif
#if GT > 16
    w = ((p & 8) == 0) == up;
    SG_KEEP(0, 8) SG_KEEP(1, 8) SG_KEEP(2, 8) SG_KEEP(3, 8)
    SG_KEEP(4, 8) SG_KEEP(5, 8) SG_KEEP(6, 8) SG_KEEP(7, 8)
#endif
#if GT > 8
    w = ((p & 4) == 0) == up;
    SG_KEEP(0, 4) SG_KEEP(1, 4) SG_KEEP(2, 4) SG_KEEP(3, 4)
#endif
#if GT > 4
    w = ((p & 2) == 0) == up;
    SG_KEEP(0, 2) SG_KEEP(1, 2)
#endif
#if GT > 2
    w = ((p & 1) == 0) == up;
    SG_KEEP(0, 1)
#endif
#endif
    k = wk[0];
    idx = wi[0];
    if (lanes != 0) {
        sg_stride2(k, idx, bvec2(up));
        sg_stride1(k, idx, bvec2(up));
    }
}

void main() {
    vec4 k, idx;
    int seq, t;
#if OUT_PACKED
    if (!OUT0_inside()) {
        OUT0 = vec4(0.0);
        OUT1 = vec4(0.0);
        return;
    }
    ivec2 g = OUT0_grid();
#if FINAL
    seq = g.x;                      // the outputs' rows are the sequences
    t = g.y;
#else
    sg_place(g, seq, t);
#endif
    sg_texel(seq, t, k, idx);
    bvec4 live = OUT0_lanes();
#if FINAL
    for (int l = 0; l < 4; ++l)
        k[l] = live[l] ? sg_value(seq, k[l], idx[l]) : 0.0;
#endif
    OUT0 = mix(vec4(0.0), k, live);
    OUT1 = mix(vec4(0.0), idx, live);
#else
    vec4 outs = vec4(0.0), idxs = vec4(0.0);
    for (int l = 0; l < 4; ++l) {
        if (!OUT0_live(l)) continue;
        ivec2 p = OUT0_pos(l);      // (sequence, column)
        sg_texel(p.x, p.y >> 2, k, idx);
        idxs[l] = idx[p.y & 3];
        outs[l] = k[p.y & 3];
#if FINAL
        outs[l] = sg_value(p.x, outs[l], idxs[l]);
#endif
    }
    OUT0 = outs;
    OUT1 = idxs;
#endif
}
