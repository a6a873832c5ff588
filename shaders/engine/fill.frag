// Every texel of OUT (padding included) becomes `value` in all four components.
void main() { OUT = vec4(value); }
