// Reading back what a tiled product left in its TILE_ROWS render targets P0 .. P<R-1>.
// The products lay their rows out in blocks, so that neighbouring fragments of a gather pass
// (neighbouring rows) read the same target: a branch every fragment of a block takes alike.
vec4 tile_pick(int t, int i, int c) {
    vec4 v = P0_texel(i, c);
#if TILE_ROWS >= 4
    if (t == 1) v = P1_texel(i, c);
    else if (t == 2) v = P2_texel(i, c);
    else if (t == 3) v = P3_texel(i, c);
#endif
#if TILE_ROWS >= 8
    else if (t == 4) v = P4_texel(i, c);
    else if (t == 5) v = P5_texel(i, c);
    else if (t == 6) v = P6_texel(i, c);
    else if (t == 7) v = P7_texel(i, c);
#endif
    return v;
}

// Row n of a product whose target t holds rows t h .. t h + h - 1 (at rows base .. base + h - 1
// of P<t>): tile_forward.frag (h = P0_ROWS) and tile_partial.frag (one block per chunk).
vec4 tile_row(int n, int h, int base, int c) {
    int t = n / h;
    return tile_pick(t, base + n - t * h, c);
}

// Row n of tile_backprop.frag's product: rows come in quads (four rows per texel of the
// column-packed weights) that go to targets 0-3 (quads 0 .. h - 1) and 4-7 (quads h ..), one
// row of the quad per target.
vec4 tile_row_quads(int n, int h, int c) {
    int q = n / 4;
    int u = q / h;
    return tile_pick(4 * u + (n - 4 * q), q - u * h, c);
}
