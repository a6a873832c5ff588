// Eight outputs from one pass: OUTk = (k + 1) * X.
void main() {
    ivec2 g = OUT0_grid();
    vec4 x = X_texel(g.x, g.y);
    OUT0 = 1.0 * x; OUT1 = 2.0 * x; OUT2 = 3.0 * x; OUT3 = 4.0 * x;
    OUT4 = 5.0 * x; OUT5 = 6.0 * x; OUT6 = 7.0 * x; OUT7 = 8.0 * x;
}
