// The first pass of the bitonic sort: the merge levels of blocks 2, 4 and 8 at once.
// Each sequence (a row of the output, or the flattened array X when flatten != 0) is read from
// X, the array being sorted, in any layout. A fragment reads the 8 elements (two texels) of its
// aligned group, sorts each quad (levels 2 and 4, on registers), merges the two quads (level
// 8) only as far as its own texel needs, and writes its own lanes: groups of 8 sorted
// ascending where (column & 8) == 0, descending elsewhere (the bitonic order the next level
// merges), or the sorted sequence when it has at most 8 elements.
// Columns >= n_real are padding (see bitonic_common.glsl for the keys). FINAL = 0: writes the
// keys and indices of the work arrays; 1: this is the only pass, it writes the sorted values
// and indices. OUT_PACKED = 1: the outputs are packed in row order (a fragment computes its
// texel once); 0: any layout (each lane computes its own texel).
#include "bitonic_common.glsl"

// Quad t (columns 4t .. 4t+3) of sequence seq as keys and indices, sorted ascending when
// (t & 1) == 0, descending otherwise.
void sg_quad(int seq, int t, out vec4 k, out vec4 idx) {
    ivec4 key;
    for (int l = 0; l < 4; ++l) {
        // element l of the network's quad t (its own unit of 4 elements, sorted on registers);
        // X is read through its accessors, whatever its layout
        int c = (t << 2) + l;
        key[l] = c < n_real ? sg_key(flatten != 0 ? X_get(seq * n_real + c) : X_at(seq, c))
                            : SG_TOP;                                     // padding
        idx[l] = float(c);
    }
    k = intBitsToFloat(key);
    sg_stride1(k, idx, bvec2(true, false));                // level 2
    bool up = (t & 1) == 0;                                // level 4
    sg_stride2(k, idx, bvec2(up));
    sg_stride1(k, idx, bvec2(up));
}

// Texel t of sequence seq after level 8: keys and indices.
void sg_texel(int seq, int t, out vec4 k, out vec4 idx) {
    vec4 kb, ib;
    sg_quad(seq, t & ~1, k, idx);
    sg_quad(seq, t | 1, kb, ib);
    bool up = (t & 2) == 0;
    sg_keep(k, idx, kb, ib, ((t & 1) == 0) == up);        // stride 4: the texel pair
    sg_stride2(k, idx, bvec2(up));
    sg_stride1(k, idx, bvec2(up));
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
