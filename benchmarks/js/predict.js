/* The browser side of benchmarks/web_predict.py: predict latency of one dense network for 1 and
   for 1,000 inputs, as an exported program (SGProgram.run) and as a tfjs (webgl backend, WebGL2,
   float32 render targets) LayersModel with the same weights (model.predict), in one page.

   The config (/cfg.json) gives the layer sizes, the activation, where each weight matrix and
   bias and each input set lie in /data.bin ([offset, length] in float32 elements), and the
   timing: per row count, warmup runs then timed runs, ours and tfjs alternating round by round.
   One run of ours: p.run({X, rows: n}) (the upload of X, the passes, the readback of the
   probabilities). One run of tfjs: tf.tensor2d(X) (the upload), model.predict, dataSync() of
   the probabilities (the readback), the tensors disposed. Reported: every timed run's ms and
   both sides' outputs of the last run (checked against each other and against Python). */
"use strict";

(async () => {
  try {
    const cfg = await (await fetch(new URLSearchParams(location.search).get("cfg"))).json();
    const buf = new Float32Array(await (await fetch(cfg.data)).arrayBuffer());
    const data = (ref) => buf.subarray(ref[0], ref[0] + ref[1]);
    const program = await SGProgram.load(cfg.program);
    await loadScript("/lib/tf.min.js");
    await tf.setBackend("webgl");
    await tf.ready();
    const env = tf.env();
    const gl = tf.backend().gpgpu.gl;
    const dbg = gl.getExtension("WEBGL_debug_renderer_info");
    const info = {
      lib: "tfjs", version: tf.version.tfjs, backend: tf.getBackend(),
      webgl_version: env.getNumber("WEBGL_VERSION"),
      float32: env.getBool("WEBGL_RENDER_FLOAT32_ENABLED"),
      renderer: dbg ? gl.getParameter(dbg.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER),
    };
    if (info.backend !== "webgl") throw new Error(`tfjs backend is ${info.backend}, not webgl`);
    if (info.webgl_version !== 2) throw new Error(`tfjs runs WebGL ${info.webgl_version}, not 2`);
    if (!info.float32) throw new Error("tfjs renders to float16 here, not float32");

    const sizes = cfg.sizes;
    const model = tf.sequential();
    for (let m = 1; m < sizes.length; m++) {
      const last = m === sizes.length - 1;
      model.add(tf.layers.dense({ inputShape: m === 1 ? [sizes[0]] : undefined, units: sizes[m],
                                  activation: last ? "softmax" : cfg.activation }));
      model.layers[m - 1].setWeights([tf.tensor2d(data(cfg.W[m - 1]), [sizes[m - 1], sizes[m]]),
                                      tf.tensor1d(data(cfg.b[m - 1]))]);
    }
    const ours = (X, n) => program.run({ X: X, rows: n }).predict_proba;
    const theirs = (X, n) => {
      const x = tf.tensor2d(X, [n, sizes[0]]);
      const y = model.predict(x);
      const out = y.dataSync();
      x.dispose(); y.dispose();
      return out;
    };
    const results = [], outs = [];
    for (const c of cfg.cases) {
      const X = data(c.X), n = c.rows;
      const row = { rows: n, ours: [], tfjs: [] };
      let a, b;
      for (let i = 0; i < c.warmup; i++) { a = ours(X, n); b = theirs(X, n); }
      for (let i = 0; i < c.timed; i++) {
        let t0 = performance.now(); a = ours(X, n); row.ours.push(performance.now() - t0);
        t0 = performance.now(); b = theirs(X, n); row.tfjs.push(performance.now() - t0);
      }
      results.push(row);
      outs.push(Float32Array.from(a), Float32Array.from(b));
    }
    await post({ ok: true, info: info, results: results, mode: program.mode,
                 lengths: outs.map(o => o.length) }, outs);
  } catch (e) {
    await post({ ok: false, error: String((e && e.stack) || e), lengths: [] }, []);
  }
})();
