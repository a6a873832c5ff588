/* shadergpgpu trace player: replays a bundle written by shadergpgpu's trace (sg.trace) in
 * WebGL2. Dependency-free; defines the global SGPlayer (also a CommonJS export).
 *
 *   const player = new SGPlayer(canvas.getContext("webgl2"));
 *   player.load(SGPlayer.parse(arrayBuffer));   // compile the programs, make the textures
 *   const outputs = player.replay();            // Float32Array per readback, in order
 *   player.section("step", 100);                // run a recorded section again, 100 times
 *   player.take()                               // the readbacks since the last take()
 *
 * A bundle (format 2; integers little-endian) is the preamble: "SGTRACE2" (the format as the
 * last character), uint32 header length H, uint32 chunk count K, uint64 total length, uint32
 * CRC-32 of the header, uint32 CRC-32 of the preamble's first 28 bytes; then the header (H bytes
 * of UTF-8 JSON), zero padding to 4 bytes, and the data: K float32 chunks back to back. The JSON
 * lists programs (GLSL ES 3.00 fragment sources), texture slots (made at load), data chunks
 * {offset, bytes, crc32}, a prelude (snapshots of textures made before the trace) and ops:
 * upload, draw, read, call, repeat, and in a program (program.js) input: the upload of a named
 * input's new data.
 *
 * SGPlayer.parse checks every length and checksum and every reference of the header (textures,
 * programs, chunks and their sizes, sections, the number of readbacks) and load() checks the
 * references again, before anything is drawn: a damaged bundle throws an Error saying what is
 * wrong ("truncated at byte N of M", "checksum mismatch in chunk K", "unknown format V, this
 * version reads W", bytes appended after the end). shadergpgpu/engine/bundle.py checks the same.
 */
(function (root) {
  "use strict";
  const FORMAT = 2;
  const MAGIC = "SGTRACE" + FORMAT;
  const PREAMBLE = 32;
  const BLEND_MODES = [null, "add", "max", "min"];

  const CRC_TABLE = (() => {
    const t = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
      t[n] = c >>> 0;
    }
    return t;
  })();

  /* CRC-32 (the zlib/PNG polynomial) of bytes[start, end). */
  function crc32(bytes, start, end) {
    let c = 0xFFFFFFFF;
    for (let i = start; i < end; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xFF] ^ (c >>> 8);
    return (c ^ 0xFFFFFFFF) >>> 0;
  }

  function fail(msg) { throw new Error("trace bundle: " + msg); }

  function ascii(bytes, a, b) { return String.fromCharCode.apply(null, bytes.subarray(a, b)); }

  function isInt(v) { return Number.isInteger(v); }

  function parse(buffer) {
    const bytes = new Uint8Array(buffer), n = bytes.length;
    const view = new DataView(bytes.buffer, bytes.byteOffset, n);
    if (n >= PREAMBLE && ascii(bytes, 0, 8) !== MAGIC) {
      const fixed = new Uint8Array(PREAMBLE - 4);
      fixed.set(bytes.subarray(0, PREAMBLE - 4));
      for (let i = 0; i < 8; i++) fixed[i] = MAGIC.charCodeAt(i);
      if (crc32(fixed, 0, PREAMBLE - 4) === view.getUint32(28, true))
        fail("checksum mismatch in the preamble: its first 8 bytes (the magic and the format) read " +
             JSON.stringify(ascii(bytes, 0, 8)) + ", the checksum says " + JSON.stringify(MAGIC));
    }
    const head7 = ascii(bytes, 0, Math.min(n, 7));
    if (head7 !== MAGIC.slice(0, head7.length))
      fail("not a shadergpgpu trace bundle (it starts " + JSON.stringify(ascii(bytes, 0, Math.min(n, 8))) +
           ", a bundle starts " + JSON.stringify(MAGIC.slice(0, 7)) + ")");
    if (n >= 8 && bytes[7] !== MAGIC.charCodeAt(7)) {
      const c = String.fromCharCode(bytes[7]), digit = c >= "0" && c <= "9";
      fail("unknown format " + (digit ? c : "byte 0x" + bytes[7].toString(16)) + ", this version reads " +
           FORMAT + (digit && Number(c) < FORMAT ? " (a bundle of an earlier version: record it again)" : ""));
    }
    if (n < PREAMBLE) {
      const total = n >= 24 ? view.getUint32(16, true) + view.getUint32(20, true) * 4294967296 : 0;
      fail("truncated at byte " + n + " of " + (total > n ? total : "at least " + PREAMBLE + " (the preamble)"));
    }
    const hlen = view.getUint32(8, true), k = view.getUint32(12, true);
    const total = view.getUint32(16, true) + view.getUint32(20, true) * 4294967296;
    if (crc32(bytes, 0, PREAMBLE - 4) !== view.getUint32(28, true))
      fail("checksum mismatch in the preamble (bytes 0.." + (PREAMBLE - 1) + ")");
    if (n < total) fail("truncated at byte " + n + " of " + total);
    if (n > total)
      fail((n - total) + " byte(s) appended after the bundle's end at byte " + total + " (the file holds " + n + ")");
    const hend = PREAMBLE + hlen, start = hend + ((4 - (hend % 4)) % 4);
    if (start > total)
      fail("the preamble declares a " + hlen + "-byte header, which ends past the bundle's end at byte " + total);
    if (crc32(bytes, PREAMBLE, hend) !== view.getUint32(24, true))
      fail("checksum mismatch in the header (bytes " + PREAMBLE + ".." + (hend - 1) + ")");
    for (let i = hend; i < start; i++)
      if (bytes[i]) fail("non-zero padding after the header (bytes " + hend + ".." + (start - 1) + ")");
    let meta;
    try {
      meta = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(PREAMBLE, hend)));
    } catch (e) { fail("the header is not JSON (" + e.message + ")"); }
    if (meta === null || typeof meta !== "object" || Array.isArray(meta)) fail("the header is not a JSON object");
    if (meta.format !== FORMAT)
      fail("the header says format " + JSON.stringify(meta.format === undefined ? null : meta.format) + ", the preamble " + FORMAT);
    const size = total - start, chunks = meta.chunks;
    if (!Array.isArray(chunks) || chunks.length !== k)
      fail("the header lists " + (Array.isArray(chunks) ? chunks.length : "no") + " chunks, the preamble declares " + k);
    let off = 0;
    chunks.forEach((c, i) => {
      if (!(c && ["offset", "bytes", "crc32"].every(f => isInt(c[f]) && c[f] >= 0)))
        fail("chunk " + i + ": expected offset, bytes, crc32 (integers), got " + JSON.stringify(c));
      if (c.offset !== off || c.bytes % 4)
        fail("chunk " + i + ": offset " + c.offset + ", " + c.bytes + " bytes (chunks are float32 and back to back: expected offset " + off + ")");
      if (off + c.bytes > size)
        fail("the header declares " + k + " chunks of " + chunks.reduce((s, x) => s + (Number(x && x.bytes) || 0), 0) +
             " data bytes, the bundle holds " + size + ": chunk " + i + " (data bytes " + off + ".." + (off + c.bytes - 1) +
             ") and any after it are missing");
      off += c.bytes;
    });
    if (off !== size) fail((size - off) + " data byte(s) after the last of the " + k + " chunks belong to none");
    chunks.forEach((c, i) => {
      const a = start + c.offset;
      if (crc32(bytes, a, a + c.bytes) !== c.crc32)
        fail("checksum mismatch in chunk " + i + " (bytes " + a + ".." + (a + c.bytes - 1) + ")");
    });
    // float32 little-endian, as written; a copy only where the data is not 4-byte aligned
    let data;
    if ((bytes.byteOffset + start) % 4 === 0) data = new Float32Array(bytes.buffer, bytes.byteOffset + start, size / 4);
    else {
      data = new Float32Array(size / 4);
      new Uint8Array(data.buffer).set(bytes.subarray(start, total));
    }
    checkStructure(meta, data);
    return { meta: meta, data: data };
  }

  /* Every reference of the header: texture slots, programs, chunks (an upload fills its whole
     texture), sections (no cycles), blend modes, read rectangles, the number of readbacks. */
  function checkStructure(meta, data) {
    const bad = msg => fail("the header is inconsistent: " + msg);
    const need = (ok, msg) => { if (!ok) bad(msg); };
    const textures = meta.textures, programs = meta.programs, chunks = meta.chunks, sections = meta.sections;
    need(Array.isArray(textures) && textures.every(t => Array.isArray(t) && t.length === 2 && t.every(v => isInt(v) && v > 0)),
         "textures must be [width, height] pairs of positive integers");
    need(Array.isArray(programs) && programs.every(p => typeof p === "string"), "programs must be GLSL sources");
    need(typeof meta.vertex === "string", "the vertex shader is missing");
    need(Array.isArray(chunks), "chunks must be a list");
    need(sections !== null && typeof sections === "object" && !Array.isArray(sections), "sections must be an object");
    need(Array.isArray(meta.reads), "reads must be a list");
    const has = (o, key) => Object.prototype.hasOwnProperty.call(o, key);
    const index = (v, items, what) => {
      need(isInt(v) && v >= 0 && v < items.length, what + " " + JSON.stringify(v) + " is not one of the " + items.length + " recorded");
      return v;
    };
    const rect = r => Array.isArray(r) && r.length === 4 && r.every(v => isInt(v) && v >= 0) && r[2] > 0 && r[3] > 0;
    const program = meta.program;
    const inputNames = new Set();
    if (program !== undefined) {
      need(program !== null && typeof program === "object" && Array.isArray(program.inputs) &&
           program.inputs.every(i => i && typeof i.name === "string"), "program: inputs must be a list of named inputs");
      for (const i of program.inputs) inputNames.add(i.name);
    }
    let dataBytes = 0;
    for (const c of chunks) dataBytes = Math.max(dataBytes, c.offset + c.bytes);
    need(!data || data.length * 4 >= dataBytes, "the chunks reach past the data");
    const check = (ops, where) => {
      need(Array.isArray(ops), where + " is not a list of operations");
      ops.forEach((op, i) => {
        const at = where + "[" + i + "]";
        need(op !== null && typeof op === "object", at + " is not an operation");
        switch (op.op) {
          case "upload": {
            const [w, h] = textures[index(op.tex, textures, at + ": texture")];
            const c = chunks[index(op.data, chunks, at + ": chunk")];
            need(c.bytes === 16 * w * h, at + ": chunk " + op.data + " holds " + c.bytes + " bytes, texture " + op.tex +
                 " (" + w + "x" + h + " RGBA float32) takes " + 16 * w * h);
            break;
          }
          case "draw": {
            index(op.prog, programs, at + ": program");
            need(Array.isArray(op.units) && op.units.every(u => Array.isArray(u) && u.length === 3 &&
                 typeof u[0] === "string" && isInt(u[1]) && u[1] >= 0), at + ": bad sampler units");
            for (const u of op.units) index(u[2], textures, at + ": sampler " + JSON.stringify(u[0]) + " texture");
            need(Array.isArray(op.out) && op.out.length > 0, at + ": no render targets");
            for (const t of op.out) index(t, textures, at + ": render target");
            need(op.viewport === null || op.viewport === undefined || rect(op.viewport), at + ": bad viewport");
            const blend = op.blend === undefined ? null : op.blend;
            need(BLEND_MODES.includes(blend), at + ": unknown blend " + JSON.stringify(blend));
            need(op.uniforms !== null && typeof op.uniforms === "object" && !Array.isArray(op.uniforms), at + ": uniforms must be an object");
            break;
          }
          case "read": {
            const [w, h] = textures[index(op.tex, textures, at + ": texture")];
            const r = op.rect;
            need(r === null || r === undefined || (rect(r) && r[0] + r[2] <= w && r[1] + r[3] <= h),
                 at + ": rectangle " + JSON.stringify(r) + " is not inside the " + w + "x" + h + " texture");
            break;
          }
          case "input":
            index(op.tex, textures, at + ": texture");
            need(inputNames.has(op.name), at + ": no program input " + JSON.stringify(op.name === undefined ? null : op.name));
            break;
          case "call":
            need(typeof op.section === "string" && has(sections, op.section),
                 at + ": no section " + JSON.stringify(op.section === undefined ? null : op.section));
            break;
          case "repeat":
            need(isInt(op.count) && op.count >= 0, at + ": bad repeat count");
            check(op.body, at + ".body");
            break;
          default: bad(at + ": unknown operation " + JSON.stringify(op.op === undefined ? null : op.op));
        }
      });
    };
    check(meta.prelude, "prelude");
    check(meta.ops, "ops");
    for (const key of Object.keys(sections)) check(sections[key], "section " + JSON.stringify(key));
    const readsIn = new Map();
    const reads = (ops, stack) => {
      let total = 0;
      for (const op of ops) {
        if (op.op === "read") total += 1;
        else if (op.op === "repeat") total += op.count * reads(op.body, stack);
        else if (op.op === "call") {
          need(!stack.has(op.section), "section " + JSON.stringify(op.section) + " calls itself");
          if (!readsIn.has(op.section)) readsIn.set(op.section, reads(sections[op.section], new Set([...stack, op.section])));
          total += readsIn.get(op.section);
        }
      }
      return total;
    };
    const made = reads(meta.prelude, new Set()) + reads(meta.ops, new Set());
    need(made === meta.reads.length, "a replay reads back " + made + " arrays, the header describes " + meta.reads.length);
  }

  function flat(v, out) {
    if (Array.isArray(v)) { for (const x of v) flat(x, out); } else out.push(Number(v));
    return out;
  }

  class SGPlayer {
    constructor(gl) {
      if (!gl || typeof gl.texStorage2D !== "function") throw new Error("SGPlayer needs a WebGL2 context");
      this.gl = gl;
      if (!gl.getExtension("EXT_color_buffer_float"))
        throw new Error("this browser's WebGL2 cannot render to float32 textures (EXT_color_buffer_float)");
      this.floatBlend = !!gl.getExtension("EXT_float_blend");
      this.vao = gl.createVertexArray();
      this.outputs = [];
    }

    /* {meta, data} of a bundle's bytes (ArrayBuffer or Uint8Array), every length, checksum and
       reference checked; a damaged bundle throws, saying what is wrong. */
    static parse(buffer) { return parse(buffer); }

    static crc32(bytes) { return crc32(bytes, 0, bytes.length); }

    load(bundle) {
      const gl = this.gl, meta = bundle.meta;
      if (meta.format !== FORMAT) fail("unknown format " + meta.format + ", this version reads " + FORMAT);
      checkStructure(meta, bundle.data);   // before anything is made or drawn
      if (meta.float_blend && !this.floatBlend)
        throw new Error("this trace blends into float32 targets and the browser has no EXT_float_blend; trace under the 'webgl2' profile");
      this.meta = meta;
      this.data = bundle.data;
      const vs = this._shader(gl.VERTEX_SHADER, meta.vertex, "vertex shader");
      this.programs = meta.programs.map((src, i) => {
        const fs = this._shader(gl.FRAGMENT_SHADER, src, "program " + i);
        const p = gl.createProgram();
        gl.attachShader(p, vs); gl.attachShader(p, fs);
        gl.linkProgram(p);
        if (!gl.getProgramParameter(p, gl.LINK_STATUS))
          throw new Error("program " + i + " does not link: " + gl.getProgramInfoLog(p));
        const uniforms = {};
        const count = gl.getProgramParameter(p, gl.ACTIVE_UNIFORMS);
        for (let u = 0; u < count; u++) {
          const info = gl.getActiveUniform(p, u);
          const name = info.name.replace(/\[0\]$/, "");
          uniforms[name] = { type: info.type, size: info.size, loc: gl.getUniformLocation(p, info.name) };
        }
        return { program: p, uniforms: uniforms };
      });
      this.textures = meta.textures.map(([w, h]) => {
        const t = gl.createTexture();
        gl.bindTexture(gl.TEXTURE_2D, t);
        gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA32F, w, h);
        gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
        gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
        gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
        gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
        return t;
      });
      this.fbos = new Map();
      return this;
    }

    _shader(kind, src, what) {
      const gl = this.gl, s = gl.createShader(kind);
      gl.shaderSource(s, src);
      gl.compileShader(s);
      if (!gl.getShaderParameter(s, gl.COMPILE_STATUS))
        throw new Error(what + " does not compile: " + gl.getShaderInfoLog(s));
      return s;
    }

    _fbo(slots) {
      const gl = this.gl, key = slots.join(",");
      let f = this.fbos.get(key);
      if (!f) {
        f = gl.createFramebuffer();
        gl.bindFramebuffer(gl.FRAMEBUFFER, f);
        slots.forEach((s, i) => gl.framebufferTexture2D(gl.FRAMEBUFFER, gl.COLOR_ATTACHMENT0 + i,
                                                        gl.TEXTURE_2D, this.textures[s], 0));
        const st = gl.checkFramebufferStatus(gl.FRAMEBUFFER);
        if (st !== gl.FRAMEBUFFER_COMPLETE) throw new Error("framebuffer incomplete (0x" + st.toString(16) + ")");
        this.fbos.set(key, f);
      }
      gl.bindFramebuffer(gl.FRAMEBUFFER, f);
      gl.drawBuffers(slots.map((_, i) => gl.COLOR_ATTACHMENT0 + i));
      return f;
    }

    _set(u, v) {
      const gl = this.gl, T = u.type, a = flat(v, []);
      switch (T) {
        case gl.FLOAT: return u.size > 1 ? gl.uniform1fv(u.loc, a) : gl.uniform1f(u.loc, a[0]);
        case gl.FLOAT_VEC2: return gl.uniform2fv(u.loc, a);
        case gl.FLOAT_VEC3: return gl.uniform3fv(u.loc, a);
        case gl.FLOAT_VEC4: return gl.uniform4fv(u.loc, a);
        case gl.INT: case gl.BOOL: return gl.uniform1iv(u.loc, a.map(Math.trunc));
        case gl.INT_VEC2: case gl.BOOL_VEC2: return gl.uniform2iv(u.loc, a);
        case gl.INT_VEC3: case gl.BOOL_VEC3: return gl.uniform3iv(u.loc, a);
        case gl.INT_VEC4: case gl.BOOL_VEC4: return gl.uniform4iv(u.loc, a);
        case gl.UNSIGNED_INT: return gl.uniform1uiv(u.loc, a);
        case gl.UNSIGNED_INT_VEC2: return gl.uniform2uiv(u.loc, a);
        case gl.UNSIGNED_INT_VEC3: return gl.uniform3uiv(u.loc, a);
        case gl.UNSIGNED_INT_VEC4: return gl.uniform4uiv(u.loc, a);
        case gl.FLOAT_MAT2: return gl.uniformMatrix2fv(u.loc, false, a);
        case gl.FLOAT_MAT3: return gl.uniformMatrix3fv(u.loc, false, a);
        case gl.FLOAT_MAT4: return gl.uniformMatrix4fv(u.loc, false, a);
        default: throw new Error("uniform type 0x" + T.toString(16) + " is not supported");
      }
    }

    _op(op) {
      const gl = this.gl;
      switch (op.op) {
        case "upload": {
          const [w, h] = this.meta.textures[op.tex];
          const c = this.meta.chunks[op.data];
          gl.bindTexture(gl.TEXTURE_2D, this.textures[op.tex]);
          gl.pixelStorei(gl.UNPACK_ALIGNMENT, 4);
          gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, w, h, gl.RGBA, gl.FLOAT,
                           this.data.subarray(c.offset / 4, (c.offset + c.bytes) / 4));
          return;
        }
        case "draw": {
          const P = this.programs[op.prog];
          gl.useProgram(P.program);
          for (const [name, unit, slot] of op.units) {
            gl.activeTexture(gl.TEXTURE0 + unit);
            gl.bindTexture(gl.TEXTURE_2D, this.textures[slot]);
            const u = P.uniforms[name];
            if (u) gl.uniform1i(u.loc, unit);
          }
          for (const name in op.uniforms) {
            const u = P.uniforms[name];
            if (u) this._set(u, op.uniforms[name]);
          }
          this._fbo(op.out);
          const [w, h] = this.meta.textures[op.out[0]];
          const vp = op.viewport || [0, 0, w, h];
          gl.viewport(vp[0], vp[1], vp[2], vp[3]);
          if (op.blend) {
            gl.enable(gl.BLEND);
            gl.blendFunc(gl.ONE, gl.ONE);
            gl.blendEquation({ add: gl.FUNC_ADD, max: gl.MAX, min: gl.MIN }[op.blend]);
          } else gl.disable(gl.BLEND);
          gl.bindVertexArray(this.vao);
          gl.drawArrays(gl.TRIANGLES, 0, 3);
          return;
        }
        case "read": {
          const [w, h] = this.meta.textures[op.tex];
          const r = op.rect || [0, 0, w, h];
          this._fbo([op.tex]);
          gl.readBuffer(gl.COLOR_ATTACHMENT0);
          const out = new Float32Array(r[2] * r[3] * 4);
          gl.readPixels(r[0], r[1], r[2], r[3], gl.RGBA, gl.FLOAT, out);
          this.outputs.push(out);
          return;
        }
        case "input": {   // a program's input (program.js): this.inputs[name] = {data, w, h}
          const inp = this.inputs && this.inputs[op.name];
          if (!inp) throw new Error("no data for the program input " + op.name + " (a program takes new inputs: run it with " +
                                    "SGProgram.run, program.js, or `shadergpgpu web-run`)");
          gl.bindTexture(gl.TEXTURE_2D, this.textures[op.tex]);
          gl.pixelStorei(gl.UNPACK_ALIGNMENT, 4);
          gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, inp.w, inp.h, gl.RGBA, gl.FLOAT, inp.data);
          return;
        }
        case "call": return this.run(this.meta.sections[op.section]);
        case "repeat": {
          for (let i = 0; i < op.count; i++) this.run(op.body);
          return;
        }
        default: throw new Error("unknown op " + op.op);
      }
    }

    run(ops) {
      for (const op of ops) this._op(op);
      return this;
    }

    /* Run the recorded computation from the start; returns every readback (Float32Array). */
    replay() {
      this.outputs = [];
      this.run(this.meta.prelude);
      this.run(this.meta.ops);
      return this.take();
    }

    /* Only the set-up: the prelude and the recorded operations before the first section call
       (uploads of the data, initial passes); then call sections yourself. */
    start() {
      this.outputs = [];
      this.run(this.meta.prelude);
      const ops = this.meta.ops, first = ops.findIndex(o => o.op === "call" || o.op === "repeat");
      this.run(first < 0 ? ops : ops.slice(0, first));
      return this.take();
    }

    /* Run a recorded section ``times`` times (e.g. more training steps). */
    section(name, times) {
      const body = this.meta.sections[name];
      if (!body) throw new Error("no section " + name + " (have: " + Object.keys(this.meta.sections).join(", ") + ")");
      for (let i = 0; i < (times === undefined ? 1 : times); i++) this.run(body);
      return this;
    }

    take() {
      const out = this.outputs;
      this.outputs = [];
      return out;
    }

    finish() { this.gl.finish(); }
  }

  root.SGPlayer = SGPlayer;
  if (typeof module !== "undefined" && module.exports) module.exports = SGPlayer;
})(typeof globalThis !== "undefined" ? globalThis : this);
