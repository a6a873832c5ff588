// Shared by the recursive Gaussian kernels (shadergpgpu/algorithms/blur.py explains the scheme).
//
// The filter is h(m) = 2 Re(alpha0 p0^|m| + alpha1 p1^|m|): two complex poles (four real ones
// in conjugate pairs, a 4th-order recursive Gaussian). Along a line x(0..N-1):
//   causal     w_k(n) = p_k w_k(n-1) + x(n)
//   anticausal v_k(n) = p_k v_k(n+1) + x(n)
//   y(n) = 2 Re sum_k alpha_k (w_k(n) + v_k(n)) - h(0) x(n)
// Both recursions read only x, so they run side by side. The state of one lane is four complex
// numbers; a lane is one RGBA texel component (SEQ 0: each texel is one step of four independent
// lines) or one step of a packed grayscale row (SEQ 1: each texel holds four steps of one line).
//
// Defines (finite variants, fixed by each declared kernel or chosen per call):
//   AXIS 0: lines run along grid rows, 1: along grid columns; SEQ; HAVE_SRC (the kernel reads
//   the source); SRC_PLANES (the source is the column planes P0..P(NPL-1) of a previous apply
//   pass, lines in plane-major order, WP texel columns each); NPL (8 or 4: render targets, so
//   planes, of an apply pass: texel t of a line goes to plane t mod NPL); PART (0: a summary
//   set's eight arrays in one pass; 1 / 2: only its causal (NAME0..3) / anticausal (NAME4..7)
//   half, for devices with four render targets).
// The kernels that read the source (reduce, carry, apply) work on x - line_offset(l) (below).
// Uniforms (declared by the kernels, see blur.py): POLE, LPOLE, ALPHA, H0, CNEAR, DREFL (the
// filter), NSTEPS (steps per line), NPOS (texels per line), WP (plane width), C1 (level-1 block
// size in texels, reduce and apply kernels).
//
// BLK is the level-1 block size the loops of reduce and apply run over: the define C1K where the
// call picks one of the common sizes (a compile-time trip count, so the compiler unrolls the
// block walks and issues their fetches together, as a GPU needs), else (C1K 0) the C1 value.
#if defined(C1K) && C1K > 0
#define BLK C1K
#else
#define BLK C1
#endif
#if SEQ
#define T float
T lane(vec4 v) { return v.x; }
#define SPT 4
#else
#define T vec4
T lane(vec4 v) { return v; }
#define SPT 1
#endif

struct CL { T re; T im; };  // one complex state per lane

// POLE: p0 = .xy, p1 = .zw; LPOLE: (log|p0|, arg p0, log|p1|, arg p1); ALPHA: alpha0 = .xy,
// alpha1 = .zw; H0 = h(0); CNEAR = 1 / (1 - p_k) (border "nearest"); DREFL = 1 / (1 - p_k^(2N))
// (border "reflect").
vec2 pole(int k) { return k == 0 ? POLE.xy : POLE.zw; }
vec2 alpha(int k) { return k == 0 ? ALPHA.xy : ALPHA.zw; }

// p_k^n for n >= 0 (underflows to 0 for long distances, as it should)
vec2 cpow(int k, int n) {
    vec2 lp = k == 0 ? LPOLE.xy : LPOLE.zw;
    float m = exp(float(n) * lp.x);
    float a = float(n) * lp.y;
    return m * vec2(cos(a), sin(a));
}
vec2 cmul2(vec2 a, vec2 b) { return vec2(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
CL cmul(vec2 q, CL a) { return CL(q.x * a.re - q.y * a.im, q.x * a.im + q.y * a.re); }
CL cadd(CL a, CL b) { return CL(a.re + b.re, a.im + b.im); }
CL cscale(vec2 q, T x) { return CL(q.x * x, q.y * x); }
CL czero() { return CL(T(0.0), T(0.0)); }
// one recursion step s = p s + x
CL cstep(vec2 p, CL s, T x) { return CL(p.x * s.re - p.y * s.im + x, p.x * s.im + p.y * s.re); }
// 2 Re(alpha s)
T cout2(vec2 a, CL s) { return 2.0 * (a.x * s.re - a.y * s.im); }

// Grid position of the fragment of a summary pass (its first output: NAME4 for PART 2).
#if PART == 2
#define FRAG_GRID() OUT4_grid()
#else
#define FRAG_GRID() OUT0_grid()
#endif

// Block coordinates of the fragment: (line, block index along the line).
#if AXIS == 1
int line_of(ivec2 g) { return g.y; }
int blk_of(ivec2 g) { return g.x; }
#define LB(l, b) (b), (l)
#else
int line_of(ivec2 g) { return g.x; }
int blk_of(ivec2 g) { return g.y; }
#define LB(l, b) (l), (b)
#endif

// The texel at position `pos` of line `l` of the source (kernels that read it: HAVE_SRC 1).
#include "planes.glsl"
#if HAVE_SRC && SRC_PLANES
vec4 src_texel(int l, int pos) {
    int k = l / WP;
    return plane_texel(k, pos, l - k * WP);
}
#elif HAVE_SRC
vec4 src_texel(int l, int pos) { return X_texel(LB(l, pos)); }
#endif

#if HAVE_SRC
// The line's offset c: its first step (SEQ; each line a row of the packed grayscale image X)
// or its first texel (each lane a line of its own). The kernels that read the source filter
// x - c and add c back to the output (the filter's DC gain is 1, blur.py), so the rounding of the
// recursion is relative to the line's range, not to its magnitude: 1000 + rand came out 2..8x
// less accurate than rand, a constant line comes out exact.
#if SEQ
T line_offset(int l) { return X_at(l, 0); }
#else
T line_offset(int l) { return src_texel(l, 0); }
#endif
#endif

#if HAVE_SRC && SEQ
// SEQ reads a packed grayscale image X along its rows: the lanes of texel `pos` of line `l`
// that hold a pixel (false for the padding past the row's end, and past the last texel).
bvec4 src_live(int l, int pos) { return greaterThanEqual(X_flat(l, pos), ivec4(0)); }
#elif HAVE_SRC
bvec4 src_live(int l, int pos) { return bvec4(pos < NPOS); }
#endif

#if HAVE_SRC
// src_live of texel `pos` (any position, past the line's end too) from `last`, src_live of the
// line's last texel: only that texel can hold padding lanes, so a kernel asks the layout once
// per fragment instead of once per texel.
bvec4 live_of(int pos, bvec4 last) {
    return pos < NPOS - 1 ? bvec4(true) : (pos == NPOS - 1 ? last : bvec4(false));
}
// Step (index along the line) of the first lane of texel `pos` < NPOS of line `l`.
#if SEQ
int src_step(int l, int pos) { return X_flat(l, pos).x - X_flat(l, 0).x; }
#else
int src_step(int l, int pos) { return pos; }
#endif
#endif

// Summary sets: eight arrays NAME0..NAME7 = (w0.re, w0.im, w1.re, w1.im, v0.re, ..., v1.im),
// one lane per component. With SEQ (one lane) the causal half packs into NAME0 and the
// anticausal half into NAME4, one texel each (the kernel binds only those two).
#if SEQ
#define LOAD_W(N0, N1, N2, N3, l, b, DST) \
    { vec4 t_ = N0(LB(l, b)); DST[0] = CL(t_.x, t_.y); DST[1] = CL(t_.z, t_.w); }
#define STORE8(FW, BW) \
    OUT0 = vec4(FW[0].re, FW[0].im, FW[1].re, FW[1].im); \
    OUT4 = vec4(BW[0].re, BW[0].im, BW[1].re, BW[1].im);
#else
#define LOAD_W(N0, N1, N2, N3, l, b, w) \
    w[0] = CL(lane(N0(LB(l, b))), lane(N1(LB(l, b)))); \
    w[1] = CL(lane(N2(LB(l, b))), lane(N3(LB(l, b))));
#if PART == 1
#define STORE8(w, v) \
    OUT0 = vec4(w[0].re); OUT1 = vec4(w[0].im); OUT2 = vec4(w[1].re); OUT3 = vec4(w[1].im);
#elif PART == 2
#define STORE8(w, v) \
    OUT4 = vec4(v[0].re); OUT5 = vec4(v[0].im); OUT6 = vec4(v[1].re); OUT7 = vec4(v[1].im);
#else
#define STORE8(w, v) \
    OUT0 = vec4(w[0].re); OUT1 = vec4(w[0].im); OUT2 = vec4(w[1].re); OUT3 = vec4(w[1].im); \
    OUT4 = vec4(v[0].re); OUT5 = vec4(v[0].im); OUT6 = vec4(v[1].re); OUT7 = vec4(v[1].im);
#endif
#endif
