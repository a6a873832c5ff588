"""How a GPU's state moves a call's time: each configuration timed per call of a run after
warming up with the call itself (what ``benchmarks/model.py`` measures), and right after a
long ALU pass (the GPU busy, its clocks up, when the call's passes come).

    python benchmarks/diag/clock_state.py [--only backprop] [--calibration] [--gpu-sizes]

Per mode: wall and issue time per call, and the device time of the calls from one timer
query (in "hot" mode the query starts after the long pass, so it holds the calls only).
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.engine.kernels import Kernel  # noqa: E402
from shadergpgpu.analysis.reports import model_cases as MC  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_gaps import cases_from_argv  # noqa: E402


def hot_times(call, dev, k: int, alu, out, iters: int, repeat: int = 5) -> dict:
    best = {"wall": float("inf"), "issue": float("inf"), "device": float("inf")}
    for _ in range(repeat):
        dev.finish()
        dev.run(alu, out, uniforms={"n_iter": iters})     # the calls queue behind it
        issue, wall, device = MC.run_times(call, dev, k, query=True, idle=False)
        best["issue"] = min(best["issue"], issue)
        best["wall"] = min(best["wall"], wall)
        best["device"] = min(best["device"], device)
    return best


def main() -> int:
    dev = sg.Device()
    if dev.is_software:
        print("a GPU is needed")
        return 0
    cases = cases_from_argv(False)
    alu = Kernel("engine/calibrate/alu.frag", uniforms={"n_iter": "int"},
                 loop=lambda a: a.uniforms["n_iter"], name="calibrate/alu")
    out = dev.empty((1024, 4096))
    # about 20 ms of ALU work
    t = time.perf_counter()
    dev.run(alu, out, uniforms={"n_iter": 2048})
    dev.finish()
    per = max(time.perf_counter() - t, 1e-4)
    iters = max(64, min(int(2048 * 0.02 / per), 60000))
    print(f"{'case':44} {'mode':5} {'calls':>5} {'wall ms':>9} {'issue ms':>9} {'device ms':>9} "
          f"{'passes':>7}")
    for case in cases:
        call, release = case.build(dev)
        try:
            run = MC.call_times(call, dev, device=True)
            k = run["calls"]
            hot = hot_times(call, dev, k, alu, out, iters)
            passes = MC._snapshot_of_call(call, dev, True)
            n = sum(s["passes"] for s in passes.values())
            for mode, r in (("run", run), ("hot", hot)):
                print(f"{case.algo + ' ' + case.label:44} {mode:5} {k:5d} "
                      f"{r['wall'] * 1e3:9.3f} {r['issue'] * 1e3:9.3f} "
                      f"{r['device'] * 1e3:9.3f} {n:7d}", flush=True)
        finally:
            release()
    out.release()
    dev.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
