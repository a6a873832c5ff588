// An (H, W, C) image shown as it is: OUT is the (H, W, 4) display image, one pixel per texel.
// vmin..vmax map to black..full intensity; one or two channels (gray, gray + alpha) show gray.
void main() {
    ivec2 g = OUT_grid();
    vec4 v = X_texel(g.x, g.y);
    vec3 rgb = (channels <= 2) ? vec3(v.r) : v.rgb;
    float scale = 1.0 / max(vmax - vmin, 1e-30);
    OUT = vec4(clamp((rgb - vmin) * scale, 0.0, 1.0), 1.0);
}
