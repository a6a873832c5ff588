// Every texel of OUT (padding included) becomes `value` in all four components.
uniform float value;
void main() { OUT = vec4(value); }
