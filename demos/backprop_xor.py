"""Train a 2-MH-1 sigmoid network on XOR with render passes (headless by default).

    python demos/backprop_xor.py                      # paper schedule, packed, 2-4-1
    python demos/backprop_xor.py --schedule fused --hidden 8 --steps 500
    python demos/backprop_xor.py --window             # watch the output over the input square

Prints the loss while training, the truth table, and the passes of one learning step measured by
the pass counter beside the paper's formula (MI + MH + MO + N/2 + 4 packed, + 2N + 4 unpacked).
"""
from __future__ import annotations

import sys
import time

import numpy as np

import _demo  # demos/_demo.py: argument checks, optional packages

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import backprop as bp  # noqa: E402
from shadergpgpu.analysis.plans import backprop as bplan  # noqa: E402

XOR_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float64)
XOR_Y = np.array([0, 1, 1, 0], dtype=np.float64)


def parse(argv=None):
    p = _demo.Parser(description=__doc__.split("\n")[0])
    p.add_argument("--hidden", type=_demo.positive_int, default=4,
                   help="hidden neurons MH (default 4)")
    p.add_argument("--steps", type=_demo.positive_int, default=1000,
                   help="learning steps (default 1000)")
    p.add_argument("--lr", type=_demo.positive_float, default=2.0,
                   help="learning rate eta, > 0 (default 2.0)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--packed", dest="packed", action="store_true", default=True,
                   help="four training vectors per RGBA texel (default)")
    g.add_argument("--unpacked", dest="packed", action="store_false",
                   help="one value per texel")
    p.add_argument("--schedule", choices=bp.SCHEDULES, default="paper",
                   help="paper: the 2009 pass structure (default); fused: loops in shaders")
    p.add_argument("--seed", type=_demo.nonneg_int, default=0,
                   help="weight initialisation seed (default 0)")
    p.add_argument("--print-every", type=_demo.nonneg_int, default=0, metavar="K",
                   help="print the loss every K steps (default: steps / 10)")
    p.add_argument("--window", action="store_true",
                   help="show the output over the input square in a GLFW window, with the "
                        "training points and the step and loss in the title (needs the "
                        "'window' extra and a display)")
    p.add_argument("--grid", type=_demo.positive_int, default=64, metavar="G",
                   help="window: points per side of the shown square, 2..1024 (default 64)")
    a = p.parse_args(argv)
    if not 2 <= a.grid <= 1024:
        p.fail(f"--grid must be between 2 and 1024, got {a.grid}")
    if a.window:
        _demo.need_window()
    return a


def formula_rows(sizes, N, schedule, packed, measured, loop_cap=None):
    fn = bplan.paper_phases if schedule == "paper" else bplan.fused_phases
    expected = fn(sizes, N, packed, loop_cap=loop_cap)
    rows = []
    for ph in list(expected) + [p for p in measured if p not in expected]:
        rows.append((ph, expected.get(ph), measured.get(ph, 0)))
    return rows


def main(argv=None) -> int:
    _demo.unbuffered()
    a = parse(argv)
    every = a.print_every or max(1, a.steps // 10)
    view = probe = None
    if a.window:
        from shadergpgpu.frontends.window import Viewer
        try:
            dev = sg.Device(backend="glfw-visible")
        except sg.CapabilityError as e:  # no display
            _demo.fail(f"--window needs a display: {str(e).splitlines()[0]}")
        view = Viewer(dev, title="backprop XOR: network output over [0,1]^2", size=(512, 512))
    else:
        dev = sg.Device()
    print(f"device: {dev.caps.renderer} ({dev.caps.backend})")
    sizes = [2, a.hidden, 1]
    print(f"network {'-'.join(map(str, sizes))}, N = 4, schedule {a.schedule}, "
          f"{'packed' if a.packed else 'unpacked'}, lr {a.lr:g}, {a.steps} steps, seed {a.seed}")

    if a.window:
        G = a.grid
        side = np.linspace(0.0, 1.0, G)
        gy, gx = np.meshgrid(side[::-1], side, indexing="ij")      # row 0 = top = x2 of 1
        pts = np.column_stack([gx.ravel(), gy.ravel()])
        # the four training points in the picture's pixels: column = x1, row 0 = x2 of 1
        marks = np.column_stack([XOR_X[:, 0] * (G - 1), (1.0 - XOR_X[:, 1]) * (G - 1)])

    def report(step, loss, net):
        nonlocal probe
        if step % every == 0 or step == a.steps - 1:
            print(f"  step {step + 1:6d}  loss {loss:.6f}")
        if view is not None:
            if probe is None:
                probe = net.probe(pts)
            out = probe.run()                   # (2, G*G): row 1 holds the outputs
            return view.show(out, vmin=0.0, vmax=1.0, shape=(G, G), start=G * G,
                             points=marks, point_values=XOR_Y,
                             title=f"backprop XOR {'-'.join(map(str, sizes))}: step "
                                   f"{step + 1}/{a.steps}, loss {loss:.5f}")
        return True

    # the paper's network on the device: BackpropNet takes the steps, the loss is read back
    # every `every` steps (every step with the window)
    passes = {}
    t0 = time.perf_counter()
    with bp.BackpropNet(dev, sizes, XOR_X, XOR_Y[:, None], weights=bp.init_weights(sizes, a.seed),
                        lr=a.lr, schedule=a.schedule, packed=a.packed) as net:
        for step in range(a.steps):
            before = dict(dev.counter.passes) if step == 0 else None
            net.step()
            if step == 0:
                passes = {k: v - before.get(k, 0) for k, v in dev.counter.passes.items()
                          if v != before.get(k, 0)}
            if a.window or step % every == 0 or step == a.steps - 1:
                if report(step, net.loss(), net) is False:
                    break
        weights = net.weights()
    dt = time.perf_counter() - t0
    print(f"trained in {dt:.2f} s ({dt / a.steps * 1e3:.3f} ms per step incl. loss readback)")

    proba = bp.device_forward(dev, weights, XOR_X)[:, 0]   # network outputs in (0, 1)
    print("\ntruth table")
    print("  x1 x2 | target | output | class")
    ok = True
    for (x1, x2), t, y in zip(XOR_X, XOR_Y, proba):
        good = (y >= 0.5) == (t >= 0.5)
        ok &= bool(good)
        print(f"   {int(x1)}  {int(x2)} |    {int(t)}   | {y:.4f} | {int(y >= 0.5)} "
              f"{'ok' if good else 'WRONG'}")

    rows = formula_rows(sizes, 4, a.schedule, a.packed, passes, dev.loop_cap)
    print("\npasses per learning step (measured by the pass counter vs the plan)")
    print(f"  {'phase':<14}{'formula':>9}{'measured':>10}")
    for ph, e, m in rows:
        print(f"  {ph:<14}{'-' if e is None else e:>9}{m:>10}  {'ok' if e == m else 'MISMATCH'}")
    if a.schedule == "paper":
        mi, mh, mo, n = 2, a.hidden, 1, 4
        counted = sum(passes.get(p, 0) for p in bplan.PAPER_PHASES)
        if a.packed:
            formula, value = "MI + MH + MO + N/2 + 4", mi + mh + mo + 2 * -(-n // 4) + 4
        else:
            formula, value = "MI + MH + MO + 2N + 4", mi + mh + mo + 2 * n + 4
        extra = sum(passes.get(p, 0) for p in bplan.EXTRA_PHASES)
        print(f"  paper's count {formula} = {value}; measured forward+backprop+update = "
              f"{counted} {'(match)' if counted == value else '(MISMATCH)'}; "
              f"plus {extra} passes the paper does not count (output-error, apply)")
    else:
        print(f"  fused: {sum(passes.values())} passes per step, "
              "independent of N and of the layer widths")
    print("\nXOR learned" if ok else "\nXOR NOT learned (try more --steps or another --seed)")
    if view is not None:
        print("close the window to exit")
        view.wait_close(timeout=None if sys.stdin.isatty() else 2.0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
