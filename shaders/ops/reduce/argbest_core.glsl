// Arg-min / arg-max reduction level, structure of arrays: values and indices are separate
// outputs (VAL, IDX), each lane of a texel an independent candidate; select-style updates
// instead of branches. Values are ranked by their ordered bits (arg_keys in argbest_defs.glsl:
// subnormals, +-0, +-inf and NaN as numpy orders them, never flushed) and ties go to the lower
// index, so the result equals numpy's argmin/argmax; the first NaN wins. The winner's value
// travels as its bits (integer blends), so the value written is the element's exact bits.
//
// The including shader defines, before including this file,
//   #define SRC_TEX_W  the texture width of the source arrays the level walks (one layout)
//   void candidates(int t, ivec2 p, out vec4 v, out vec4 idx)
// giving source texel t's four candidate values and indices (worst_value() / NO_INDEX for lanes
// that are not eligible); p is texel t's texture coordinate, stepped along with t without
// divisions (texel t of any layout, wrapped or not, sits at (t % TEX_W, t / TEX_W)). With
// TEXEL_INDEX 1 the indices are texel numbers float(t) (row-order sources, where a lane's
// candidates come in flat-index order) and the includer also defines
//   ivec4 flat_of_texel(int t)
// which turns the winners' texel numbers into flat indices once, at the end of the level.
// Defines: FANIN, MODE_MAX, FINAL (write the winner to RES at grid column `slot` as
// (value, index, payload, 0)), PAYLOAD (RES.z = P0_get(index)).
// DUAL: a second, independent reduction rides along in the same passes (the includer also
// defines candidates2(); outputs VAL2, IDX2; the final pass writes its winner to slot + 1).
// Uniforms (declared by the kernel): stride (output texels of this level), slot (FINAL: grid
// column of the result texel), n_src (source texels).
#include "argbest_defs.glsl"
// FETCH_BATCH: texels fetched before they are compared (0: 4 where FANIN allows, else 1)
#if !defined(FETCH_BATCH) || FETCH_BATCH == 0
#undef FETCH_BATCH
#if (FANIN % 4) == 0
#define FETCH_BATCH 4
#else
#define FETCH_BATCH 1
#endif
#endif
#ifndef TEXEL_INDEX
#define TEXEL_INDEX 0
#endif

// SCAN_STRICT (first level over a row-order source): each lane meets its candidates in
// increasing index order, so a strict comparison keeps the first of equal keys; the index
// comparison is only needed while the lane still holds no candidate.
// Keys: larger is better (arg_keys); bk, bi: the key and index held.
bvec4 better_in_scan(ivec4 k, ivec4 bk, vec4 bi) {
    return bvec4(uvec4(greaterThan(k, bk)) | uvec4(equal(bi, vec4(NO_INDEX))));
}

bvec4 better(ivec4 k, vec4 i, ivec4 bk, vec4 bi) {
    return bvec4(uvec4(greaterThan(k, bk)) | (uvec4(equal(k, bk)) & uvec4(lessThan(i, bi))));
}

#if TEXEL_INDEX
vec4 texel_to_flat(vec4 bt) {
    vec4 r = vec4(NO_INDEX);
    if (bt.x < NO_INDEX) r.x = float(flat_of_texel(int(bt.x)).x);
    if (bt.y < NO_INDEX) r.y = float(flat_of_texel(int(bt.y)).y);
    if (bt.z < NO_INDEX) r.z = float(flat_of_texel(int(bt.z)).z);
    if (bt.w < NO_INDEX) r.w = float(flat_of_texel(int(bt.w)).w);
    return r;
}
#endif

void main() {
#if FINAL
    int f = RES_grid().y - slot;
#else
    int f = VAL_grid().y;
#endif
#if FINAL && DUAL
    int which = f;  // the two result texels: 0 = first reduction, 1 = second
    f = 0;
#endif
    // held per lane: the value's bits (bb), its key (bk), its index (bi)
    uvec4 bb = uvec4(WORST_BITS);
    ivec4 bk = arg_keys(vec4(worst_value()));
    vec4 bi = vec4(NO_INDEX);
#if DUAL
    uvec4 bb2 = bb;
    ivec4 bk2 = bk;
    vec4 bi2 = vec4(NO_INDEX);
#endif
    int W = SRC_TEX_W;
    int t = f;
    ivec2 p = ivec2(f % W, f / W);
    ivec2 dp = ivec2(stride % W, stride / W);
    // Texels are taken in batches of FETCH_BATCH: first every candidate of the batch is
    // fetched (independent reads, which the compiler may keep in flight together; past the
    // source's end a step re-reads the fragment's first texel and is masked), then they are
    // compared in order (batches of 4 run closest to the copy bound on a GPU; larger batches
    // are slower, see docs/performance.md).
    ivec2 p0 = p;
    for (int k = 0; k < FANIN; k += FETCH_BATCH) {
        if (t >= n_src) break;
        vec4 cv[FETCH_BATCH];
        vec4 ci[FETCH_BATCH];
        bool live[FETCH_BATCH];
#if DUAL
        vec4 cv2[FETCH_BATCH];
        vec4 ci2[FETCH_BATCH];
#endif
        for (int b = 0; b < FETCH_BATCH; ++b) {
            live[b] = t < n_src;
            int tk = live[b] ? t : f;
            ivec2 pk = live[b] ? p : p0;
            candidates(tk, pk, cv[b], ci[b]);
#if DUAL
            candidates2(tk, pk, cv2[b], ci2[b]);
#endif
            t += stride;
            p += dp;
            int carry = int(p.x >= W);
            p += ivec2(-W * carry, carry);
        }
        for (int b = 0; b < FETCH_BATCH; ++b) {
            uvec4 on = uvec4(live[b]);
            uvec4 cb = floatBitsToUint(cv[b]);
            ivec4 ck = arg_keys(cv[b]);
#if SCAN_STRICT
            bvec4 take = bvec4(uvec4(better_in_scan(ck, bk, bi)) & on);
#else
            bvec4 take = bvec4(uvec4(better(ck, ci[b], bk, bi)) & on);
#endif
            bb = sel_bits(bb, cb, take);
            bk = sel_bits(bk, ck, take);
            bi = mix(bi, ci[b], take);
#if DUAL
            cb = floatBitsToUint(cv2[b]);
            ck = arg_keys(cv2[b]);
#if SCAN_STRICT
            take = bvec4(uvec4(better_in_scan(ck, bk2, bi2)) & on);
#else
            take = bvec4(uvec4(better(ck, ci2[b], bk2, bi2)) & on);
#endif
            bb2 = sel_bits(bb2, cb, take);
            bk2 = sel_bits(bk2, ck, take);
            bi2 = mix(bi2, ci2[b], take);
#endif
        }
    }
#if TEXEL_INDEX
    bi = texel_to_flat(bi);
#if DUAL
    bi2 = texel_to_flat(bi2);
#endif
#endif
#if FINAL
#if DUAL
    if (which == 1) {
        bb = bb2;
        bk = bk2;
        bi = bi2;
    }
#endif
    // fold the four lanes: (x, y) and (z, w), then the two winners
    bvec4 t1 = better(bk.yyww, bi.yyww, bk.xxzz, bi.xxzz);
    uvec4 bb1 = sel_bits(bb.xxzz, bb.yyww, t1);
    ivec4 bk1 = sel_bits(bk.xxzz, bk.yyww, t1);
    vec4 bi1 = mix(bi.xxzz, bi.yyww, t1);
    bool t2 = better(bk1.zzzz, bi1.zzzz, bk1.xxxx, bi1.xxxx).x;
    uint v = t2 ? bb1.z : bb1.x;
    float i = t2 ? bi1.z : bi1.x;
    float extra = 0.0;
#if PAYLOAD
    extra = P0_get(int(min(i, float(P0_ROWS * P0_COLS - 1))));
#endif
    RES = vec4(uintBitsToFloat(v), i, extra, 0.0);
#else
    VAL = uintBitsToFloat(bb);
    IDX = bi;
#if DUAL
    VAL2 = uintBitsToFloat(bb2);
    IDX2 = bi2;
#endif
#endif
}
