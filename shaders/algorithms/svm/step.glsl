// The two-variable SMO step on the device (libsvm's analytic solution, RBF: K_ii = K_jj = 1),
// computed by every fragment of the update pass (a few fetches each), so an iteration needs
// no readback and no pass of its own. Reads the selection results RES:
//   texel 0 = (Gmax, i, G_i, 0)     (I_up arg-max of -y G)
//   texel 1 = (Gmax2, j', G_j', 0)  (I_low arg-max of y G; the first-order partner)
//   texel 2 = (gain, j, G_j, 0)     (second-order partner; SECOND_ORDER only)
// the alphas A, labels Y, and the solver state, kept in the last texel of the alpha vector (a
// texel of padding points: label 0, in no set), at grid position A_grid_of(state):
//   (iterations done, flag, duality gap Gmax + Gmax2 of the last selection, 0)
// flag: 0 running, 1 converged (gap < tol, or no second-order partner), 2 max_iter reached,
// 3 NaN in the gradient. Once the flag is set it stays and every step is a no-op (h = l = 0,
// ch = cl = 0, alpha_0 unchanged), so iterations run past the stop (the host reads the state
// only every k iterations) change nothing.
// K_ij: KSRC 0 walks the features of x_i and x_j (XR, row order); KSRC 1 reads the kernel row
// of i (KI, written by objective.frag); KSRC 2 the squared distances to i (D, split path).
// DIRECT (0 or 1): 1 indexes RES and the point vectors (A, Y, KI, D: 1-D arrays, one grid
// row) as grid row 0 and reads the vectors' texels at row_texel(), instead of
// NAME_grid_of(t), NAME_get(i) and the accessors' texture coordinates, which divide by the
// shape uniforms (the same texels; chosen on a CPU renderer, which runs integer division
// lane by lane: see svm.smo).
const float NO_IDX = 16777216.0;
const float STEP_TAU = 1e-12;

#if DIRECT && !defined(SMO_PAIR_ONLY)
// Texture coordinate of texel t of a one-row array in a texture w texels wide: (t % w, t / w),
// where the engine places it, wrapped or not. The quotient comes from a float division,
// corrected by one where it rounded across an integer (t, w < 2^24: off by at most one).
ivec2 row_texel(int t, int w) {
    int q = int(float(t) / float(w));
    int r = t - q * w;
    if (r < 0) {
        q -= 1;
        r += w;
    } else if (r >= w) {
        q += 1;
        r -= w;
    }
    return ivec2(r, q);
}
#endif

vec4 res_at(int k) {
#if DIRECT
    return RES_texel(0, k);
#else
    ivec2 q = RES_grid_of(k);
    return RES_texel(q.x, q.y);
#endif
}

// The pair (i, j) the selection chose (also read by the split path's distance passes).
ivec2 smo_pair() {
#if SECOND_ORDER
    vec4 rj = res_at(2);
#else
    vec4 rj = res_at(1);
#endif
    return ivec2(int(min(res_at(0).y, NO_IDX - 1.0)), int(min(rj.y, NO_IDX - 1.0)));
}

#ifndef SMO_PAIR_ONLY
float kernel_ij(int i, int j) {
#if KSRC == 0
    float s = 0.0;
    for (int d4 = 0; d4 < XR_GRID_W; ++d4) {
        vec4 a = XR_texel(i, d4) - XR_texel(j, d4);
        a = mix(vec4(0.0), a, greaterThanEqual(XR_flat(0, d4), ivec4(0)));
        s += dot(a, a);
    }
    return exp(-gamma * s);
#elif KSRC == 1 && DIRECT
    return texelFetch(sg_KI, row_texel(j >> 2, KI_TEX_W), 0)[j & 3];
#elif KSRC == 1
    return KI_get(j);
#elif DIRECT
    return exp(-gamma * texelFetch(sg_D, row_texel(j >> 2, D_TEX_W), 0)[j & 3]);
#else
    return exp(-gamma * D_get(j));
#endif
}

// h, l, ch = y_h dalpha_h, cl = y_l dalpha_l, the new alphas, and the new state.
void smo_step(out int h, out int l, out float ch, out float cl, out float ah, out float al,
              out vec4 state) {
    vec4 r0 = res_at(0);
    vec4 r1 = res_at(1);
#if SECOND_ORDER
    vec4 rj = res_at(2);
#else
    vec4 rj = r1;
#endif
#if DIRECT
    vec4 prev = texelFetch(sg_A, row_texel(state_texel, A_TEX_W), 0);
#else
    ivec2 sq = A_grid_of(state_texel);
    vec4 prev = A_texel(sq.x, sq.y);
#endif
    float count = prev.x;
    float flag = prev.y;
    float gap = r0.x + r1.x;
    if (flag == 0.0) {
        if (isnan(gap)) {
            flag = 3.0;
        } else if (!(gap >= tol) || rj.y >= NO_IDX) {
            flag = 1.0;
        } else if (count >= max_iter) {
            flag = 2.0;
        }
    } else {
        gap = prev.z;
    }
    h = 0;
    l = 0;
    ch = 0.0;
    cl = 0.0;
#if DIRECT
    ah = A_at(0, 0);
#else
    ah = A_get(0);
#endif
    al = ah;
    if (flag == 0.0) {
        int i = int(r0.y);
        int j = int(rj.y);
        float Gi = r0.z;
        float Gj = rj.z;
#if DIRECT
        // Y is laid out like A (both like the update's outputs): one coordinate per point
        ivec2 ci = row_texel(i >> 2, A_TEX_W);
        ivec2 cj = row_texel(j >> 2, A_TEX_W);
        float yi = texelFetch(sg_Y, ci, 0)[i & 3];
        float yj = texelFetch(sg_Y, cj, 0)[j & 3];
        float ai = texelFetch(sg_A, ci, 0)[i & 3];
        float aj = texelFetch(sg_A, cj, 0)[j & 3];
#else
        float yi = Y_get(i);
        float yj = Y_get(j);
        float ai = A_get(i);
        float aj = A_get(j);
#endif
        float Kij = kernel_ij(i, j);
        float ni = ai;
        float nj = aj;
        if (yi != yj) {
            float quad = 2.0 + 2.0 * (-Kij);
            quad = quad > 0.0 ? quad : STEP_TAU;
            float delta = (-Gi - Gj) / quad;
            float d = ai - aj;
            ni += delta;
            nj += delta;
            if (d > 0.0) {
                if (nj < 0.0) { nj = 0.0; ni = d; }
            } else {
                if (ni < 0.0) { ni = 0.0; nj = -d; }
            }
            if (d > 0.0) {  // d > C_i - C_j = 0
                if (ni > C) { ni = C; nj = C - d; }
            } else {
                if (nj > C) { nj = C; ni = C + d; }
            }
        } else {
            float quad = 2.0 - 2.0 * Kij;
            quad = quad > 0.0 ? quad : STEP_TAU;
            float delta = (Gi - Gj) / quad;
            float s = ai + aj;
            ni -= delta;
            nj += delta;
            if (s > C) {
                if (ni > C) { ni = C; nj = s - C; }
            } else {
                if (nj < 0.0) { nj = 0.0; ni = s; }
            }
            if (s > C) {
                if (nj > C) { nj = C; ni = s - C; }
            } else {
                if (ni < 0.0) { ni = 0.0; nj = s; }
            }
        }
        h = i;
        l = j;
        ch = yi * (ni - ai);
        cl = yj * (nj - aj);
        ah = ni;
        al = nj;
        count += 1.0;
    }
    state = vec4(count, flag, gap, 0.0);
}
#endif
