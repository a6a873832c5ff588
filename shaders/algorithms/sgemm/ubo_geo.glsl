// Geometry of the uniform-block variants' product targets, shared by the product kernels and
// their epilogue. Uniform geo = (band, width, fragments per block row, tiles across): block
// row i's fragments form rect (i % across, i / across) of band x width texels; inside it,
// texel (hy, hx) is fragment f of the block row. QUAD_ORDER 0: f = hy * width + hx (row by
// row); QUAD_ORDER 1 (band and width even): pixel quads in row order, f = 4 * quad + 2 (hy odd)
// + (hx odd), so the 4 fragments of a rasterizer quad read 4 consecutive columns of B.
int ubo_fragment(ivec2 g) {
    int hy = g.x % geo.x;
    int hx = g.y % geo.y;
#if QUAD_ORDER
    return ((((hy >> 1) * (geo.y >> 1) + (hx >> 1)) << 2) | ((hy & 1) << 1)) | (hx & 1);
#else
    return hy * geo.y + hx;
#endif
}
// Target texel (grid row, grid column) of fragment f of block row i.
ivec2 ubo_texel(int i, int f) {
    int ty = i / geo.w;
    int tx = i - ty * geo.w;
#if QUAD_ORDER
    int m = f >> 2;
    int half_w = geo.y >> 1;
    int my = m / half_w;
    int hy = (my << 1) | ((f >> 1) & 1);
    int hx = ((m - my * half_w) << 1) | (f & 1);
#else
    int hy = f / geo.y;
    int hx = f - hy * geo.y;
#endif
    return ivec2(ty * geo.x + hy, tx * geo.y + hx);
}
