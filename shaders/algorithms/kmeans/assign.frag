// Assignment step of Lloyd's algorithm. Output texel gj of the packed per-point vectors holds
// points 4 gj .. 4 gj + 3 (one per lane): LAB gets the index of the nearest centroid among
// [c_lo, c_hi), DIST its squared distance.
// Inputs: XC, the n x d points in column order, packed (texel (f, gj) holds feature f of the
// four points, so neighbouring fragments read neighbouring texels); C, the k x d centroids in
// row order, packed (texel (c, j4) holds features 4 j4 .. 4 j4 + 3 of centroid c).
// Distances are sum_f (x_f - c_f)^2 in float32: differences, never |x|^2 - 2 x.c + |c|^2,
// which cancels for points near a centroid.
// Ranking: by the distances' bits (arg_keys of the ops' arg-min, ops/reduce/argbest_defs.glsl:
// exact, subnormals included, no float comparison), ties to the lower centroid index, as
// numpy's argmin. MERGE: this pass continues the search of the passes before it, whose best
// distance and label it reads from PD and PL (a long loop over the centroids cut across
// passes, each within the device's loop cap).
// Padding lanes (past the last point) get label -1 and distance 0.
#define MODE_MAX 0
#include "ops/reduce/argbest_defs.glsl"

void add_feature(int f, int gj, float c, inout vec4 s) {
    if (f < C_COLS) {
        vec4 t = XC_texel(f, gj) - c;
        s += t * t;
    }
}

void main() {
    int gj = LAB_grid().y;
#if MERGE
    vec4 best = PD_texel(0, gj);
    vec4 label = PL_texel(0, gj);
#else
    vec4 best = vec4(worst_value());
    vec4 label = vec4(-1.0);
#endif
    ivec4 key = arg_keys(best);
    for (int c = c_lo; c < c_hi; ++c) {
        vec4 s = vec4(0.0);
        for (int j4 = 0; j4 < C_GRID_W; ++j4) {
            vec4 cv = C_texel(c, j4);
            int f = 4 * j4;
            add_feature(f, gj, cv.x, s);
            add_feature(f + 1, gj, cv.y, s);
            add_feature(f + 2, gj, cv.z, s);
            add_feature(f + 3, gj, cv.w, s);
        }
        ivec4 k = arg_keys(s);
        bvec4 take = greaterThan(k, key);   // strictly better: the lower index keeps a tie
        best = uintBitsToFloat(sel_bits(floatBitsToUint(best), floatBitsToUint(s), take));
        key = sel_bits(key, k, take);
        label = mix(label, vec4(float(c)), take);
    }
    bvec4 live = LAB_lanes();
    LAB = mix(vec4(-1.0), label, live);
    DIST = mix(vec4(0.0), best, live);
}
