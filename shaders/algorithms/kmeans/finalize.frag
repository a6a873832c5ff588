// Centroid update, second level: for texel (c, j4) of the new centroids OUT, the nb partial
// rows of centroid c in PART are summed: the deviations s, the count n and the labels that
// joined c. OUT = C + s * (1 / n) (scikit-learn's _average_centers multiplies by 1 / n too);
// an empty cluster (n = 0) keeps its centroid here, and the host, seeing it in the status,
// relocates it as scikit-learn does.
// STAT (same layout as OUT), per texel: (squared shift of these four coordinates, 1 if the
// cluster is empty (texel 0 of the row only), labels that joined the cluster (texel 0 only), 0);
// the status pass sums them.
void main() {
    ivec2 g = OUT_grid();
    int c = g.x;
    int d = C_COLS;
    vec4 s = vec4(0.0);
    float n = 0.0;
    float joined = 0.0;
    for (int b = 0; b < nb; ++b) {
        int r = c * nb + b;
        s += PART_texel(r, g.y);
        n += PART_at(r, d);
        joined += PART_at(r, d + 1);
    }
    vec4 cv = C_texel(c, g.y);
    vec4 moved = n > 0.0 ? cv + s * (1.0 / n) : cv;
    moved = mix(vec4(0.0), moved, OUT_lanes());   // lanes past the last feature stay 0
    OUT = moved;
    vec4 shift = moved - cv;
    bool first = g.y == 0;
    STAT = vec4(dot(shift, shift), (first && n == 0.0) ? 1.0 : 0.0, first ? joined : 0.0, 0.0);
}
