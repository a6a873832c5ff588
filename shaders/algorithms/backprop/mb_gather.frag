// Mini-batch trainer, the batch's inputs: OUT[r] = X[IDX[start + r]] for the batch rows r < nb
// (0 below), copied once per step so that the passes reading the batch read contiguous rows
// and no index in their loops. Uniforms: start, nb.
void main() {
    ivec2 g = OUT_grid();
    if (g.x >= nb) { OUT = vec4(0.0); return; }
    OUT = X_texel(int(IDX_get(start + g.x)), g.y);
}
