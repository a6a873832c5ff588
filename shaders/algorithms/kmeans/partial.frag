// Centroid update, first level: partial sums per (centroid, block of points).
// PART is (k * nb) x (d + 2), row order, packed: row c * nb + b sums, over the points of block b
// (point texels [b * blk, (b + 1) * blk) of the label vectors) whose label is c,
//   columns 0 .. d-1: x - C[c], the deviations from the current centroid (small near
//                     convergence, so the float32 sums keep the new mean's digits);
//   column d:         1 (the count);
//   column d + 1:     1 where the point's label in the previous iteration (OLD) was not c (the
//                     labels that changed: every changed label joins exactly one cluster).
// Inputs: LAB, OLD (labels, packed vectors, -1 in padding lanes), XR (the points in row order,
// packed: texel (i, j4) holds features 4 j4 .. 4 j4 + 3 of point i), C (the centroids).
// The four lanes of a label texel are taken one after the other (no inner loop), so a fragment
// runs blk loop iterations.

// One point: add its row of PART (this fragment's four columns) when its label is c.
void take(float lab, float old, int i, float cf, bool has_x, int j4, vec4 cv, vec4 is_f,
          vec4 is_n, vec4 is_j, inout vec4 acc) {
    if (lab == cf) {
        vec4 x = has_x ? XR_texel(i, j4) : vec4(0.0);
        acc += is_f * (x - cv) + is_n + is_j * float(old != cf);
    }
}

void main() {
    ivec2 g = PART_grid();
    int c = g.x / nb;
    int b = g.x - c * nb;
    int j4 = g.y;
    float cf = float(c);
    int d = C_COLS;
    ivec4 col = 4 * j4 + ivec4(0, 1, 2, 3);
    vec4 is_f = vec4(lessThan(col, ivec4(d)));
    vec4 is_n = vec4(equal(col, ivec4(d)));
    vec4 is_j = vec4(equal(col, ivec4(d + 1)));
    bool has_x = j4 < C_GRID_W;           // PART has one texel column more when d % 4 > 2
    vec4 cv = has_x ? C_texel(c, j4) : vec4(0.0);
    int t0 = b * blk;
    int t1 = min(t0 + blk, LAB_GRID_W);
    vec4 acc = vec4(0.0);
    for (int t = t0; t < t1; ++t) {
        vec4 lab = LAB_texel(0, t);
        vec4 old = OLD_texel(0, t);
        int i = 4 * t;
        take(lab.x, old.x, i, cf, has_x, j4, cv, is_f, is_n, is_j, acc);
        take(lab.y, old.y, i + 1, cf, has_x, j4, cv, is_f, is_n, is_j, acc);
        take(lab.z, old.z, i + 2, cf, has_x, j4, cv, is_f, is_n, is_j, acc);
        take(lab.w, old.w, i + 3, cf, has_x, j4, cv, is_f, is_n, is_j, acc);
    }
    PART = acc;
}
