"""What an accumulating pass costs the device by the rectangle it covers: squares and strips
of the same fragments, against the cost model's tile term (the calibrated profile's
``tile`` and ``pass_gpu_us_per_tile``).

    python benchmarks/diag/accumulate_tiles.py [--passes 2000] [--cold]

Each shape: one timer query around a batch of blended SAXPY passes (``Pass.repeat``) after a
long ALU pass (the GPU busy, its clocks up), the fastest of 5 batches. GPU only (timer
queries). Prints MISMATCH where the model is more than 30 % off a shape.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.analysis import cost_model as M  # noqa: E402
from shadergpgpu.engine.builtin import FILL, SAXPY  # noqa: E402

SHAPES = [(1, 1), (32, 32), (64, 64), (128, 128), (4096, 1), (1, 4096), (2048, 1), (1024, 3),
          (1, 1025), (1024, 4), (256, 16), (16384, 1)]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--passes", type=int, default=2000)
    p.add_argument("--cold", action="store_true",
                   help="no long pass before each batch (the GPU as the batch finds it)")
    a = p.parse_args(argv)
    dev = sg.Device()
    if dev.is_software or not getattr(dev.caps, "timer_queries", False):
        print("a GPU with timer queries is needed")
        return 0
    speeds = M.measured_speeds(dev)
    busy = dev.empty((2048, 8192))
    alphas = [float(k % 7) for k in range(a.passes)]
    bad = 0
    print(f"model: empty pass {speeds.pass_gpu_us:.3g} us, {speeds.pass_gpu_us_per_tile:.3g} us "
          f"per {speeds.tile[0]} x {speeds.tile[1]} tile, "
          f"{speeds.pass_gpu_us_per_kfragment:.3g} us per 1000 fragments\n")
    print(f"{'w x h':>12} {'fragments':>9} {'tiles':>6} {'us/pass':>8} {'model us':>9}  ratio")
    for w, h in SHAPES:
        x = dev.array(np.ones((h, w), np.float32), packed=False)
        y = dev.empty((h, w), packed=False)
        pas = dev.prepare(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 0.0},
                          blend=bool(dev.float_blending))
        pas.repeat("alpha", alphas[:4])
        best = float("inf")
        for _ in range(5):
            dev.finish()
            for _ in range(0 if a.cold else 4):
                dev.run(FILL, busy, uniforms={"value": 1.0})
            q = dev.ctx.query(time=True)
            with q:
                pas.repeat("alpha", alphas)
            dev.finish()
            best = min(best, q.elapsed / len(alphas) / 1e3)
        model = speeds.pass_floor(w * h, (w, h)) * 1e6
        r = best / model
        flag = "" if 0.7 <= r <= 1.3 else "  MISMATCH"
        bad += bool(flag)
        t = M.tiles((w, h), speeds.tile) if speeds.tile[0] else 0
        print(f"{w:>6} x {h:<5} {w * h:>9} {t:>6} {best:>8.3f} {model:>9.3f}  {r:.2f}{flag}")
        x.release()
        y.release()
    busy.release()
    dev.release()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
