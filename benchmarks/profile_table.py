"""Passes per step / call of each algorithm under each built-in device profile (counted).

    python benchmarks/profile_table.py

Runs each algorithm once at a stated small size on this machine's real context behaving as each
profile, reads the pass counter, and prints a Markdown table (docs/profiles.md's table). Each
result is checked against the native run of the same call; a difference prints `MISMATCH` and
the exit status is 1.
"""
from __future__ import annotations

import sys
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

    return [("backprop paper packed, 2-64-1, N=1024 (per step)", backprop("paper", True)),
            ("backprop paper unpacked, 2-64-1, N=1024 (per step)", backprop("paper", False)),
            ("backprop fused, 2-64-1, N=1024 (per step)", backprop("fused", True)),
            ("sgemm 256x256x256 (per call)", mm),
            ("blur recursive hv, 256x256 gray (per call)", bl("recursive", 8.0)),
            ("blur exact sigma 8, 256x256 gray (per call)", bl("exact", 8.0)),
            ("Sammon N=300, n=8 (per iteration)", sm),
            ("sum of 2^20 values (per call)", sm_sum)]


def main() -> int:
    names = ["native"] + [n for n in profiles.names() if n != "native"]
    rows, status = {}, 0
    results = {}
    for pname in names:
        dev = sg.Device(profile=pname)
        for label, fn in cases():
            try:
                out = fn(dev)
                n = sum(dev.counter.passes.values())
                res = np.asarray(out, dtype=np.float64) if out is not None else None
                ref = results.setdefault(label, res)
                if res is not None and ref is not None and not np.allclose(
                        res, ref, rtol=1e-4, atol=1e-4):
                    print(f"MISMATCH: {label} under {pname} differs from native")
                    status = 1
                rows.setdefault(label, {})[pname] = str(n)
            except Exception as e:  # noqa: BLE001 - reported in the table
                rows.setdefault(label, {})[pname] = f"error: {type(e).__name__}"
                print(f"MISMATCH: {label} under {pname}: {e}")
                status = 1
        dev.release()
    print("| algorithm (size) | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for label, r in rows.items():
        print(f"| {label} | " + " | ".join(r.get(n, "") for n in names) + " |")
    return status


if __name__ == "__main__":
    sys.exit(main())
