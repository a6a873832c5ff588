#version 330 core
// Draws an RGBA image texture over the whole window; row 0 of the image at the top.
uniform sampler2D image;
uniform vec2 window_size;
out vec4 color;
void main() {
    vec2 uv = gl_FragCoord.xy / window_size;
    color = vec4(texture(image, vec2(uv.x, 1.0 - uv.y)).rgb, 1.0);
}
