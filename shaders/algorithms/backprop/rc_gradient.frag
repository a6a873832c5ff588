// Fused schedule on uniform blocks, the recompute path's gradients of both layers in one pass
// (after rc_forward.frag): fragment (s, i) walks chunk s of the training-vector texels for row
// i of W2 (hidden unit i - 1; row 0 the threshold, a = 1) and makes the hidden activation again
// instead of reading a stored one. STRIDED 1: chunk s is the texels s, s + S, s + 2S ... (S =
// OUT0_ROWS chunks), so the fragments of neighbouring chunks read neighbouring texels (one
// cache line for a block of fragments); 0: the texels s chunk .. s chunk + chunk - 1.
//   a = f(sum_k W1[k][i - 1] x_k),  e = a (1 - a) sum_o W2[i][o] d_o,
//   OUT0 lane k (< IN_ROWS) = sum e x_k   (the gradient of W1[k][i - 1]),
//   OUT1 lane o (< OUTS)    = sum a d_o   (the gradient of W2[i][o]),
// d = DO the output errors (0 in padding lanes, so padding vectors add nothing). The fragment
// reads its own weights once; the training vectors' texels are the same for every fragment of
// a chunk. The vec4 lanes are the four training vectors of a texel, summed at the end. DO (the
// output layer's layout, wrapped into a squarer texture) is walked by texture coordinates
// stepped texel by texel (the accessor would divide by the texture width at every fetch);
// with one output its weight W2[i][0] multiplies the sums once, after the loop.
// Uniform: chunk.
#include "common.glsl"
#include "sigmoid2.glsl"
void main() {
    vec4 z = vec4(0.0);
    vec4 g0 = z, g1 = z, g2 = z, g3 = z, h0 = z, h1 = z, h2 = z, h3 = z;
    if (OUT0_inside()) {
        ivec2 g = OUT0_grid();
        int s = g.x, i = g.y;
        // row 0: s = -1e30, 2^s = 0, a = 1 (so a (1 - a) = 0: no W1 gradient)
        vec4 w = i == 0 ? vec4(-1e30, 0.0, 0.0, 0.0) : W1_texel(i - 1, 0) * NEG_LOG2E;
        vec4 v = vec4(W2_at(i, 0), 0.0, 0.0, 0.0);
#if OUTS >= 2
        v.y = W2_at(i, 1);
#endif
#if OUTS >= 3
        v.z = W2_at(i, 2);
#endif
#if OUTS >= 4
        v.w = W2_at(i, 3);
#endif
#if STRIDED
        int b0 = s, b1 = X_GRID_W, step = OUT0_ROWS;
#else
        int b0 = s * chunk, b1 = min(b0 + chunk, X_GRID_W), step = 1;
#endif
        ivec2 p0 = DO_coord(1, b0);       // the output errors' texels, stepped along
#if OUTS >= 2
        ivec2 p1 = DO_coord(2, b0);
#endif
#if OUTS >= 3
        ivec2 p2 = DO_coord(3, b0);
#endif
#if OUTS >= 4
        ivec2 p3 = DO_coord(4, b0);
#endif
#define DO_STEP(P) P.x += step; while (P.x >= DO_TEX_W) { P.x -= DO_TEX_W; P.y += 1; }
        for (int b = b0; b < b1; b += step) {
            vec4 x1 = X_texel(1, b), x2 = z, x3 = z, d1 = z, d2 = z, d3 = z;
#if IN_ROWS >= 3
            x2 = X_texel(2, b);
#endif
#if IN_ROWS >= 4
            x3 = X_texel(3, b);
#endif
            vec4 d0 = texelFetch(sg_DO, p0, 0);
            DO_STEP(p0)
#if OUTS >= 2
            d1 = texelFetch(sg_DO, p1, 0);
            DO_STEP(p1)
#endif
#if OUTS >= 3
            d2 = texelFetch(sg_DO, p2, 0);
            DO_STEP(p2)
#endif
#if OUTS >= 4
            d3 = texelFetch(sg_DO, p3, 0);
            DO_STEP(p3)
#endif
            vec4 t = vec4(w.x) + w.y * x1;
#if IN_ROWS >= 3
            t += w.z * x2;
#endif
#if IN_ROWS >= 4
            t += w.w * x3;
#endif
            vec4 a = sigmoid2(t);
#if OUTS == 1
            vec4 e = (a - a * a) * d0;    // times W2[i][0] after the loop
#else
            vec4 e = (a - a * a) * (v.x * d0 + v.y * d1);
#if OUTS >= 3
            e += (a - a * a) * (v.z * d2);
#endif
#if OUTS >= 4
            e += (a - a * a) * (v.w * d3);
#endif
#endif
            g0 += e;
            g1 += e * x1;
#if IN_ROWS >= 3
            g2 += e * x2;
#endif
#if IN_ROWS >= 4
            g3 += e * x3;
#endif
            h0 += a * d0;
#if OUTS >= 2
            h1 += a * d1;
#endif
#if OUTS >= 3
            h2 += a * d2;
#endif
#if OUTS >= 4
            h3 += a * d3;
#endif
        }
#if OUTS == 1
        g0 *= v.x; g1 *= v.x; g2 *= v.x; g3 *= v.x;
#endif
    }
    vec4 one = vec4(1.0);
    OUT0 = vec4(dot(g0, one), dot(g1, one), dot(g2, one), dot(g3, one));
    OUT1 = vec4(dot(h0, one), dot(h1, one), dot(h2, one), dot(h3, one));
}
