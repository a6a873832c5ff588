"""Train a 2-MH-1 sigmoid network on XOR with render passes (headless by default).

    python demos/backprop_xor.py                      # paper schedule, packed, 2-4-1
    python demos/backprop_xor.py --schedule fused --hidden 8 --steps 500
    python demos/backprop_xor.py --window             # watch the output over the input square

Prints the loss while training, the truth table, and the passes of one learning step measured by
the pass counter beside the paper's formula (MI + MH + MO + N/2 + 4 packed, + 2N + 4 unpacked).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import shadergpgpu as sg
from shadergpgpu.algorithms import backprop as bp

XOR_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float64)
XOR_Y = np.array([0, 1, 1, 0], dtype=np.float64)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hidden", type=int, default=4, help="hidden neurons MH (default 4)")
    p.add_argument("--steps", type=int, default=1000, help="learning steps (default 1000)")
    p.add_argument("--lr", type=float, default=2.0, help="learning rate eta (default 2.0)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--packed", dest="packed", action="store_true", default=True,
                   help="four training vectors per RGBA texel (default)")
    g.add_argument("--unpacked", dest="packed", action="store_false",
                   help="one value per texel")
    p.add_argument("--schedule", choices=bp.SCHEDULES, default="paper",
                   help="paper: the 2009 pass structure (default); fused: loops in shaders")
    p.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    p.add_argument("--print-every", type=int, default=0,
                   help="print the loss every this many steps (default: steps / 10)")
    p.add_argument("--window", action="store_true",
                   help="show the output over the input square in a GLFW window")
    p.add_argument("--grid", type=int, default=64, help="window: points per side (default 64)")
    return p.parse_args(argv)


def formula_rows(sizes, N, schedule, packed, measured):
    fn = bp.paper_phases if schedule == "paper" else bp.fused_phases
    expected = fn(sizes, N, packed)
    rows = []
    for ph in list(expected) + [p for p in measured if p not in expected]:
        rows.append((ph, expected.get(ph), measured.get(ph, 0)))
    return rows


def main(argv=None) -> int:
    a = parse(argv)
    if a.hidden < 1 or a.steps < 1 or a.lr <= 0:
        print("error: --hidden and --steps must be >= 1 and --lr > 0", file=sys.stderr)
        return 2
    every = a.print_every or max(1, a.steps // 10)
    view = probe = grid_img = None
    if a.window:
        try:
            from shadergpgpu.frontends.window import Viewer
            dev = sg.Device(backend="glfw-visible", title="backprop XOR")
            view = Viewer(dev, title="backprop XOR: network output over [0,1]^2",
                          size=(512, 512))
        except Exception as e:  # no display, no glfw
            print(f"error: --window needs GLFW and a display ({e})", file=sys.stderr)
            return 2
    else:
        dev = sg.Device()
    print(f"device: {dev.caps.renderer} ({dev.caps.backend})")
    sizes = [2, a.hidden, 1]
    print(f"network {'-'.join(map(str, sizes))}, N = 4, schedule {a.schedule}, "
          f"{'packed' if a.packed else 'unpacked'}, lr {a.lr:g}, {a.steps} steps, seed {a.seed}")

    if a.window:
        side = np.linspace(0.0, 1.0, a.grid)
        gy, gx = np.meshgrid(side[::-1], side, indexing="ij")      # row 0 = top = x2 of 1
        pts = np.column_stack([gx.ravel(), gy.ravel()])
        grid_img = dev.empty((a.grid, a.grid), packed=False)

    def report(step, loss, net):
        nonlocal probe
        if step % every == 0 or step == a.steps - 1:
            print(f"  step {step + 1:6d}  loss {loss:.6f}")
        if view is not None:
            if probe is None:
                probe = net.probe(pts)
            out = probe.run()
            dev.run("backprop/grid_view.frag", grid_img, inputs={"Y": out})
            return view.show(grid_img, vmin=0.0, vmax=1.0)
        return True

    model = bp.MLP(hidden=(a.hidden,), schedule=a.schedule, packed=a.packed, lr=a.lr,
                   steps=a.steps, seed=a.seed, loss_every=1 if a.window else every,
                   device=dev, callback=report)
    t0 = time.perf_counter()
    model.fit(XOR_X, XOR_Y)
    dt = time.perf_counter() - t0
    print(f"trained in {dt:.2f} s ({dt / a.steps * 1e3:.3f} ms per step incl. loss readback)")

    proba = model.predict_proba(XOR_X)
    print("\ntruth table")
    print("  x1 x2 | target | output | class")
    ok = True
    for (x1, x2), t, y in zip(XOR_X, XOR_Y, proba):
        good = (y >= 0.5) == (t >= 0.5)
        ok &= bool(good)
        print(f"   {int(x1)}  {int(x2)} |    {int(t)}   | {y:.4f} | {int(y >= 0.5)} "
              f"{'ok' if good else 'WRONG'}")

    rows = formula_rows(sizes, 4, a.schedule, a.packed, model.passes_per_step_)
    print("\npasses per learning step (measured by the pass counter vs the plan)")
    print(f"  {'phase':<14}{'formula':>9}{'measured':>10}")
    for ph, e, m in rows:
        print(f"  {ph:<14}{'-' if e is None else e:>9}{m:>10}  {'ok' if e == m else 'MISMATCH'}")
    if a.schedule == "paper":
        mi, mh, mo, n = 2, a.hidden, 1, 4
        counted = sum(model.passes_per_step_.get(p, 0) for p in bp.PAPER_PHASES)
        if a.packed:
            formula, value = "MI + MH + MO + N/2 + 4", mi + mh + mo + 2 * -(-n // 4) + 4
        else:
            formula, value = "MI + MH + MO + 2N + 4", mi + mh + mo + 2 * n + 4
        extra = sum(model.passes_per_step_.get(p, 0) for p in bp.EXTRA_PHASES)
        print(f"  paper's count {formula} = {value}; measured forward+backprop+update = "
              f"{counted} {'(match)' if counted == value else '(MISMATCH)'}; "
              f"plus {extra} passes the paper does not count (output-error, apply)")
    else:
        print(f"  fused: {sum(model.passes_per_step_.values())} passes per step, "
              "independent of N and of the layer widths")
    print("\nXOR learned" if ok else "\nXOR NOT learned (try more --steps or another --seed)")
    if view is not None:
        print("close the window to exit")
        view.wait_close(timeout=None if sys.stdin.isatty() else 2.0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
