"""Diagnostic: SMO iteration time per variant (gain fused or not, fan-in), wall and GPU."""
import sys, time, warnings
import numpy as np
from shadergpgpu import Device
from shadergpgpu.algorithms.svm import SvmTuning
from shadergpgpu.algorithms.svm import SVC
sys.path.insert(0, "benchmarks")
from svm import _data

dev = Device()
print(dev)
warnings.simplefilter("ignore", RuntimeWarning)
sizes = [int(a) for a in (sys.argv[1] if len(sys.argv) > 1 else "10000,50000").split(",")]
fanins = [int(a) for a in (sys.argv[2] if len(sys.argv) > 2 else "8,16,32,64").split(",")]
for n in sizes:
    X, y = _data(n)
    ref = None
    from shadergpgpu.ops import rbf as RB
    from shadergpgpu.ops.tuning import ReduceTuning
    fuse, wrap = False, 128
    for batch in (4, 16, 1):
        dev.tune(ReduceTuning, arg_fetch_batch=batch)
        for F in fanins:
            SVC(device=dev, fanin=F, max_iter=20).fit(X, y)
            best = np.inf
            for _ in range(2):
                t0 = time.perf_counter(); SVC(device=dev, fanin=F, max_iter=10).fit(X, y); t1 = time.perf_counter() - t0
                t0 = time.perf_counter(); m = SVC(device=dev, fanin=F, max_iter=1010).fit(X, y); t2 = time.perf_counter() - t0
                best = min(best, (t2 - t1) / 1000 * 1e6)
            sv = m.support_
            same = "" if ref is None else ("same SVs" if np.array_equal(ref, sv) else "SVs DIFFER")
            ref = sv if ref is None else ref
            dev.timing = True
            dev.counter.reset()
            m = SVC(device=dev, fanin=F, max_iter=200).fit(X, y)
            dev.timing = False
            snap = dev.counter.snapshot()
            it = int(m.n_iter_[0])
            parts = {k: (v["passes"] / it, 1e3 * v["gpu_ms"] / it) for k, v in snap.items() if k in ("svm/select", "svm/update")}
            print(f"n={n} batch={batch} F={F}: wall {best:.1f} us/iter {same}; per iter (passes, gpu us): "
                  + ", ".join(f"{k} {p:.1f} {g:.1f}" for k, (p, g) in parts.items()), flush=True)
dev.tune(SvmTuning, fuse_gain=True)

RB.VECTOR_WRAP = 128
