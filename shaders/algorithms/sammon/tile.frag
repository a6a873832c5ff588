// One Sammon gather over the points blk0 + [blk_begin, blk_end) of the j sweep for a TILE of
// points: output texel (f, c) owns K_PTS points i_a = K_PTS * f + a (a = 0 .. K_PTS-1) and
// part c of n_part of the range (whole blocks; FINISH sums the parts: enough fragments to
// fill a GPU at any N), and sweeps the points j JB at a time, so every texel of X fetched for
// a point j serves K_PTS pairs and every texel fetched for a point i serves JB (a register
// tile, as in SGEMM): per coordinate texel K_PTS + JB fetches for K_PTS x JB pairs. The points
// i are handled as NQ quads of four (vec4 lanes): quad q holds i_{4q} .. i_{4q+3}; lanes
// a >= K_PTS are computed and dropped.
//
// X is the source blocked by points (sammon.blocked_source): row r of the packed row-major
// matrix holds points r * pts_row .. r * pts_row + pts_row - 1, pt_texels texels (4
// coordinates each, zero-padded) per point, so that X rarely wraps. With IL = 0 a point's
// texels are consecutive; with IL = 1 the JB points of each block are interleaved (texel t of
// the block's point B at t * JB + B of the block's run of JB * pt_texels texels), so a whole
// block (or a tile of points i, K_PTS dividing JB) is addressed from one base texel: no
// per-point base registers. Points past N are zero texels of the padding (masked below).
// NRM holds |x_p|^2 (X is centred on the host: the norms are small).
//
// Distances: d2 = |x_i|^2 + |x_j|^2 - 2 x_i . x_j (one multiply-add per coordinate and pair,
// half the work of (x_j - x_i)^2). Where that subtraction could cancel, i.e. some pair of the
// tile has d2 <= SAFE * (|x_i|^2 + |x_j|^2) (near or duplicate points), the whole tile is
// recomputed exactly as sum (x_j - x_i)^2: duplicates give dn == 0 exactly and are skipped.
// The exact loop is budgeted in the loop cap as if every block took it.
//
// Defines: K_PTS (1..8 points i), JB (8, 16 or 32 points j per block), S_LANE (0: the stress
// terms go to target S, lane a; 1: to the w lane of target G<a>, free when the positions
// have at most 3 coordinates (their w lane is 0): K_PTS targets in all), UNROLL (1 or 2:
// coordinate texels per loop step; pt_texels is then a multiple of UNROLL), IL (0 or 1, above).
//
// Outputs (summed over passes by additive blending or by the engine's ping-pong accumulation):
//   G<a> = g_{i_a} = sum_{j != i, dn > 0} (dn - dm) / (dn * max(dm, dm_floor)) * (y_i - y_j)
//   s_{i_a} = sum_{j != i, dn > 0} (dn - dm)^2 / dn          (eq. 1 row terms; S lane a, or
//   G<a>.w with S_LANE)
// FINISH (finish.frag) turns them into the next positions (eq. 3), G and S per point.

const float SAFE = 0.25;

#if K_PTS > 4
#define NQ 2
#else
#define NQ 1
#endif

// Unrolled over the JB points of a block (constant indices: registers, no loop).
#define EACH8(OP, o) OP(o) OP(o + 1) OP(o + 2) OP(o + 3) OP(o + 4) OP(o + 5) OP(o + 6) OP(o + 7)
#if JB == 32
#define EACH_B(OP) EACH8(OP, 0) EACH8(OP, 8) EACH8(OP, 16) EACH8(OP, 24)
#elif JB == 16
#define EACH_B(OP) EACH8(OP, 0) EACH8(OP, 8)
#else
#define EACH_B(OP) EACH8(OP, 0)
#endif

#if IL
// Grid texel (row, column) of texel 0 of point p; texel t is JB columns further.
ivec2 pt_base(int p) {
    int r = p / pts_row;
    int q = p - r * pts_row;
    int b = q / JB;
    return ivec2(r, b * JB * pt_texels + (q - b * JB));
}

vec4 pt_texel(ivec2 base, int t) {
    return X_texel(base.x, base.y + t * JB);
}
// base of point j0 + B (j0 a multiple of JB) and of tile point i_a (K_PTS divides JB)
#define QB(B) (qb0 + ivec2(0, B))
#define BI(a) (bi + ivec2(0, a))
#else
// Grid texel (row, column) of the first texel of point p; texel t is t columns further.
ivec2 pt_base(int p) {
    int r = p / pts_row;
    return ivec2(r, (p - r * pts_row) * pt_texels);
}

vec4 pt_texel(ivec2 base, int t) {
    return X_texel(base.x, base.y + t);
}
#define QB(B) qb[B]
#define BI(a) bq[a]
#endif

// The points of quad q of tile f, and whether they are real points of this kernel.
ivec4 quad_points(int f, int q) {
    return ivec4(K_PTS * f + 4 * q) + ivec4(0, 1, 2, 3);
}

bvec4 quad_live(ivec4 ia, int q, int n) {
    ivec4 a = ivec4(4 * q) + ivec4(0, 1, 2, 3);
    return bvec4(ivec4(lessThan(ia, ivec4(n))) * ivec4(lessThan(a, ivec4(K_PTS))));
}

// Squared distances of point j (norm nj) to the four i from their dot products; sets exact
// when a real pair (j in range, j != i) may have cancelled.
vec4 expand(vec4 dots, vec4 ni, float nj, ivec4 ia, bvec4 ilive, int j, int jend,
            inout bool exact) {
    vec4 d2 = ni + vec4(nj) - 2.0 * dots;
    bvec4 real = bvec4(ilive.x && ia.x != j, ilive.y && ia.y != j,
                       ilive.z && ia.z != j, ilive.w && ia.w != j);
    bvec4 near = lessThanEqual(d2, SAFE * (ni + vec4(nj)));
    exact = exact || (j < jend && any(bvec4(real.x && near.x, real.y && near.y,
                                            real.z && near.z, real.w && near.w)));
    return d2;
}

// (x_j - x_i)^2 of one coordinate texel for the four points i (columns of xi).
vec4 sq_diff(vec4 xj, mat4 xi) {
    vec4 e0 = xj - xi[0], e1 = xj - xi[1], e2 = xj - xi[2], e3 = xj - xi[3];
    return vec4(dot(e0, e0), dot(e1, e1), dot(e2, e2), dot(e3, e3));
}

// The terms of eq. 1 and eq. 3 of point j (position yj, squared source distances d2 to the
// four i) added to g0 .. g3 and to the four s (lanes of s4; with S_LANE the w lanes of
// g0 .. g3, where y_i - y_j is 0, and s4 is not touched).
void pair_terms(int j, int jend, vec4 yj, vec4 d2, ivec4 ia, bvec4 ilive,
                vec4 yi0, vec4 yi1, vec4 yi2, vec4 yi3,
                inout vec4 s4, inout vec4 g0, inout vec4 g1, inout vec4 g2, inout vec4 g3) {
    vec4 e0 = yi0 - yj, e1 = yi1 - yj, e2 = yi2 - yj, e3 = yi3 - yj;
    vec4 dm = sqrt(vec4(dot(e0, e0), dot(e1, e1), dot(e2, e2), dot(e3, e3)));
    vec4 dn = sqrt(max(d2, vec4(0.0)));
    bvec4 ok = bvec4(ilive.x && ia.x != j && dn.x > 0.0, ilive.y && ia.y != j && dn.y > 0.0,
                     ilive.z && ia.z != j && dn.z > 0.0, ilive.w && ia.w != j && dn.w > 0.0);
    if (j < jend && any(ok)) {
        vec4 sd = mix(vec4(1.0), dn, ok);
        vec4 e = dn - dm;
        vec4 st = mix(vec4(0.0), e * e / sd, ok);
        vec4 w = mix(vec4(0.0), e / (sd * max(dm, vec4(dm_floor))), ok);
#if S_LANE
        const vec4 W = vec4(0.0, 0.0, 0.0, 1.0);
        g0 += w.x * e0 + st.x * W; g1 += w.y * e1 + st.y * W;
        g2 += w.z * e2 + st.z * W; g3 += w.w * e3 + st.w * W;
#else
        s4 += st;
        g0 += w.x * e0; g1 += w.y * e1; g2 += w.z * e2; g3 += w.w * e3;
#endif
    }
}

void main() {
    if (!G0_live(0)) {
        G0 = vec4(0.0);
#if K_PTS > 1
        G1 = vec4(0.0);
#endif
#if K_PTS > 2
        G2 = vec4(0.0);
#endif
#if K_PTS > 3
        G3 = vec4(0.0);
#endif
#if K_PTS > 4
        G4 = vec4(0.0);
#endif
#if K_PTS > 5
        G5 = vec4(0.0);
#endif
#if K_PTS > 6
        G6 = vec4(0.0);
#endif
#if K_PTS > 7
        G7 = vec4(0.0);
#endif
#if !S_LANE
        S = vec4(0.0);
#endif
        return;
    }
    int n = n_pts;
    ivec2 fc = G0_grid();
    int f = fc.x;
    int nb = (blk_end - blk_begin + JB - 1) / JB;          // blocks of this pass
    int first = blk0 + blk_begin;
    int jbeg = first + JB * ((nb * fc.y) / n_part);
    int jend = min(min(first + JB * ((nb * (fc.y + 1)) / n_part), blk0 + blk_end), n);
    ivec4 ia0 = quad_points(f, 0);
    bvec4 il0 = quad_live(ia0, 0, n);
    ivec4 ic0 = min(ia0, ivec4(n - 1));
#if IL
    ivec2 bi = pt_base(K_PTS * f);
#else
    ivec2 bq[4 * NQ];
    bq[0] = pt_base(ic0.x); bq[1] = pt_base(ic0.y); bq[2] = pt_base(ic0.z); bq[3] = pt_base(ic0.w);
#endif
    vec4 ni0 = vec4(NRM_at(0, ic0.x), NRM_at(0, ic0.y), NRM_at(0, ic0.z), NRM_at(0, ic0.w));
    vec4 g0 = vec4(0.0), g1 = vec4(0.0), g2 = vec4(0.0), g3 = vec4(0.0);
    vec4 s40 = vec4(0.0);
    // Live across the coordinate loop: the tile's dot products (and, with IL = 0, the points'
    // base texels); positions are fetched again after the loop, to keep registers free.
    vec4 acc0[JB];
#if NQ == 2
    ivec4 ia1 = quad_points(f, 1);
    bvec4 il1 = quad_live(ia1, 1, n);
    ivec4 ic1 = min(ia1, ivec4(n - 1));
#if !IL
    bq[4] = pt_base(ic1.x); bq[5] = pt_base(ic1.y); bq[6] = pt_base(ic1.z); bq[7] = pt_base(ic1.w);
#endif
    vec4 ni1 = vec4(NRM_at(0, ic1.x), NRM_at(0, ic1.y), NRM_at(0, ic1.z), NRM_at(0, ic1.w));
    vec4 g4 = vec4(0.0), g5 = vec4(0.0), g6 = vec4(0.0), g7 = vec4(0.0);
    vec4 s41 = vec4(0.0);
    vec4 acc1[JB];
#endif
#if !IL
    ivec2 qb[JB];
#endif
    for (int j0 = jbeg; j0 < jend; j0 += JB) {
#if IL
        ivec2 qb0 = pt_base(j0);
#define INIT_QB(B)
#else
#define INIT_QB(B) qb[B] = pt_base(min(j0 + B, n - 1));
#endif
#if NQ == 2
#define INIT(B) INIT_QB(B) acc0[B] = vec4(0.0); acc1[B] = vec4(0.0);
#else
#define INIT(B) INIT_QB(B) acc0[B] = vec4(0.0);
#endif
        EACH_B(INIT)
        for (int t = 0; t < pt_texels; t += UNROLL) {
#if NQ == 2
#define DOT(B) { vec4 xj = pt_texel(QB(B), tu); acc0[B] += xj * xi0; acc1[B] += xj * xi1; }
#define STEP(u) { int tu = t + u; mat4 xi0 = mat4(pt_texel(BI(0), tu), pt_texel(BI(1), tu), pt_texel(BI(2), tu), pt_texel(BI(3), tu)); mat4 xi1 = mat4(pt_texel(BI(4), tu), pt_texel(BI(5), tu), pt_texel(BI(6), tu), pt_texel(BI(7), tu)); EACH_B(DOT) }
#else
#define DOT(B) acc0[B] += pt_texel(QB(B), tu) * xi0;
#define STEP(u) { int tu = t + u; mat4 xi0 = mat4(pt_texel(BI(0), tu), pt_texel(BI(1), tu), pt_texel(BI(2), tu), pt_texel(BI(3), tu)); EACH_B(DOT) }
#endif
            STEP(0)
#if UNROLL > 1
            STEP(1)
#endif
        }
        // squared distances, and whether some real pair of the tile may have cancelled
        bool exact = false;
#if NQ == 2
#define EXPAND(B) { float nj = NRM_at(0, min(j0 + B, n - 1)); acc0[B] = expand(acc0[B], ni0, nj, ia0, il0, j0 + B, jend, exact); acc1[B] = expand(acc1[B], ni1, nj, ia1, il1, j0 + B, jend, exact); }
#else
#define EXPAND(B) acc0[B] = expand(acc0[B], ni0, NRM_at(0, min(j0 + B, n - 1)), ia0, il0, j0 + B, jend, exact);
#endif
        EACH_B(EXPAND)
        if (exact) {
#if NQ == 2
#define ZERO(B) acc0[B] = vec4(0.0); acc1[B] = vec4(0.0);
#define DIFF(B) { vec4 xj = pt_texel(QB(B), t); acc0[B] += sq_diff(xj, xi0); acc1[B] += sq_diff(xj, xi1); }
#else
#define ZERO(B) acc0[B] = vec4(0.0);
#define DIFF(B) acc0[B] += sq_diff(pt_texel(QB(B), t), xi0);
#endif
            EACH_B(ZERO)
            for (int t = 0; t < pt_texels; ++t) {
                mat4 xi0 = mat4(pt_texel(BI(0), t), pt_texel(BI(1), t), pt_texel(BI(2), t),
                                pt_texel(BI(3), t));
#if NQ == 2
                mat4 xi1 = mat4(pt_texel(BI(4), t), pt_texel(BI(5), t), pt_texel(BI(6), t),
                                pt_texel(BI(7), t));
#endif
                EACH_B(DIFF)
            }
        }
        // the pair terms of eq. 1 and eq. 3
        vec4 yi0 = Y_texel(ic0.x, 0), yi1 = Y_texel(ic0.y, 0);
        vec4 yi2 = Y_texel(ic0.z, 0), yi3 = Y_texel(ic0.w, 0);
#if NQ == 2
        vec4 yi4 = Y_texel(ic1.x, 0), yi5 = Y_texel(ic1.y, 0);
        vec4 yi6 = Y_texel(ic1.z, 0), yi7 = Y_texel(ic1.w, 0);
#define PAIR(B) { vec4 yj = Y_texel(min(j0 + B, n - 1), 0); pair_terms(j0 + B, jend, yj, acc0[B], ia0, il0, yi0, yi1, yi2, yi3, s40, g0, g1, g2, g3); pair_terms(j0 + B, jend, yj, acc1[B], ia1, il1, yi4, yi5, yi6, yi7, s41, g4, g5, g6, g7); }
#else
#define PAIR(B) pair_terms(j0 + B, jend, Y_texel(min(j0 + B, n - 1), 0), acc0[B], ia0, il0, yi0, yi1, yi2, yi3, s40, g0, g1, g2, g3);
#endif
        EACH_B(PAIR)
    }
    // with S_LANE the w lanes hold s (see pair_terms)
    G0 = g0;
#if K_PTS > 1
    G1 = g1;
#endif
#if K_PTS > 2
    G2 = g2;
#endif
#if K_PTS > 3
    G3 = g3;
#endif
#if K_PTS > 4
    G4 = g4;
#endif
#if K_PTS > 5
    G5 = g5;
#endif
#if K_PTS > 6
    G6 = g6;
#endif
#if K_PTS > 7
    G7 = g7;
#endif
#if !S_LANE
    S = s40;
#endif
}
