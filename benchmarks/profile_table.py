"""Passes per step / call of each algorithm under each built-in device profile, on each GL API.

    python benchmarks/profile_table.py [--apis gl,gles,gles3.0]

Runs each algorithm once at a stated small size on this machine's real context behaving as each
profile, reads the pass counter, and prints a Markdown table (docs/profiles.md's table): one
column per profile and API. ``gl`` is the desktop backend, ``gles`` the native OpenGL ES
backend (``Device(api="gles")``), ``gles3.0`` the ES backend on an ES 3.0 context without float
blending or buffer textures (Mesa's overrides, WebGL2's level). Each API runs in its own
process. Each result is checked against the native desktop run of the same call; a difference,
or an algorithm that fails under a profile, prints ``MISMATCH`` and the exit status is 1.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.engine import profiles  # noqa: E402


def cases():
    from shadergpgpu.algorithms import backprop as bp, blur, sammon, sgemm
    from shadergpgpu.ops import reduce

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, (1024, 2))
    T = rng.uniform(0, 1, (1024, 1))
    A = rng.standard_normal((256, 256))
    B = rng.standard_normal((256, 256))
    img = rng.uniform(0, 1, (256, 256))
    P = rng.standard_normal((300, 8))
    v = rng.standard_normal(1 << 20)

    def backprop(schedule, packed):
        def run(dev):
            net = bp.BackpropNet(dev, [2, 64, 1], X, T, lr=0.5, schedule=schedule,
                                 packed=packed)
            net.step(1)                      # warm (setup passes)
            dev.counter.reset()
            net.step(1)
            return np.concatenate([w.ravel() for w in net.weights()])
        return run

    def mm(dev):
        dev.counter.reset()
        return sgemm.sgemm(A, B, device=dev)

    def bl(method, sigma):
        def run(dev):
            dev.counter.reset()
            return blur.gaussian_blur(img, sigma, method=method, device=dev)
        return run

    def sm(dev):
        """Passes of one more iteration: a fit of 3 iterations minus a fit of 2 (source step)."""
        def fit(n):
            est = sammon.Sammon(n_iter=n, step="source", tol=0.0, device=dev)
            dev.counter.reset()
            est.fit(P)
            return sum(dev.counter.passes.values()), est.embedding_
        n2, _ = fit(2)
        n3, emb = fit(3)
        dev.counter.reset()
        dev.counter.passes["iteration"] = n3 - n2
        return emb

    def sm_sum(dev):
        dev.counter.reset()
        return np.float32(reduce.total(dev, v))

    # well-separated blobs: k-means and the SVM take the same decisions under every profile
    centers = np.array([[0.0, 0.0], [4.0, 4.0], [0.0, 4.0]])
    blobs = np.concatenate([c + 0.5 * rng.standard_normal((100, 2)) for c in centers])
    labels = np.repeat(np.arange(3), 100)
    digits = rng.uniform(0, 1, (512, 64))
    digit_labels = rng.integers(0, 10, 512)

    def km(dev):
        dev.counter.reset()
        est = sg.KMeans(3, n_init=1, init=centers + 0.3, device=dev).fit(blobs)
        return est.cluster_centers_

    def svc(dev):
        dev.counter.reset()
        est = sg.SVC(C=1.0, device=dev).fit(blobs, labels)
        return est.decision_function(blobs[::10])

    def mlp(dev):
        est = sg.MLPClassifier((32,), batch_size=128, max_iter=1, shuffle=False,
                               random_state=0, device=dev)
        est.partial_fit(digits, digit_labels, classes=np.arange(10))   # warm (setup passes)
        dev.counter.reset()
        est.partial_fit(digits, digit_labels)
        return np.concatenate([c.ravel() for c in est.coefs_])

    return [("backprop paper packed, 2-64-1, N=1024 (per step)", backprop("paper", True)),
            ("backprop paper unpacked, 2-64-1, N=1024 (per step)", backprop("paper", False)),
            ("backprop fused, 2-64-1, N=1024 (per step)", backprop("fused", True)),
            ("sgemm 256x256x256 (per call)", mm),
            ("blur recursive hv, 256x256 gray (per call)", bl("recursive", 8.0)),
            ("blur exact sigma 8, 256x256 gray (per call)", bl("exact", 8.0)),
            ("Sammon N=300, n=8 (per iteration)", sm),
            ("sum of 2^20 values (per call)", sm_sum),
            ("KMeans k=3, 300 points (per fit)", km),
            ("SVC rbf, 300 points, 3 classes (per fit)", svc),
            ("MLPClassifier 64-32-10, 512 rows, batch 128 (per epoch)", mlp)]


ES30_ENV = {"MESA_GLES_VERSION_OVERRIDE": "3.0",
            "MESA_EXTENSION_OVERRIDE": "-GL_EXT_float_blend -GL_EXT_texture_buffer "
                                       "-GL_OES_texture_buffer"}


def run_api(api: str, out: Path) -> int:
    """Every profile on one API in this process: pass counts (JSON) and results (npz) to ``out``."""
    names = ["native"] + [n for n in profiles.names() if n != "native"]
    counts, arrays, status = {}, {}, 0
    for pname in names:
        try:
            dev = sg.Device(profile=pname, api="gl" if api == "gl" else "gles")
        except Exception as e:  # noqa: BLE001 - reported in the table
            print(f"MISMATCH: no device for {pname} on {api}: {e}", flush=True)
            counts[pname] = {"error": f"{type(e).__name__}: {e}"}
            status = 1
            continue
        counts[pname] = {"context": dev.ctx.info.get("GL_VERSION", "")}
        for i, (label, fn) in enumerate(cases()):
            try:
                res = fn(dev)
                counts[pname][label] = str(sum(dev.counter.passes.values()))
                if res is not None:
                    arrays[f"{pname}|{i}"] = np.asarray(res, dtype=np.float64)
            except Exception as e:  # noqa: BLE001 - reported in the table
                counts[pname][label] = f"error: {type(e).__name__}"
                print(f"MISMATCH: {label} under {pname} on {api}: {e}", flush=True)
                status = 1
        dev.release()
    (out / f"{api}.json").write_text(json.dumps(counts))
    np.savez(out / f"{api}.npz", **arrays)
    return status


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--apis", default="gl,gles,gles3.0",
                    help="comma-separated: gl, gles, gles3.0 (default: all three)")
    ap.add_argument("--one", help=argparse.SUPPRESS)       # a child's API
    ap.add_argument("--out", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.one:
        return run_api(a.one, Path(a.out))
    apis = [x.strip() for x in a.apis.split(",") if x.strip()]
    bad = [x for x in apis if x not in ("gl", "gles", "gles3.0")]
    if bad:
        ap.error(f"--apis: unknown {bad}; choose from gl, gles, gles3.0")
    if "gl" not in apis:
        apis = ["gl"] + apis                               # the reference
    status = 0
    labels = [label for label, _ in cases()]
    names = ["native"] + [n for n in profiles.names() if n != "native"]
    with tempfile.TemporaryDirectory() as tmp:
        for api in apis:
            env = dict(os.environ, **(ES30_ENV if api == "gles3.0" else {}))
            rc = subprocess.call([sys.executable, __file__, "--one", api, "--out", tmp], env=env)
            status |= rc != 0
        counts = {api: json.loads((Path(tmp) / f"{api}.json").read_text()) for api in apis
                  if (Path(tmp) / f"{api}.json").exists()}
        arrays = {api: dict(np.load(Path(tmp) / f"{api}.npz")) for api in counts}
    ref = arrays.get("gl", {})
    for api, arrs in arrays.items():
        for key, res in arrs.items():
            pname, i = key.split("|")
            base = ref.get(f"native|{i}")
            if base is not None and (res.shape != base.shape
                                     or not np.allclose(res, base, rtol=1e-4, atol=1e-4)):
                print(f"MISMATCH: {labels[int(i)]} under {pname} on {api} differs from native gl")
                status = 1
    for api, c in counts.items():
        ctx = sorted({v.get("context", "") for v in c.values() if isinstance(v, dict)})
        print(f"{api}: {', '.join(x for x in ctx if x)}")
    shown = [api for api in apis if api in counts]
    print("Cells: passes on " + " / ".join(
        {"gl": "GL", "gles": "ES", "gles3.0": "ES 3.0"}[api] for api in shown) + ".")
    print("| algorithm (size) | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for label in labels:
        cells = []
        for p in names:
            got = [counts[api].get(p, {}).get(label, counts[api].get(p, {}).get("error", "?"))
                   for api in shown]
            cells.append(" / ".join(got))
        print(f"| {label} | " + " | ".join(cells) + " |")
    if status:
        print("MISMATCH: see above", flush=True)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
