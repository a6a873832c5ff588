"""Predict latency in the browser: a fitted network exported with sg.export_web against tfjs.

    python benchmarks/web_predict.py [--quick] [--libs DIR] [--timed K] [--timeout S]

Issue 43's speed target: ``predict`` of one input and of 1,000 inputs in a page, the exported
program (``SGProgram.run``, ``shadergpgpu/web/program.js``) at least as fast as tfjs's
``model.predict`` of the same dense network with the same weights, in the same headless
Chromium (WebGL2 through ANGLE on the same Mesa llvmpipe).

The network: 784-100-10, ReLU hidden units, softmax outputs: ``sg.MLPClassifier`` fitted for
two epochs on 8,000 digits of MNIST-10k (``~/.cache/shadergpgpu/mnist/mnist10k.npz``,
``train_test_split(X, y, test_size=2000, random_state=0)``; uniform [0, 1) pixels and
random labels where it is absent: latency does not depend on the values), exported with
``max_rows=1000``. The inputs: held-out digits (or uniform pixels), 1 and 1,000 rows.

Timing (``benchmarks/js/predict.js``): one run of ours is ``p.run({X, rows: n})`` (the upload of
X, the passes, the readback of the probabilities); one run of tfjs is ``tf.tensor2d(X)``,
``model.predict``, ``dataSync()`` of the probabilities, the tensors disposed. Per row count,
5 warm-up runs of each (shader compilation), then ``--timed`` (30) rounds, ours then tfjs in
each; the figure is the median (the fastest printed beside it). Check: both sides' last outputs
against Python's ``predict_proba`` (within 1e-5 of the largest magnitude; else ``MISMATCH``).
Ours slower than tfjs at either size prints ``MISSED``; either verdict exits 1.

tfjs is read from ``tf.min.js`` in ``~/.cache/shadergpgpu/js/`` or ``--libs DIR`` (as
``benchmarks/js_leads.py`` reads it). Without it or without Chromium: exit 2. ``--quick``: 5
timed rounds (smoke run, no verdict).
"""
from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.frontends import browser  # noqa: E402
from shadergpgpu.frontends.webmodels import estimator_program  # noqa: E402
from js_leads import DEFAULT_LIBS, LIB_FILES, Blob, chromium_version, file_version  # noqa: E402

HERE = Path(__file__).resolve().parent
MNIST = Path.home() / ".cache" / "shadergpgpu" / "mnist" / "mnist10k.npz"


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 timed rounds, no verdict")
    ap.add_argument("--libs", default=str(DEFAULT_LIBS), help="folder holding tf.min.js")
    ap.add_argument("--timed", type=int, default=30, help="timed rounds per size (30)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds for the page")
    return ap.parse_args(argv)


def data():
    if MNIST.is_file():
        d = np.load(MNIST)
        return np.asarray(d["X"], np.float32), np.asarray(d["y"]), "MNIST-10k"
    rng = np.random.default_rng(0)
    return rng.random((10000, 784), dtype=np.float32), rng.integers(0, 10, 10000), \
        "uniform random pixels"


def main(argv=None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    libs = Path(args.libs).expanduser()
    tf_js = libs / LIB_FILES["tfjs"]
    if browser.find_chromium() is None:
        print("no Chromium (apt-get install chromium, or set SHADERGPGPU_CHROMIUM)")
        return 2
    if not tf_js.is_file():
        print(f"no {tf_js}: npm pack @tensorflow/tfjs and copy dist/tf.min.js there")
        return 2
    X, y, source = data()
    from sklearn.model_selection import train_test_split
    Xtr, Xte, ytr, _ = train_test_split(X, y, test_size=2000, random_state=0)
    clf = sg.MLPClassifier((100,), max_iter=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(Xtr, ytr)
    t0 = time.perf_counter()
    raw = estimator_program(clf, 1000)
    export_s = time.perf_counter() - t0
    timed = 5 if args.quick else int(args.timed)
    blob = Blob()
    inputs = {1: Xte[:1], 1000: Xte[:1000]}
    cfg = {"data": "/data.bin", "program": "/model.sgprog", "sizes": [784, 100, 10],
           "activation": clf.activation,
           "W": [blob.add(c) for c in clf.coefs_], "b": [blob.add(b) for b in clf.intercepts_],
           "cases": [{"rows": n, "X": blob.add(x), "warmup": 5, "timed": timed}
                     for n, x in inputs.items()]}
    files = {"/predict.html": HERE / "js" / "predict.html",
             "/predict.js": HERE / "js" / "predict.js",
             f"/lib/{LIB_FILES['tfjs']}": tf_js, "/model.sgprog": raw,
             "/cfg.json": json.dumps(cfg).encode(), "/data.bin": blob.bytes()}
    meta, outs = browser.run_page("predict.html", files, "cfg=/cfg.json", args.timeout)
    info = meta["info"]
    print(f"# web_predict: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, "
          f"{chromium_version()}, renderer {info['renderer']}")
    print(f"# network 784-100-10 ({clf.activation}, softmax), trained 2 epochs on {source}; "
          f"program {len(raw)} bytes (mode {meta['mode']}, max_rows 1000, exported in "
          f"{export_s:.2f} s); tfjs {info['version']} ({file_version(tf_js)}), webgl backend, "
          f"WebGL{info['webgl_version']}, float32 {info['float32']}")
    print(f"{'rows':>6} {'ours ms (median / min)':>24} {'tfjs ms (median / min)':>24} "
          f"{'lead':>7} {'err ours':>9} {'err tfjs':>9}  verdict")
    verdicts = []
    for i, row in enumerate(meta["results"]):
        n = row["rows"]
        want = clf.predict_proba(inputs[n])
        scale = float(np.abs(want).max())
        e_ours = float(np.abs(outs[2 * i].reshape(want.shape) - want).max()) / scale
        e_tf = float(np.abs(outs[2 * i + 1].reshape(want.shape) - want).max()) / scale
        mo, mt = float(np.median(row["ours"])), float(np.median(row["tfjs"]))
        lead = mt / mo if mo > 0 else float("inf")
        verdict = "ok"
        if e_ours > 1e-5 or e_tf > 1e-5:
            verdict = "MISMATCH"
        elif not args.quick and mo > mt:
            verdict = "MISSED"
        verdicts.append(verdict)
        print(f"{n:>6} {mo:>13.3f} / {min(row['ours']):>8.3f} {mt:>13.3f} / "
              f"{min(row['tfjs']):>8.3f} {lead:>6.2f}x {e_ours:>9.1e} {e_tf:>9.1e}  {verdict}")
    print("# lead = tfjs median / ours; MISSED: ours slower than tfjs's model.predict")
    return 0 if all(v == "ok" for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
