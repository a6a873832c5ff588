// One Sammon iteration for the points j in [j0, j1) (the whole set, or one chunk of it when
// the sweep is split over several passes summed by additive blending).
//
// Fragment i owns point i (a gather: it reads every other point and writes only its own
// texels; no scatter, no atomics). With Y = prev positions (N x m, one texel per point):
//   g_i  = sum_{j != i, dn > 0} (dn_ij - dm_ij) / (dn_ij * max(dm_ij, dm_floor)) * (y_i - y_j)
//   s_i  = sum_{j != i, dn > 0} (dn_ij - dm_ij)^2 / dn_ij          (row of the stress, eq. 1)
//   OUT0 = keep_prev * y_i + mu * g_i                                (eq. 3)
//   OUT1 = g_i (the direction, kept for the step control), OUT2 = (s_i, 0, 0, 0).
// Pairs with dn == 0 (duplicate source points) are skipped in both sums; dm is clamped from
// below by dm_floor in the update only, so y_i == y_j gives a zero term instead of 0 * inf.
#include "source_dist.glsl"

uniform float mu;
uniform float keep_prev;   // 1 for the first chunk (adds y_i), 0 for the blended chunks
uniform float dm_floor;
uniform int j0;            // multiple of 4
uniform int j1;

void main() {
    ivec2 q = OUT0_grid();
    int i = q.x;
    if (!OUT0_inside() || i >= Y_ROWS) {
        OUT0 = vec4(0.0); OUT1 = vec4(0.0); OUT2 = vec4(0.0);
        return;
    }
    vec4 yi = Y_texel(i, 0);
    vec4 g = vec4(0.0);
    float s = 0.0;
    for (int jb = j0; jb < j1; jb += 4) {
        vec4 dn4 = src_dist4(i, jb);
        for (int k = 0; k < 4; ++k) {
            int j = jb + k;
            float dn = dn4[k];
            if (j >= j1 || j == i || !(dn > 0.0)) continue;
            vec4 dy = yi - Y_texel(j, 0);
            float dm = sqrt(dot(dy, dy));
            float e = dn - dm;
            s += e * e / dn;
            g += (e / (dn * max(dm, dm_floor))) * dy;
        }
    }
    OUT0 = keep_prev * yi + mu * g;
    OUT1 = g;
    OUT2 = vec4(s, 0.0, 0.0, 0.0);
}
