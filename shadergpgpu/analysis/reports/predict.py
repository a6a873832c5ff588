"""``shadergpgpu predict`` and ``shadergpgpu calibrate``: the cost model's commands.

:func:`predict_case` (predicted time of a case on this device and on profiles, beside numpy's,
over a sweep of N) with the crossings where the device overtakes numpy; :func:`predict_main` and
:func:`calibrate_main` are the command lines.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

from .. import cost_model as M
from .common import markdown_table
from .model_cases import (GPU_PROFILE, MAKERS, PAPER_N, Case, backprop_case, blur_case, count,
                          measure_case, numpy_time, predict_on_profile, sammon_case, sgemm_case,
                          svm_case)
from .calibrate import calibrate_all
from .predicted import bound_of


# ---- `shadergpgpu predict` -----------------------------------------------------------------------
def _sweep_param(algo: str) -> str:
    return {"backprop": "n", "sgemm": "n", "blur": "shape", "svm": "n", "sammon": "n"}[algo]


def _with(case: Case, value) -> Case:
    params = dict(case.params)
    key = _sweep_param(case.algo)
    params[key] = (value, value) if key == "shape" else value
    return MAKERS[case.algo](**params)


def predict_case(case: Case, dev=None, profiles=(GPU_PROFILE,), sweep=None) -> dict:
    """Predicted seconds of ``case`` on this device (measured speeds) and on each profile, the
    measured time here and numpy's; with ``sweep`` (values of N, or of the image side for the
    blur) the same at each value and the first value where each device beats numpy."""
    from ...engine.device import Device
    own = dev is None
    dev = dev or Device()
    try:
        speeds = M.measured_speeds(dev)
        res = {"case": f"{case.algo} {case.label}", "rows": []}
        points = [None] + list(sweep or [])
        for v in points:
            c = case if v is None else _with(case, v)
            snap = count(c, dev)
            pred = M.predict(snap, speeds)
            row = {"N" if case.algo != "blur" else "side": v if v is not None else
                   _point(case), "this device predicted s": M.total(pred)}
            if v is None:
                row["this device bound"] = bound_of(pred)
            for prof in profiles:
                t, ppred, _ = predict_on_profile(c, prof)
                row[f"{_short(prof)} predicted s"] = t
                if v is None:
                    row[f"{_short(prof)} bound"] = bound_of(ppred)
            row["numpy s"] = numpy_time(c)
            if v is None:
                row["this device measured s"] = measure_case(c, dev, repeat=3)[0]
            res["rows"].append(row)
        res["crossings"] = _crossings(res["rows"][1:] if sweep else [], profiles)
        return res
    finally:
        if own:
            dev.release()


def _short(profile) -> str:
    return Path(str(profile)).stem


def _point(case: Case):
    k = _sweep_param(case.algo)
    v = case.params.get(k)
    return v[0] if k == "shape" else v


def _crossings(rows, profiles) -> dict:
    out = {}
    if not rows:
        return out
    key = next(iter(rows[0]))
    for col in ["this device predicted s"] + [f"{_short(p)} predicted s" for p in profiles]:
        win = [r[key] for r in rows if r.get("numpy s") and r[col] < r["numpy s"]]
        lose = [r[key] for r in rows if r.get("numpy s") and r[col] >= r["numpy s"]]
        if win and lose:
            out[col] = f"faster than numpy from {key} = {min(win)}" if min(win) > max(lose) \
                else f"faster than numpy at {key} in {sorted(win)}"
        elif win:
            out[col] = "faster than numpy at every point"
        else:
            out[col] = "never faster than numpy in the sweep"
    return out


def predict_main(argv=None) -> int:
    """``shadergpgpu predict ALGORITHM [options]``."""
    p = argparse.ArgumentParser(prog="shadergpgpu predict",
                                description="predicted time of an algorithm on this device and "
                                            "on a profile's GPU, beside numpy's")
    p.add_argument("algorithm", choices=sorted(MAKERS))
    p.add_argument("--sizes", default="2,64,1", help="backprop layer sizes")
    p.add_argument("--n", type=int, default=None, help="N (backprop, svm, sammon) or matrix size")
    p.add_argument("--schedule", default="paper", choices=("paper", "fused"))
    p.add_argument("--unpacked", action="store_true")
    p.add_argument("--shape", default="256,256", help="blur image shape H,W")
    p.add_argument("--sigma", type=float, default=3.0)
    p.add_argument("--method", default="recursive", choices=("recursive", "exact"))
    p.add_argument("--profile", action="append", default=None,
                   help=f"profile with speeds (repeatable; default {GPU_PROFILE})")
    p.add_argument("--sweep", default="auto",
                   help="comma list of N (or image sides) to find the crossing; 'none' to skip")
    a = p.parse_args(argv)
    algo = a.algorithm
    if algo == "backprop":
        case = backprop_case([int(s) for s in a.sizes.split(",")], a.n or PAPER_N, a.schedule,
                             not a.unpacked)
        auto = [2 ** k for k in range(4, 15, 2)]
    elif algo == "sgemm":
        case = sgemm_case(a.n or 256)
        auto = [32, 64, 128, 256, 512]
    elif algo == "blur":
        case = blur_case(tuple(int(s) for s in a.shape.split(",")), a.sigma, a.method)
        auto = [64, 128, 256, 512]
    elif algo == "svm":
        case = svm_case(a.n or 256)
        auto = [64, 128, 256, 512]
    else:
        case = sammon_case(a.n or 256)
        auto = [64, 128, 256, 512]
    sweep = None if a.sweep == "none" else auto if a.sweep == "auto" else \
        [int(s) for s in a.sweep.split(",")]
    res = predict_case(case, profiles=tuple(a.profile or [GPU_PROFILE]), sweep=sweep)
    first = res["rows"][0]
    print(f"{res['case']}:")
    for k, v in first.items():
        if k not in ("N", "side"):
            print(f"  {k:<34} {v if isinstance(v, str) else _fmt_s(v)}")
    if sweep:
        print("\nsweep:")
        print(markdown_table(res["rows"][1:], floatfmt=".3g"))
        for k, v in res["crossings"].items():
            print(f"  {k}: {v}")
    return 0


def calibrate_main(argv=None) -> int:
    """``shadergpgpu calibrate``: measure this device's speeds and store the measured profile."""
    p = argparse.ArgumentParser(prog="shadergpgpu calibrate",
                                description="measure this device's pass overhead, ALU, fetch, "
                                            "write, upload and readback rates, the kernels' "
                                            "efficiencies and the calls' costs (in rounds: "
                                            "about a minute on llvmpipe, two on a GPU) and "
                                            "store them as a profile in the cache folder")
    p.add_argument("--quick", action="store_true",
                   help="one round, one configuration per algorithm (seconds)")
    p.add_argument("--backend", default=None, help="GL backend (default: the library's)")
    p.add_argument("--no-save", action="store_true", help="print only")
    a = p.parse_args(argv)
    from ...engine.device import Device
    dev = Device(backend=a.backend) if a.backend else Device()
    try:
        t0 = time.perf_counter()
        prof = calibrate_all(dev, quick=a.quick, save=not a.no_save,
                             progress=None if a.quick else (lambda m: print("  " + m,
                                                                          flush=True)))
        took = time.perf_counter() - t0
    finally:
        dev.release()
    print(prof["description"])
    units = {"pass_overhead_us": "us", "pass_gpu_us": "us", "dependent_pass_us": "us",
             "alu_gflops": "GFLOPS", "texel_rate_gtexels": "Gtexel/s",
             "buffer_texel_rate_gtexels": "Gtexel/s", "write_gbs": "GB/s", "upload_gbs": "GB/s",
             "readback_gbs": "GB/s"}
    for k, v in prof["speeds"].items():
        if isinstance(v, dict):
            print(f"  {k}:")
            for kk, vv in sorted(v.items()):
                if isinstance(vv, list):      # efficiency by size: fragments per pass: value
                    vv = ", ".join(f"{f:.4g}: {e:.3g}" for f, e in vv)
                    print(f"    {kk:<44} {vv}")
                else:
                    print(f"    {kk:<44} {vv:.4g}")
            continue
        print(f"  {k:<28} {v:.4g} {units.get(k, '')}" if isinstance(v, float) else
              f"  {k:<28} {v}")
    print(f"(measured in {took:.1f} s)")
    if prof.get("path"):
        print(f"written to {prof['path']}")
    return 0


def _fmt_s(v) -> str:
    if v is None:
        return "n/a"
    return f"{v * 1e3:.3g} ms" if v < 1 else f"{v:.3g} s"

