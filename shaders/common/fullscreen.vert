#version 330 core
// One triangle that covers the whole viewport; no vertex attributes are needed.
// Every render pass of the library draws it: one fragment per output texel.
void main() {
    vec2 p = vec2((gl_VertexID << 1) & 2, gl_VertexID & 2);
    gl_Position = vec4(p * 2.0 - 1.0, 0.0, 1.0);
}
