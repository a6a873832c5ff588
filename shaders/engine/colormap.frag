// A matrix shown through a colour ramp: OUT is an (H, W, 4) image whose pixel (row, col) shows
// element view_start + row * view_cols + col of X in row-major flat order (so a flat vector, or
// one row of a matrix, can be shown as an H x W picture). vmin and vmax map to the ramp's ends;
// pixels past the end of X are grey.
vec3 ramp(float t) {
    // A perceptual blue-green-yellow ramp (smooth cubic fit), t in [0, 1].
    t = clamp(t, 0.0, 1.0);
    vec3 c0 = vec3(0.267, 0.005, 0.329);
    vec3 c1 = vec3(0.128, 1.383, 0.860);
    vec3 c2 = vec3(1.600, -0.560, -1.200);
    vec3 c3 = vec3(-1.000, 0.100, 0.400);
    return clamp(c0 + t * (c1 + t * (c2 + t * c3)), 0.0, 1.0);
}

void main() {
    ivec2 p = OUT_grid();                       // (row, col) of the pixel
    int i = view_start + p.x * view_cols + p.y;
    if (i >= X_ROWS * X_COLS) {
        OUT = vec4(0.25, 0.25, 0.25, 1.0);
        return;
    }
    float scale = 1.0 / max(vmax - vmin, 1e-30);
    OUT = vec4(ramp((X_get(i) - vmin) * scale), 1.0);
}
