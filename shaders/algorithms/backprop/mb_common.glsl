// Shared by the mini-batch trainer's kernels (shadergpgpu/algorithms/backprop/minibatch.py).
// Every matrix is packed by rows (four consecutive columns per texel): a batch of activations
// is (B, L), a layer's weights are (Lp + 1, L') with Lp = 4 ceil(L / 4): rows L .. Lp - 1 are
// zero and row Lp holds the intercepts, so a texel of four inputs meets four weight rows.
// A batch row r < nb is sample IDX[start + r] of the resident data (GATHER) or row start + r.

// The hidden activation (ACT: 0 identity, 1 logistic, 2 tanh, 3 relu).
vec4 activate(vec4 z) {
#if ACT == 1
    return 1.0 / (1.0 + exp(-z));
#elif ACT == 2
    return tanh(clamp(z, -15.0, 15.0));
#elif ACT == 3
    return max(z, vec4(0.0));
#else
    return z;
#endif
}

// The activation's derivative from its value a (ACT as above).
vec4 activate_derivative(vec4 a) {
#if ACT == 1
    return a * (1.0 - a);
#elif ACT == 2
    return 1.0 - a * a;
#elif ACT == 3
    return vec4(greaterThan(a, vec4(0.0)));
#else
    return vec4(1.0);
#endif
}
