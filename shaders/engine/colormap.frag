// Turns an array into display colours: OUT is an (H, W, 4) image.
// IMAGE=1: X is an image (one pixel per texel); otherwise X is a matrix shown one element per pixel.
uniform float vmin;
uniform float vmax;

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
    ivec2 g = OUT_grid();
    float scale = 1.0 / max(vmax - vmin, 1e-30);
#if IMAGE
    vec4 v = X_texel(g.x, g.y);
    vec3 rgb = (CHANNELS == 1) ? vec3(v.r) : v.rgb;
    OUT = vec4(clamp((rgb - vmin) * scale, 0.0, 1.0), 1.0);
#else
    OUT = vec4(ramp((X_at(g.x, g.y) - vmin) * scale), 1.0);
#endif
}
