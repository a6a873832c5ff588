/* shadergpgpu trace player: replays a bundle written by shadergpgpu's trace (sg.trace) in
 * WebGL2. Dependency-free; defines the global SGPlayer (also a CommonJS export).
 *
 *   const player = new SGPlayer(canvas.getContext("webgl2"));
 *   player.load(SGPlayer.parse(arrayBuffer));   // compile the programs, make the textures
 *   const outputs = player.replay();            // Float32Array per readback, in order
 *   player.section("step", 100);                // run a recorded section again, 100 times
 *   player.take()                               // the readbacks since the last take()
 *
 * A bundle is "SGTRACE1", a little-endian uint32 JSON length, the JSON, zero padding to 4
 * bytes, then float32 data. The JSON lists programs (GLSL ES 3.00 fragment sources), texture
 * slots (made at load), data chunks [offset, count], a prelude (snapshots of textures made
 * before the trace) and ops: upload, draw, read, call, repeat.
 */
(function (root) {
  "use strict";
  const MAGIC = "SGTRACE1";

  function parse(buffer) {
    const bytes = new Uint8Array(buffer);
    const magic = String.fromCharCode.apply(null, bytes.subarray(0, 8));
    if (magic !== MAGIC) throw new Error("not a shadergpgpu trace bundle");
    const n = new DataView(buffer).getUint32(8, true);
    const meta = JSON.parse(new TextDecoder().decode(bytes.subarray(12, 12 + n)));
    let start = 12 + n;
    start += (4 - (start % 4)) % 4;
    const data = new Float32Array(buffer, start, (buffer.byteLength - start) / 4);
    return { meta: meta, data: data };
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

    static parse(buffer) { return parse(buffer); }

    load(bundle) {
      const gl = this.gl, meta = bundle.meta;
      if (meta.format !== 1) throw new Error("unknown bundle format " + meta.format);
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
          const [off, n] = this.meta.data[op.data];
          gl.bindTexture(gl.TEXTURE_2D, this.textures[op.tex]);
          gl.pixelStorei(gl.UNPACK_ALIGNMENT, 4);
          gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, w, h, gl.RGBA, gl.FLOAT, this.data.subarray(off, off + n));
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
