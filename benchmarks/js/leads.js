/* The browser side of benchmarks/js_leads.py: the same workloads in tfjs (webgl backend) or in
   gpu.js (WebGL2 kernels), timed by the same rule as the Python side, in headless Chromium.

   Query: ?lib=tfjs|gpujs&cfg=URL. The config (JSON, written by js_leads.py) names the workload
   ("matmul", "mlp" or "blur"), the timing rule and the cases; every case's float32 data lies in
   /data.bin at [offset, length] (in float32 elements). The library is loaded from /lib/ (the
   harness serves it from its cache folder; it is not part of the repository).

   The timing rule (timeBatches; js_leads.py's time_batches is the same; a null rule times
   nothing, for the check-only run of tests/frontends/test_js_leads.py): `warmup` calls, a sync;
   one call and a sync timed to size the batch (the fewest calls, at most `max_batch`, lasting
   `min_batch_s`); then `repeats` batches, each timed from its first call to the end of the sync
   that follows its last call; ms per call = batch time / calls; the fastest and the median
   batch are reported. The sync is a 1-element readback of the last result (tfjs: dataSync() of
   a 1-element slice; gpu.js: a 1-output kernel reading element [0][0], read back), which waits
   for every command issued before it. Inputs stay on the GPU across calls: tensors / textures
   are made once before timing; no call uploads host data.

   Calls are chained: call k + 1 takes call k's result as its input (matmul: B; blur: the
   image; the MLP step: the weights), on every side. A result that is overwritten before
   anything reads it may be skipped by the renderer: under Chromium on llvmpipe, 8 gpu.js blur
   calls into the same textures took 20 ms a call, one call with a sync 88 ms and 8 chained
   calls 112 ms; chained, every call's work is needed by the final sync.

   Before timing, one call's full result is read back and POSTed with the timings, and the
   harness holds it against float64 numpy. The result is POSTed to /result by post() of
   shadergpgpu/web/post.js: "SGRESULT", uint32 JSON length, JSON, padding, float32 data. */
"use strict";

function renderer(gl) {
  const dbg = gl.getExtension("WEBGL_debug_renderer_info");
  return dbg ? gl.getParameter(dbg.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER);
}

// ---- the timing rule -------------------------------------------------------------------------
function timeBatches(call, sync, rule) {
  for (let i = 0; i < rule.warmup; i++) call();
  sync();
  let t0 = performance.now();
  call();
  sync();
  const one = (performance.now() - t0) / 1e3;
  const fit = Math.ceil(rule.min_batch_s / Math.max(one, 1e-6));
  const batch = Math.max(1, Math.min(rule.max_batch, fit));
  const times = [];
  for (let r = 0; r < rule.repeats; r++) {
    t0 = performance.now();
    for (let b = 0; b < batch; b++) call();
    sync();
    times.push((performance.now() - t0) / batch);
  }
  const s = times.slice().sort((a, b) => a - b);
  return { min_ms: s[0], median_ms: s[Math.floor(s.length / 2)], batch: batch,
           repeats: rule.repeats, times_ms: times };
}

// a check-only run (rule null: tests/frontends/test_js_leads.py) times nothing
function timed(call, sync, rule) {
  return rule ? timeBatches(call, sync, rule) : {};
}

function flat2d(rows) {            // gpu.js 2-D output (array of Float32Array rows) -> one array
  const n = rows.length, m = rows[0].length, out = new Float32Array(n * m);
  for (let i = 0; i < n; i++) out.set(rows[i], i * m);
  return out;
}

// ---- tfjs (webgl backend) ---------------------------------------------------------------------
const TFJS = {
  async setup() {
    await loadScript("/lib/tf.min.js");
    await tf.setBackend("webgl");
    await tf.ready();
    const env = tf.env();
    const info = {
      lib: "tfjs", version: tf.version.tfjs, backend: tf.getBackend(),
      webgl_version: env.getNumber("WEBGL_VERSION"),
      float32: env.getBool("WEBGL_RENDER_FLOAT32_ENABLED"),
      pack: env.getBool("WEBGL_PACK"),
      renderer: renderer(tf.backend().gpgpu.gl),
    };
    if (info.backend !== "webgl") throw new Error(`tfjs backend is ${info.backend}, not webgl`);
    if (info.webgl_version !== 2) throw new Error(`tfjs runs WebGL ${info.webgl_version}, not 2`);
    if (!info.float32) throw new Error("tfjs renders to float16 here, not float32");
    return info;
  },

  sync(t) {   // a 1-element readback of t (waits for everything issued before it)
    const s = tf.slice(t, new Array(t.rank).fill(0), new Array(t.rank).fill(1));
    s.dataSync();
    s.dispose();
  },

  matmul(c, data, rule) {
    const A = tf.tensor2d(data(c.A), [c.n, c.n]);
    const B = tf.tensor2d(data(c.B), [c.n, c.n]);
    let C = B;      // chained: each call's B is the previous call's C
    const call = () => { const prev = C; C = tf.matMul(A, prev); if (prev !== B) prev.dispose(); };
    call();
    const check = C.dataSync().slice();
    const t = timed(call, () => this.sync(C), rule);
    tf.dispose([A, B, C]);
    return [{ variant: "matMul", check: check, ...t }];
  },

  mlp(c, data, rule) {
    const sz = c.sizes, L = sz.length - 1, N = c.N;
    const X = tf.tensor2d(data(c.X), [N, sz[0]]);
    const T = tf.tensor2d(data(c.T), [N, sz[L]]);
    const Ws = [], bs = [];
    for (let m = 0; m < L; m++) {
      const w = data(c.W[m]);             // (sz[m] + 1) x sz[m + 1], row 0 the biases
      bs.push(tf.variable(tf.tensor1d(w.subarray(0, sz[m + 1]))));
      Ws.push(tf.variable(tf.tensor2d(w.subarray(sz[m + 1]), [sz[m], sz[m + 1]])));
    }
    const lr = tf.scalar(c.lr), one = tf.scalar(1);
    // one step: forward (fused matMul + bias + sigmoid), output deltas, backpropagated deltas,
    // gradients, plain SGD; every new weight is computed from the old ones before any assign
    const step = () => tf.tidy(() => {
      const acts = [X];
      for (let m = 0; m < L; m++) {
        acts.push(tf.fused.matMul({ a: acts[m], b: Ws[m], bias: bs[m], activation: "sigmoid" }));
      }
      const y = acts[L];
      let d = tf.mul(tf.sub(y, T), tf.mul(y, tf.sub(one, y)));
      const upd = [];
      for (let m = L - 1; m >= 0; m--) {
        const a = acts[m];
        const g = tf.matMul(a, d, true, false);
        const g0 = tf.sum(d, 0);
        if (m > 0) d = tf.mul(tf.matMul(d, Ws[m], false, true), tf.mul(a, tf.sub(one, a)));
        upd.push([m, tf.sub(Ws[m], tf.mul(lr, g)), tf.sub(bs[m], tf.mul(lr, g0))]);
      }
      for (const [m, W, b] of upd) { Ws[m].assign(W); bs[m].assign(b); }
    });
    step();
    const parts = [];
    for (let m = 0; m < L; m++) {
      parts.push(tf.tidy(() => tf.concat([bs[m].reshape([1, -1]), Ws[m]], 0)).dataSync());
    }
    const check = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((off, p) => { check.set(p, off); return off + p.length; }, 0);
    const t = timed(step, () => this.sync(Ws[0]), rule);
    tf.dispose([X, T, lr, one, ...Ws, ...bs]);
    return [{ variant: "manual-grads", check: check, ...t }];
  },

  blur(c, data, rule) {
    const K = c.K;
    const x = tf.tensor4d(data(c.img), [1, c.h, c.w, 1]);
    const taps = data(c.taps);
    const fh = tf.tensor4d(taps, [1, K, 1, 1]), fv = tf.tensor4d(taps, [K, 1, 1, 1]);
    const variants = {   // 'same' padding: zeros outside the image (border "constant")
      conv2d: (y) => tf.conv2d(tf.conv2d(y, fh, 1, "same"), fv, 1, "same"),
      depthwiseConv2d: (y) => tf.depthwiseConv2d(tf.depthwiseConv2d(y, fh, 1, "same"), fv, 1,
                                                 "same"),
    };
    const out = [];
    for (const [name, f] of Object.entries(variants)) {
      let Y = x;    // chained: each call blurs the previous call's result
      const call = () => {
        const prev = Y;
        Y = tf.tidy(() => f(prev));
        if (prev !== x) prev.dispose();
      };
      call();
      const check = Y.dataSync().slice();
      const t = timed(call, () => this.sync(Y), rule);
      Y.dispose();
      out.push({ variant: name, check: check, ...t });
    }
    tf.dispose([x, fh, fv]);
    return out;
  },
};

// ---- gpu.js (WebGL2 kernels, pipeline mode) ---------------------------------------------------
// Calls are chained on every side (see the timing rule above); a pipeline kernel may not read
// its own output texture, so gpu.js' chained kernels (matmul, blur-v, the MLP's updates) come
// in two copies used in turn.
const GPUJS = {
  async setup() {
    await loadScript("/lib/gpu-browser.min.js");
    // where the browser has WebGPU, window.GPU is WebGPU's interface, gpu.js' bundle does not
    // bind its class over it, and its UMD wrapper sets window.GPU to its module object instead
    const g = window.GPU;
    const lib = g && g.GPU ? g : { GPU: g, input: g.input, WebGL2Kernel: g.WebGL2Kernel };
    this.lib = lib;
    if (!lib.GPU.isWebGL2Supported) throw new Error("gpu.js finds no WebGL2 here");
    this.gpu = new lib.GPU({ mode: "gpu" });
    this.kernels = [];
    const probe = this.kernel("setup", function () { return 1; }, { output: [1] });
    probe();
    this.verify();
    return { lib: "gpu.js", mode: this.gpu.mode, kernel: "WebGL2Kernel",
             renderer: renderer(this.gpu.context) };
  },

  // every kernel is made here, single precision (float32 textures); verify() holds each one
  // that has run to WebGL2 (gpu.js silently falls back to its CPU kernel on some failures)
  kernel(name, fn, settings) {
    const k = this.gpu.createKernel(fn, { precision: "single", ...settings });
    this.kernels.push([name, k]);
    return k;
  },

  verify() {
    let n = 0;
    for (const [name, k] of this.kernels) {
      const impl = k.kernel;
      if (!impl || !impl.built) continue;
      if (impl.constructor !== this.lib.WebGL2Kernel || impl.constructor.mode !== "gpu") {
        throw new Error(`gpu.js kernel ${name} runs as ${impl.constructor.name} ` +
                        `(mode ${impl.constructor.mode}), not WebGL2Kernel`);
      }
      if (impl.precision !== "single") {
        throw new Error(`gpu.js kernel ${name} runs in ${impl.precision} precision`);
      }
      n++;
    }
    return n;
  },

  upload(name, values, cols, rows) {   // a texture holding values (rows x cols), made once
    const k = this.kernel("upload " + name, function (a) {
      return a[this.thread.y][this.thread.x];
    }, { output: [cols, rows], pipeline: true });
    return k(this.lib.input(values, [cols, rows]));
  },

  prober(name) {                       // a 1-output kernel read back: the sync
    const k = this.kernel("sync " + name, function (a) { return a[0][0]; }, { output: [1] });
    return (tex) => k(tex);
  },

  matmul(c, data, rule) {
    const n = c.n;
    const A = this.upload("A", data(c.A), n, n), B = this.upload("B", data(c.B), n, n);
    const mm = [0, 1].map((p) => this.kernel("matmul." + p, function (a, b) {
      let s = 0;
      for (let k = 0; k < this.constants.n; k++) {
        s += a[this.thread.y][k] * b[k][this.thread.x];
      }
      return s;
    }, { output: [n, n], constants: { n: n }, pipeline: true, loopMaxIterations: n }));
    const probe = this.prober("matmul");
    let C = B, p = 0;    // chained: each call's B is the previous call's C
    const call = () => { C = mm[p](A, C); p ^= 1; };
    call();
    const check = flat2d(C.toArray());
    const t = timed(call, () => probe(C), rule);
    return [{ variant: "kernel", check: check, webgl2_kernels: this.verify(), ...t }];
  },

  mlp(c, data, rule) {
    const sz = c.sizes, L = sz.length - 1, N = c.N;
    const X = this.upload("X", data(c.X), sz[0], N), T = this.upload("T", data(c.T), sz[L], N);
    let W = [];
    for (let m = 0; m < L; m++) W.push(this.upload("W" + m, data(c.W[m]), sz[m + 1], sz[m] + 1));
    const fwd = [], dHid = [], upd = [[], []];
    for (let m = 0; m < L; m++) {
      fwd.push(this.kernel("forward" + m, function (a, w) {
        let s = w[0][this.thread.x];
        for (let i = 0; i < this.constants.nin; i++) {
          s += a[this.thread.y][i] * w[i + 1][this.thread.x];
        }
        return 1 / (1 + Math.exp(-s));
      }, { output: [sz[m + 1], N], constants: { nin: sz[m] }, pipeline: true,
           loopMaxIterations: sz[m] }));
      dHid.push(m === 0 ? null : this.kernel("delta" + m, function (d, w, a) {
        let s = 0;
        for (let j = 0; j < this.constants.nout; j++) {
          s += d[this.thread.y][j] * w[this.thread.x + 1][j];
        }
        const v = a[this.thread.y][this.thread.x];
        return s * v * (1 - v);
      }, { output: [sz[m], N], constants: { nout: sz[m + 1] }, pipeline: true,
           loopMaxIterations: sz[m + 1] }));
      // gradient and update in one kernel per layer; two copies (ping-pong), since a pipeline
      // kernel may not read its own output texture
      for (const p of [0, 1]) {
        upd[p].push(this.kernel(`update${m}.${p}`, function (w, a, d) {
          const i = this.thread.y;
          const j = this.thread.x;
          let g = 0;
          if (i === 0) {
            for (let n = 0; n < this.constants.N; n++) g += d[n][j];
          } else {
            for (let n = 0; n < this.constants.N; n++) g += a[n][i - 1] * d[n][j];
          }
          return w[i][j] - this.constants.lr * g;
        }, { output: [sz[m + 1], sz[m] + 1], constants: { N: N, lr: c.lr }, pipeline: true,
             loopMaxIterations: N }));
      }
    }
    const dOut = this.kernel("delta-out", function (y, t) {
      const v = y[this.thread.y][this.thread.x];
      return (v - t[this.thread.y][this.thread.x]) * v * (1 - v);
    }, { output: [sz[L], N], pipeline: true });
    let cur = 0;
    const step = () => {
      const acts = [X];
      for (let m = 0; m < L; m++) acts.push(fwd[m](acts[m], W[m]));
      let d = dOut(acts[L], T);
      const next = new Array(L);
      for (let m = L - 1; m >= 0; m--) {
        next[m] = upd[cur][m](W[m], acts[m], d);
        if (m > 0) d = dHid[m](d, W[m], acts[m]);
      }
      W = next;
      cur ^= 1;
    };
    step();
    const parts = W.map((w) => flat2d(w.toArray()));
    const check = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    parts.reduce((off, p) => { check.set(p, off); return off + p.length; }, 0);
    const probe = this.prober("mlp");
    const t = timed(step, () => probe(W[0]), rule);
    return [{ variant: "kernels", check: check, webgl2_kernels: this.verify(), ...t }];
  },

  blur(c, data, rule) {
    const h = c.h, w = c.w;
    const img = this.upload("image", data(c.img), w, h);
    const consts = { K: c.K, R: (c.K - 1) / 2, W: w, H: h, taps: Array.from(data(c.taps)) };
    const H = this.kernel("blur-h", function (x) {
      let s = 0;
      for (let k = 0; k < this.constants.K; k++) {
        const xx = this.thread.x + k - this.constants.R;
        if (xx >= 0 && xx < this.constants.W) s += this.constants.taps[k] * x[this.thread.y][xx];
      }
      return s;
    }, { output: [w, h], constants: consts, pipeline: true, loopMaxIterations: c.K });
    const V = [0, 1].map((p) => this.kernel("blur-v." + p, function (x) {
      let s = 0;
      for (let k = 0; k < this.constants.K; k++) {
        const yy = this.thread.y + k - this.constants.R;
        if (yy >= 0 && yy < this.constants.H) s += this.constants.taps[k] * x[yy][this.thread.x];
      }
      return s;
    }, { output: [w, h], constants: consts, pipeline: true, loopMaxIterations: c.K }));
    const probe = this.prober("blur");
    let Y = img, p = 0;  // chained: each call blurs the previous call's result
    const call = () => { Y = V[p](H(Y)); p ^= 1; };
    call();
    const check = flat2d(Y.toArray());
    const t = timed(call, () => probe(Y), rule);
    return [{ variant: "kernels", check: check, webgl2_kernels: this.verify(), ...t }];
  },
};

(async () => {
  try {
    const q = new URLSearchParams(location.search);
    const lib = { tfjs: TFJS, gpujs: GPUJS }[q.get("lib")];
    if (!lib) throw new Error("unknown lib " + q.get("lib"));
    const cfg = await (await fetch(q.get("cfg"))).json();
    const buf = new Float32Array(await (await fetch(cfg.data)).arrayBuffer());
    const data = (ref) => buf.subarray(ref[0], ref[0] + ref[1]);
    const info = await lib.setup();
    const results = [], arrays = [];
    for (const c of cfg.cases) {
      for (const r of lib[cfg.work](c, data, cfg.rule)) {
        arrays.push(r.check);
        delete r.check;
        results.push({ case: c.name, ...r });
      }
    }
    await post({ ok: true, info: info, results: results, lengths: arrays.map((a) => a.length) },
               arrays);
  } catch (e) {
    await post({ ok: false, error: String((e && e.stack) || e), lengths: [] }, []);
  }
})();
