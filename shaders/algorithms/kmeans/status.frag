// The status of one iteration, for the host's convergence test: OUT = the sum of STAT's texels
// over the range [t_begin, t_end) = (total squared centre shift, empty clusters, changed
// labels, 0). The range is a split loop: past the device's loop cap it is cut across passes
// that add by blending.
void main() {
    vec4 acc = vec4(0.0);
    for (int t = t_begin; t < t_end; ++t) {
        ivec2 q = STAT_grid_of(t);
        acc += STAT_texel(q.x, q.y);
    }
    OUT = acc;
}
