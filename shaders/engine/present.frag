// Draws the display image over the whole window (or the viewer's offscreen target); row 0 of
// the image at the top. Not a kernel: shadergpgpu/frontends/window.py compiles it with its
// declarations (the image sampler and the target size in pixels) in front.
out vec4 color;
void main() {
    vec2 uv = gl_FragCoord.xy / target_size;
    color = vec4(texture(image, vec2(uv.x, 1.0 - uv.y)).rgb, 1.0);
}
