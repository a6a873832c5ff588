// Shared by the backpropagation kernels.
// Activations A (L+1 rows x N columns): row 0 is the constant input x0 = o0 = 1 of the
// threshold weights (1 for real training vectors, 0 in padding lanes), row r > 0 is neuron r-1.
// Errors D have the same shape; their row 0 is 0. Weights W ((L+1) x L'): W[i][j] links row i of
// A to neuron j of the next layer, so row 0 holds the thresholds.
// PACKED is 1 when four consecutive training vectors share one texel (dot products then sum
// four of them at once), 0 when a texel holds one value in .r. Sizes come from the arrays'
// shape macros and from uniforms.
vec4 sigmoid(vec4 x) { return 1.0 / (1.0 + exp(-x)); }

// Sum over the training vectors held in one texel of the product a * b.
float vec_dot(vec4 a, vec4 b) {
#if PACKED
    return dot(a, b);
#else
    return a.r * b.r;
#endif
}
