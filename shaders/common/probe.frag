#version 330 core
// Capability probe: writes one uniform vec4 to every texel (used by context.probe to check
// float32 precision and additive blending into RGBA32F targets).
uniform vec4 v;
out vec4 o;
void main() { o = v; }
