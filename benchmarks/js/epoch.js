/* The browser side of benchmarks/tfjs_epoch.py: epochs of a dense 784-100-10 network in tfjs
   (webgl backend, WebGL2, float32 render targets; checked as leads.js checks them), headless
   Chromium.

   The config (/cfg.json) gives the sizes, the timing (warmup and timed epochs), and where the
   float32 data lie in /data.bin ([offset, length] in elements): X (n x 784), y (n labels),
   Xte, yte (held-out set). The network: dense(100, relu) and dense(10, softmax), Glorot-uniform
   weights (scikit-learn's init for relu), categorical cross-entropy, the L2 term of
   scikit-learn's alpha (0.5 alpha ||W||^2 / batch: a kernel regularizer l2 = alpha / (2 batch)),
   Adam (lr, 0.9, 0.999, 1e-8). One epoch = model.fit(X, Y, {epochs: 1, batchSize, shuffle: true,
   yieldEvery: "never"}), timed from the call to the end of a 1-element readback of the first
   layer's kernel after it returns (fit already awaits every batch's loss). The warm-up epochs
   compile the shaders. Reported: each timed epoch's ms, the loss, the held-out accuracy. */
"use strict";

(async () => {
  try {
    const cfg = await (await fetch(new URLSearchParams(location.search).get("cfg"))).json();
    const buf = new Float32Array(await (await fetch(cfg.data)).arrayBuffer());
    const data = (ref) => buf.subarray(ref[0], ref[0] + ref[1]);
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

    const [d0, h, k] = cfg.sizes;
    const onehot = (ref) => tf.tidy(() => tf.oneHot(tf.tensor1d(data(ref), "int32"), k));
    const X = tf.tensor2d(data(cfg.X), [cfg.n, d0]);
    const Y = onehot(cfg.y);
    const Xte = tf.tensor2d(data(cfg.Xte), [cfg.nte, d0]);
    const yte = data(cfg.yte);
    const reg = () => tf.regularizers.l2({ l2: cfg.alpha / (2 * cfg.batch) });
    const model = tf.sequential();
    model.add(tf.layers.dense({ inputShape: [d0], units: h, activation: "relu",
                                kernelInitializer: "glorotUniform", biasInitializer: "glorotUniform",
                                kernelRegularizer: reg() }));
    model.add(tf.layers.dense({ units: k, activation: "softmax",
                                kernelInitializer: "glorotUniform", biasInitializer: "glorotUniform",
                                kernelRegularizer: reg() }));
    model.compile({ optimizer: tf.train.adam(cfg.lr, 0.9, 0.999, 1e-8),
                    loss: "categoricalCrossentropy" });
    const sync = () => {
      const w = model.layers[0].getWeights()[0];
      const s = tf.slice(w, [0, 0], [1, 1]);
      s.dataSync();
      s.dispose();
    };
    const epoch = async () => {
      const t0 = performance.now();
      const hist = await model.fit(X, Y, { epochs: 1, batchSize: cfg.batch, shuffle: true,
                                           yieldEvery: "never", verbose: 0 });
      sync();
      return { ms: performance.now() - t0, loss: hist.history.loss[0] };
    };
    const warm = [];
    for (let i = 0; i < cfg.warmup; i++) warm.push(await epoch());
    const timed = [];
    for (let i = 0; i < cfg.epochs; i++) timed.push(await epoch());
    const pred = tf.tidy(() => model.predict(Xte).argMax(1));
    const p = pred.dataSync();
    pred.dispose();
    let hits = 0;
    for (let i = 0; i < cfg.nte; i++) hits += (p[i] === yte[i]) ? 1 : 0;
    info.numBytes = tf.memory().numBytes;
    await post({ ok: true, info: info, warmup: warm, epochs: timed, acc: hits / cfg.nte,
                 lengths: [] }, []);
  } catch (e) {
    await post({ ok: false, error: String((e && e.stack) || e), lengths: [] }, []);
  }
})();
