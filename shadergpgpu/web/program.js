/* shadergpgpu programs: a recorded computation that takes new inputs, run in WebGL2.
 * Needs player.js (SGPlayer); defines the global SGProgram (also a CommonJS export).
 *
 *   const p = await SGProgram.load("model.sgprog");      // or SGProgram.fromBytes(buf, gl)
 *   const out = p.run({X: float32Array, rows: n});       // {name: Float32Array}
 *                                                         // (rows: default X.length / columns)
 *   p.inputs, p.outputs, p.maxRows, p.model               // what the program takes and gives
 *   p.release()                                           // its textures and shaders deleted
 *
 * A program is a trace bundle (player.js: format, lengths, CRC-32 of the header and of every
 * chunk, every reference) whose header adds "program": named inputs (uploaded by "input"
 * operations, with the layout that places element (r, c) in the texture and an optional
 * (x - shift) / scale step), named outputs (readbacks, with their layouts), max_rows, the mode
 * ("rows": the passes that write row textures draw only their first ceil(n / q) texture rows
 * (q = 1, or 2 or 4 for textures of blocks of rows), with the row-count uniforms set to match;
 * "pad": the computation runs at max_rows with rows past n zero)
 * and post steps on the host (argmax to labels, thresholds, SVC votes). Everything is checked
 * when the program is loaded, before anything is drawn: a damaged program throws, never runs.
 * shadergpgpu/frontends/webexport.py writes programs; shadergpgpu/engine/bundle.py
 * (check_program) checks the same.
 */
(function (root) {
  "use strict";
  const SGPlayer = root.SGPlayer || (typeof require !== "undefined" ? require("./player.js") : null);
  const POST_KINDS = ["argmax", "threshold", "proba2", "neg", "svc_vote", "svc_ovr"];
  const ROW_DIVISORS = [1, 2, 4];     // row textures: one texel row per q rows

  function fail(msg) { throw new Error("trace bundle: the header is inconsistent: program: " + msg); }
  const isInt = Number.isInteger;
  const js = v => JSON.stringify(v === undefined ? null : v);

  /* [width, height] of the texture of a layout (shadergpgpu.engine.layout.Layout's math). */
  function textureOf(lay) {
    const row = lay.order === "row", major = row ? lay.rows : lay.cols, minor = row ? lay.cols : lay.rows;
    const gw = Math.ceil(minor / (lay.packed ? 4 : 1)), n = major * gw, mx = lay.max_size;
    if (gw > mx || major > mx) { const w = Math.min(mx, n); return [w, Math.ceil(n / w)]; }
    return [gw, major];
  }

  /* Where logical element (r, c) of a layout lies in its raw RGBA float texels (texW wide). */
  function texelIndex(lay, texW, r, c) {
    const row = lay.order === "row", i = row ? r : c, j = row ? c : r, pack = lay.packed ? 4 : 1;
    const gj = Math.floor(j / pack), comp = j - gj * pack;
    const minor = row ? lay.cols : lay.rows, major = row ? lay.rows : lay.cols;
    const gw = Math.ceil(minor / pack);
    if (gw > lay.max_size || major > lay.max_size) {
      const t = i * gw + gj;
      return ((Math.floor(t / texW) * texW) + (t % texW)) * 4 + comp;
    }
    return (i * texW + gj) * 4 + comp;
  }

  function layoutOk(l) {
    return l && ["rows", "cols", "max_size"].every(k => isInt(l[k]) && l[k] > 0) &&
      typeof l.packed === "boolean" && (l.order === "row" || l.order === "col");
  }
  const sameLayout = (a, b) => ["rows", "cols", "max_size", "packed", "order"].every(k => a[k] === b[k]);

  /* The checks of shadergpgpu.engine.bundle.check_program. */
  function checkProgram(meta) {
    const need = (ok, msg) => { if (!ok) fail(msg); };
    const p = meta.program, textures = meta.textures, ops = meta.ops;
    need(p && typeof p === "object", "no program description (a trace bundle, not a program)");
    need(p.version === 1, "unknown program version " + js(p.version));
    const M = p.max_rows;
    need(isInt(M) && M > 0, "max_rows must be a positive integer");
    need(p.mode === "rows" || p.mode === "pad", "unknown mode " + js(p.mode));
    const names = new Set();
    for (const s of p.inputs) {
      need(!names.has(s.name), "input " + js(s.name) + " is listed twice");
      names.add(s.name);
      const l = s.layout;
      need(layoutOk(l) && l.rows === M && l.cols === s.cols, "input " + js(s.name) + ": bad layout " + js(l));
      const [w, h] = textureOf(l);
      need(isInt(s.tex) && s.tex >= 0 && s.tex < textures.length && textures[s.tex][0] === w && textures[s.tex][1] === h,
           "input " + js(s.name) + ": texture " + js(s.tex) + " is not its layout's");
      const uses = ops.filter(o => o.op === "input" && o.name === s.name);
      need(uses.length === 1 && uses[0].tex === s.tex, "input " + js(s.name) + ": the operations do not upload it once into texture " + s.tex);
      const pre = s.pre;
      need(pre === null || pre === undefined || (typeof pre === "object" && ["shift", "scale"].every(k =>
           Array.isArray(pre[k]) && pre[k].length === s.cols && pre[k].every(v => typeof v === "number"))),
           "input " + js(s.name) + ": bad pre step");
    }
    const outs = new Set();
    for (const o of p.outputs || []) {
      need(typeof o.name === "string" && !outs.has(o.name) && !names.has(o.name), "output " + js(o.name) + ": a name used twice");
      outs.add(o.name);
      need(isInt(o.read) && o.read >= 0 && o.read < meta.reads.length, "output " + js(o.name) + ": no readback " + js(o.read));
      const l = o.layout, rl = meta.reads[o.read].layout;
      need(layoutOk(l) && rl && sameLayout(l, rl) && Array.isArray(o.shape) && o.shape.length > 0 && o.shape[0] === M &&
           o.shape.reduce((a, b) => a * b, 1) === l.rows * l.cols, "output " + js(o.name) + ": bad layout or shape");
    }
    const rows = p.rows;
    need((rows === null || rows === undefined) === (p.mode === "pad"), "rows: given exactly in mode 'rows'");
    if (rows) {
      const rt = rows.textures;
      need(Array.isArray(rt) && rt.every(e => Array.isArray(e) && e.length === 2 && isInt(e[0]) && e[0] >= 0 &&
           e[0] < textures.length && ROW_DIVISORS.includes(e[1]) && textures[e[0]][1] === Math.ceil(M / e[1])),
           "rows: textures must be [slot, q] of texture slots ceil(max_rows / q) texels high");
      const qOf = new Map(rt.map(e => [e[0], e[1]]));
      for (const [i, subs] of rows.draws || []) {
        need(isInt(i) && i >= 0 && i < ops.length && ops[i].op === "draw" && ops[i].out.every(t => qOf.has(t)) &&
             new Set(ops[i].out.map(t => qOf.get(t))).size === 1, "rows: operation " + js(i) + " is no draw into row textures");
        need(Array.isArray(subs) && subs.every(s => Array.isArray(s) && s.length === 3 &&
             Object.prototype.hasOwnProperty.call(ops[i].uniforms, s[0]) && isInt(s[1]) && ROW_DIVISORS.includes(s[2])),
             "rows: bad uniforms of draw " + i);
      }
      for (const i of rows.reads || [])
        need(isInt(i) && i >= 0 && i < ops.length && ops[i].op === "read" && qOf.has(ops[i].tex),
             "rows: operation " + js(i) + " is no read of a row texture");
      for (const s of p.inputs)
        need(qOf.get(s.tex) === 1 && s.layout.order === "row", "input " + js(s.name) + ": not a row texture");
    }
    const produced = new Set(outs);
    for (const q of p.post || []) {
      need(q && POST_KINDS.includes(q.kind) && produced.has(q.from) && typeof q.name === "string" && !produced.has(q.name),
           "bad post step " + js(q));
      produced.add(q.name);
    }
  }

  class SGProgram {
    /* A program from its bytes (ArrayBuffer or Uint8Array), checked before anything is made. */
    static fromBytes(buffer, gl) {
      const bundle = SGPlayer.parse(buffer);        // lengths, checksums, references
      checkProgram(bundle.meta);
      if (!gl) gl = (typeof document !== "undefined" ? document.createElement("canvas") : new OffscreenCanvas(1, 1)).getContext("webgl2");
      if (!gl) throw new Error("this browser gives no WebGL2 context");
      return new SGProgram(gl, bundle);
    }

    static async load(url, gl) {
      const r = await fetch(url);
      if (!r.ok) throw new Error("program " + url + ": HTTP " + r.status);
      return SGProgram.fromBytes(await r.arrayBuffer(), gl);
    }

    /* A program embedded in a page as base64 text. */
    static fromBase64(text, gl) {
      const bin = atob(text), bytes = new Uint8Array(bin.length);
      for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      return SGProgram.fromBytes(bytes, gl);
    }

    constructor(gl, bundle) {
      checkProgram(bundle.meta);
      this.player = new SGPlayer(gl).load(bundle);
      const meta = this.meta = bundle.meta, p = this.program = meta.program;
      this.maxRows = p.max_rows;
      this.mode = p.mode;
      this.model = p.model || {};
      this.inputs = p.inputs.map(s => ({ name: s.name, cols: s.cols }));
      this.outputs = p.outputs.map(o => o.name).concat((p.post || []).map(q => q.name));
      // uploads of constant data (a texture no pass draws into, uploaded once): made once
      const drawn = new Set(), uploads = new Map();
      for (const op of meta.ops) {
        if (op.op === "draw") op.out.forEach(t => drawn.add(t));
        if (op.op === "upload") uploads.set(op.tex, (uploads.get(op.tex) || 0) + 1);
      }
      this.steady = meta.ops.filter(op => !(op.op === "upload" && !drawn.has(op.tex) && uploads.get(op.tex) === 1));
      this.started = false;
      this.buffers = {};
      this.player.inputs = {};
    }

    _pack(spec, x, n) {
      const l = spec.layout, [W, H] = this.meta.textures[spec.tex], pre = spec.pre, cols = spec.cols;
      const h = this.mode === "rows" ? n : H;
      const fast = !pre && l.order === "row" && l.packed && cols % 4 === 0 && W * 4 === cols;
      if (fast && this.mode === "rows") return { data: x.subarray(0, n * cols), w: W, h: n };
      let buf = this.buffers[spec.name];
      if (!buf || buf.length < W * H * 4) buf = this.buffers[spec.name] = new Float32Array(W * H * 4);
      const data = buf.subarray(0, W * h * 4);
      data.fill(0);
      if (fast) data.set(x.subarray(0, n * cols));
      else if (l.order === "row" && textureOf(l)[1] === l.rows) {
        const pack = l.packed ? 4 : 1;
        for (let r = 0; r < n; r++) {
          const base = r * W * 4;
          for (let c = 0; c < cols; c++) {
            const gj = Math.floor(c / pack), v = x[r * cols + c];
            data[base + gj * 4 + (c - gj * pack)] = pre ? Math.fround((v - pre.shift[c]) / pre.scale[c]) : v;
          }
        }
      } else {
        for (let r = 0; r < n; r++)
          for (let c = 0; c < cols; c++) {
            const v = x[r * cols + c];
            data[texelIndex(l, W, r, c)] = pre ? Math.fround((v - pre.shift[c]) / pre.scale[c]) : v;
          }
      }
      return { data: data, w: W, h: h };
    }

    /* Run on new data: {name: Float32Array of rows x cols, rows: n} -> {output: Float32Array}
       (rows x the output's width, row-major). */
    run(inputs) {
      const M = this.maxRows, meta = this.meta, p = this.program;
      let n = inputs.rows;
      if (n === undefined && p.inputs.length && inputs[p.inputs[0].name] !== undefined)
        n = inputs[p.inputs[0].name].length / p.inputs[0].cols;   // rows from the first input
      if (this.released) throw new Error("this program was released");
      if (!isInt(n) || n < 1 || n > M) throw new RangeError("rows: " + js(n) + " is not a row count from 1 to max_rows = " + M);
      for (const s of p.inputs) {
        let x = inputs[s.name];
        if (x === undefined) throw new TypeError("input " + s.name + " is missing (the program takes " + p.inputs.map(i => i.name).join(", ") + ")");
        if (!(x instanceof Float32Array)) x = Float32Array.from(x);
        if (x.length !== n * s.cols)
          throw new RangeError("input " + s.name + ": " + x.length + " values, " + n + " rows x " + s.cols + " columns take " + n * s.cols);
        this.player.inputs[s.name] = this._pack(s, x, n);
      }
      if (p.rows) {
        const qOf = this.qOf || (this.qOf = new Map(p.rows.textures.map(e => [e[0], e[1]])));
        for (const [i, subs] of p.rows.draws) {
          const op = meta.ops[i], w = meta.textures[op.out[0]][0];
          op.viewport = [0, 0, w, Math.ceil(n / qOf.get(op.out[0]))];
          for (const [name, pos, q] of subs) {
            const v = Math.ceil(n / q);
            if (pos < 0) op.uniforms[name] = v; else op.uniforms[name][pos] = v;
          }
        }
        for (const i of p.rows.reads) {
          const op = meta.ops[i];
          op.rect = [0, 0, meta.textures[op.tex][0], Math.ceil(n / qOf.get(op.tex))];
        }
      }
      const pl = this.player;
      pl.outputs = [];
      if (!this.started) { pl.run(meta.prelude); pl.run(meta.ops); this.started = true; }
      else pl.run(this.steady);
      const raws = pl.take(), out = {};
      for (const o of p.outputs) {
        const raw = raws[o.read], l = o.layout, k = o.shape.slice(1).reduce((a, b) => a * b, 1);
        const texW = meta.textures[meta.ops.filter(q => q.op === "read")[o.read].tex][0];
        const res = new Float32Array(n * k);
        const fast = l.order === "row" && l.packed && l.cols === k && texW * 4 === k;
        if (fast) res.set(raw.subarray(0, n * k));
        else for (let f = 0; f < n * k; f++) {
          const r = Math.floor(f / l.cols), c = f - r * l.cols;
          res[f] = raw[texelIndex(l, texW, r, c)];
        }
        res.width = k;
        out[o.name] = res;
      }
      for (const q of p.post || []) out[q.name] = post(q, out[q.from], n);
      return out;
    }

    finish() { this.player.finish(); }

    /* Delete the program's textures, framebuffers and shader programs. */
    release() {
      const gl = this.player.gl, pl = this.player;
      for (const t of pl.textures || []) gl.deleteTexture(t);
      for (const f of (pl.fbos || new Map()).values()) gl.deleteFramebuffer(f);
      for (const P of pl.programs || []) gl.deleteProgram(P.program);
      pl.textures = []; pl.programs = []; pl.fbos = new Map();
      this.released = true;
    }
  }

  /* The host steps after the passes (scikit-learn's predict from the network's outputs...). */
  function post(q, src, n) {
    const k = src.length / n;
    let res;
    switch (q.kind) {
      case "argmax": {
        res = new Float32Array(n);
        for (let r = 0; r < n; r++) {
          let best = 0;
          for (let j = 1; j < k; j++) if (src[r * k + j] > src[r * k + best]) best = j;
          res[r] = q.labels ? q.labels[best] : best;
        }
        break;
      }
      case "threshold": {
        res = new Float32Array(n * k);
        const at = q.at === undefined ? 0.5 : q.at;
        for (let i = 0; i < n * k; i++) res[i] = q.labels ? q.labels[src[i] > at ? 1 : 0] : (src[i] > at ? 1 : 0);
        break;
      }
      case "proba2": {
        res = new Float32Array(2 * n);
        for (let r = 0; r < n; r++) { res[2 * r] = 1 - src[r]; res[2 * r + 1] = src[r]; }
        res.width = 2;
        break;
      }
      case "neg": {
        const c = q.col || 0;
        res = new Float32Array(n);
        for (let r = 0; r < n; r++) res[r] = -src[r * k + c];
        break;
      }
      case "svc_vote": case "svc_ovr": {
        const nc = q.n_classes, votes = new Float64Array(nc), conf = new Float64Array(nc);
        res = new Float32Array(q.kind === "svc_vote" ? n : n * nc);
        for (let r = 0; r < n; r++) {
          votes.fill(0); conf.fill(0);
          let pi = 0;
          for (let a = 0; a < nc; a++)
            for (let b = a + 1; b < nc; b++, pi++) {
              const d = src[r * k + pi];
              if (d > 0) votes[a] += 1; else votes[b] += 1;
              conf[a] += d; conf[b] -= d;
            }
          if (q.kind === "svc_vote") {
            let best = 0;
            for (let j = 1; j < nc; j++) if (votes[j] > votes[best]) best = j;
            res[r] = q.labels ? q.labels[best] : best;
          } else
            for (let j = 0; j < nc; j++) res[r * nc + j] = votes[j] + conf[j] / (3 * (Math.abs(conf[j]) + 1));
        }
        if (q.kind === "svc_ovr") res.width = nc;
        break;
      }
      default: throw new Error("unknown post step " + q.kind);
    }
    if (res.width === undefined) res.width = res.length / n;
    return res;
  }

  SGProgram.check = checkProgram;
  SGProgram.textureOf = textureOf;
  SGProgram.texelIndex = texelIndex;
  root.SGProgram = SGProgram;
  root.Program = root.Program || SGProgram;
  if (typeof module !== "undefined" && module.exports) module.exports = SGProgram;
})(typeof globalThis !== "undefined" ? globalThis : this);
