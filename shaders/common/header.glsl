// Shared by every fragment shader of the library (included by the program loader).
precision highp float;
precision highp int;
