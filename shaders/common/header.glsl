// Shared by every fragment shader of the library (included by the program loader).
precision highp float;
precision highp int;
// Integer pixel coordinate of the fragment being shaded (x, y).
ivec2 frag_xy() { return ivec2(gl_FragCoord.xy); }
