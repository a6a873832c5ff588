// Arg-min / arg-max reduction level, structure of arrays: values and indices are separate
// outputs (VAL, IDX), each lane of a texel an independent candidate; select-style updates
// (mix with a bvec) instead of branches. Ties go to the lower index, so the result equals
// numpy's argmin/argmax. A NaN candidate always wins (the host reports it as an error).
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
// increasing index order, so a strict comparison keeps the first of equal values; the index
// comparison is only needed while the lane still holds no candidate.
bvec4 better_in_scan(vec4 v, vec4 bv, vec4 bi) {
#if MODE_MAX
    vec4 strict = vec4(greaterThan(v, bv));
#else
    vec4 strict = vec4(lessThan(v, bv));
#endif
    return bvec4(strict + vec4(equal(bi, vec4(NO_INDEX))) + vec4(isnan(v)));
}

bvec4 better(vec4 v, vec4 i, vec4 bv, vec4 bi) {
#if MODE_MAX
    vec4 strict = vec4(greaterThan(v, bv));
#else
    vec4 strict = vec4(lessThan(v, bv));
#endif
    vec4 tie = vec4(equal(v, bv)) * vec4(lessThan(i, bi));
    return bvec4(strict + tie + vec4(isnan(v)));
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
    vec4 bv = vec4(worst_value());
    vec4 bi = vec4(NO_INDEX);
#if DUAL
    vec4 bv2 = vec4(worst_value());
    vec4 bi2 = vec4(NO_INDEX);
#endif
    int W = SRC_TEX_W;
    int t = f;
    ivec2 p = ivec2(f % W, f / W);
    ivec2 dp = ivec2(stride % W, stride / W);
    // Texels are taken in batches of FETCH_BATCH: first every candidate of the batch is
    // fetched (independent reads, which the compiler may keep in flight together; past the
    // source's end a step re-reads the fragment's first texel and is masked), then they are
    // compared in order (H200, arg-max over 16M: 68% of the copy bound with batches of 4, 64%
    // with 1; batches of 16 were slower).
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
            float on = float(live[b]);
#if SCAN_STRICT
            bvec4 take = better_in_scan(cv[b], bv, bi);
#else
            bvec4 take = better(cv[b], ci[b], bv, bi);
#endif
            take = bvec4(vec4(take) * on);
            bv = mix(bv, cv[b], take);
            bi = mix(bi, ci[b], take);
#if DUAL
#if SCAN_STRICT
            take = better_in_scan(cv2[b], bv2, bi2);
#else
            take = better(cv2[b], ci2[b], bv2, bi2);
#endif
            take = bvec4(vec4(take) * on);
            bv2 = mix(bv2, cv2[b], take);
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
        bv = bv2;
        bi = bi2;
    }
#endif
    // fold the four lanes: (x, y) and (z, w), then the two winners
    bvec4 t1 = better(bv.yyww, bi.yyww, bv.xxzz, bi.xxzz);
    vec2 v2 = mix(bv.xz, bv.yw, t1.xz);
    vec2 i2 = mix(bi.xz, bi.yw, t1.xz);
    bool t2 = better(vec4(v2.y), vec4(i2.y), vec4(v2.x), vec4(i2.x)).x;
    float v = t2 ? v2.y : v2.x;
    float i = t2 ? i2.y : i2.x;
    float extra = 0.0;
#if PAYLOAD
    extra = P0_get(int(min(i, float(P0_ROWS * P0_COLS - 1))));
#endif
    RES = vec4(v, i, extra, 0.0);
#else
    VAL = bv;
    IDX = bi;
#if DUAL
    VAL2 = bv2;
    IDX2 = bi2;
#endif
#endif
}
