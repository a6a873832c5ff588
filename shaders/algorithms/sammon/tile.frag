// One Sammon gather over the points blk0 + [blk_begin, blk_end) of the j sweep for a TILE of
// points: output texel (f, c) owns K_PTS points i_a = K_PTS * f + a (a = 0 .. K_PTS-1) and
// part c of n_part of the range (whole blocks; FINISH sums the parts: enough fragments to
// fill a GPU at any N), and sweeps the points j JB at a time, so every texel of X fetched for
// a point j serves K_PTS pairs and every texel fetched for a point i serves JB (a register
// tile, as in SGEMM). Lanes a >= K_PTS (devices with fewer render targets) are computed and
// dropped.
// X is the source blocked by points: row r of the packed row-major matrix holds points
// r * pts_row .. r * pts_row + pts_row - 1, pt_texels texels (4 coordinates each) per point,
// so that X rarely wraps and a point's texels are consecutive (its base texel is found once per
// block, not per fetch). NRM holds |x_p|^2 (X is centred on the host: the norms are small).
//
// Distances: d2 = |x_i|^2 + |x_j|^2 - 2 x_i . x_j (one multiply-add per coordinate and pair,
// half the work of (x_j - x_i)^2). Where that subtraction could cancel, i.e. some pair of the
// tile has d2 <= SAFE * (|x_i|^2 + |x_j|^2) (near or duplicate points), the whole tile is
// recomputed exactly as sum (x_j - x_i)^2: duplicates give dn == 0 exactly and are skipped.
// The exact loop is budgeted in the loop cap as if every block took it.
//
// Outputs (summed over passes by additive blending or by the engine's ping-pong accumulation):
//   G<a> = g_{i_a} = sum_{j != i, dn > 0} (dn - dm) / (dn * max(dm, dm_floor)) * (y_i - y_j)
//   S    = lane a: s_{i_a} = sum_{j != i, dn > 0} (dn - dm)^2 / dn          (eq. 1 row terms)
// FINISH (finish.frag) turns them into the next positions (eq. 3), G and S per point.

const float SAFE = 0.25;

// Unrolled over the JB (8 or 16) points of a block (constant indices: registers, no loop).
#if JB == 16
#define EACH_B(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11) OP(12) OP(13) OP(14) OP(15)
#else
#define EACH_B(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7)
#endif

// Grid texel (row, column) of the first texel of point p.
ivec2 pt_base(int p) {
    int r = p / pts_row;
    return ivec2(r, (p - r * pts_row) * pt_texels);
}

vec4 pt_texel(ivec2 base, int t) {
    return X_texel(base.x, base.y + t);
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
// four i) added to s4 and g0 .. g3.
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
        s4 += mix(vec4(0.0), e * e / sd, ok);
        vec4 w = mix(vec4(0.0), e / (sd * max(dm, vec4(dm_floor))), ok);
        g0 += w.x * e0; g1 += w.y * e1; g2 += w.z * e2; g3 += w.w * e3;
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
        S = vec4(0.0);
        return;
    }
    int n = n_pts;
    ivec2 fc = G0_grid();
    int f = fc.x;
    int nb = (blk_end - blk_begin + JB - 1) / JB;          // blocks of this pass
    int first = blk0 + blk_begin;
    int jbeg = first + JB * ((nb * fc.y) / n_part);
    int jend = min(min(first + JB * ((nb * (fc.y + 1)) / n_part), blk0 + blk_end), n);
    ivec4 ia = ivec4(K_PTS * f) + ivec4(0, 1, 2, 3);
    bvec4 ilive = lessThan(ia, ivec4(n));
#if K_PTS < 4
    ilive = bvec4(ilive.x, K_PTS > 1 && ilive.y, K_PTS > 2 && ilive.z, false);
#endif
    ivec4 ic = min(ia, ivec4(n - 1));
    ivec2 b0 = pt_base(ic.x), b1 = pt_base(ic.y), b2 = pt_base(ic.z), b3 = pt_base(ic.w);
    vec4 ni = vec4(NRM_at(0, ic.x), NRM_at(0, ic.y), NRM_at(0, ic.z), NRM_at(0, ic.w));
    vec4 g0 = vec4(0.0), g1 = vec4(0.0), g2 = vec4(0.0), g3 = vec4(0.0);
    vec4 s4 = vec4(0.0);
    // Live across the coordinate loop: the tile's dot products and the points' base texels
    // (the rest is fetched again after the loop, to keep registers for more fragments).
    vec4 acc[JB];
    ivec2 qb[JB];
    for (int j0 = jbeg; j0 < jend; j0 += JB) {
#define INIT(B) qb[B] = pt_base(min(j0 + B, n - 1)); acc[B] = vec4(0.0);
        EACH_B(INIT)
        for (int t = 0; t < pt_texels; ++t) {
            mat4 xi = mat4(pt_texel(b0, t), pt_texel(b1, t), pt_texel(b2, t), pt_texel(b3, t));
#define DOT(B) acc[B] += pt_texel(qb[B], t) * xi;
            EACH_B(DOT)
        }
        // squared distances, and whether some real pair of the tile may have cancelled
        bool exact = false;
#define EXPAND(B) acc[B] = expand(acc[B], ni, NRM_at(0, min(j0 + B, n - 1)), ia, ilive, j0 + B, jend, exact);
        EACH_B(EXPAND)
        if (exact) {
#define ZERO(B) acc[B] = vec4(0.0);
            EACH_B(ZERO)
            for (int t = 0; t < pt_texels; ++t) {
                mat4 xi = mat4(pt_texel(b0, t), pt_texel(b1, t), pt_texel(b2, t),
                               pt_texel(b3, t));
#define DIFF(B) acc[B] += sq_diff(pt_texel(qb[B], t), xi);
                EACH_B(DIFF)
            }
        }
        // the pair terms of eq. 1 and eq. 3
        vec4 yi0 = Y_texel(ic.x, 0), yi1 = Y_texel(ic.y, 0);
        vec4 yi2 = Y_texel(ic.z, 0), yi3 = Y_texel(ic.w, 0);
#define PAIR(B) pair_terms(j0 + B, jend, Y_texel(min(j0 + B, n - 1), 0), acc[B], ia, ilive, yi0, yi1, yi2, yi3, s4, g0, g1, g2, g3);
        EACH_B(PAIR)
    }
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
    S = s4;
}
