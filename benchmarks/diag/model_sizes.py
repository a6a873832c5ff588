"""How a kernel's device time scales with its size (for the cost model's per-kernel terms):
for each case at several sizes, after a warm-up (``model_cases.warm``), the wall time of a
call and its device time from one timer query around it, beside the model's work-only prediction (efficiency 1,
no floor): a constant ratio means one efficiency serves every size; a ratio falling with
size means a fixed cost per pass.

    python benchmarks/diag/model_sizes.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.analysis import cost_model as M  # noqa: E402
from shadergpgpu.analysis.reports import model_cases as MC  # noqa: E402


def main() -> int:
    dev = sg.Device()
    sp = M.measured_speeds(dev)
    raw = M.Speeds(**{**M.asdict_speeds(sp), "efficiency": {}, "pass_gpu_us": 0.0,
                      "pass_gpu_us_per_kfragment": 0.0})
    sw = dev.is_software
    groups = [[MC.elementwise_case(n) for n in ((128, 256, 512) if sw else (1024, 2048, 4096))],
              [MC.sgemm_case(n) for n in ((128, 256, 384) if sw else (1024, 2048, 4096))],
              [MC.blur_case((n, n), 3.0, "exact") for n in ((128, 256) if sw else (1024, 2048))],
              [MC.backprop_case((2, h, 1), n, "fused") for h, n in
               (((64, 1024), (256, 256)) if sw else ((64, 1024), (512, 4096),
                                                      (1024, 16384)))]]
    print(f"{'case':44} {'wall ms':>9} {'device ms':>9} {'work ms':>9} {'dev/work':>8}")
    for g in groups:
        for case in g:
            wall, _, snap, busy = MC.timed_call(case, dev, repeat=5, device=True)
            work = sum(M.kernel_device(raw, n, k)[0] for s in snap.values()
                       for n, k in (s.get("kernels") or {}).items())
            d = wall if sw else busy
            print(f"{case.algo + ' ' + case.label:44} {wall * 1e3:9.3f} {busy * 1e3:9.3f} "
                  f"{work * 1e3:9.3f} {d / work if work else 0:8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
