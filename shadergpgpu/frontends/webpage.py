"""A web page a user can open: XOR trained in the browser by the recorded fused step.

:func:`xor_page` trains nothing itself: it builds the XOR network on a device under the
``webgl2`` profile inside :func:`shadergpgpu.trace`, records three sections (``outputs``: read
the network's outputs; ``train``: ``steps_per_section`` fused learning steps; ``surface``: the
network's output over a grid of the input square) and writes one self-contained HTML file: the
player, the bundle (base64) and a script that calls ``train`` until ``steps`` steps are done,
draws the loss curve and the decision surface, and prints "XOR learned" when the four outputs
fall on the right side of 0.5. ``shadergpgpu export-web xor -o xor.html`` runs it.
"""
from __future__ import annotations

import base64
import json
import tempfile
import time
from pathlib import Path

import numpy as np

XOR_X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float64)
XOR_T = np.array([[0], [1], [1], [0]], dtype=np.float64)


def _texel_index(layout, shape, want) -> list[int]:
    """Positions, in the raw texels a readback returns, of the logical elements ``want``
    ((row, col) of a matrix of ``shape``)."""
    rows, cols = shape
    ids = np.arange(rows * cols, dtype=np.float32).reshape(layout.rows, layout.cols)
    raw = np.asarray(layout.pack_array(ids), dtype=np.float32).ravel()
    out = []
    for r, c in want:
        hit = np.flatnonzero(raw == r * cols + c)
        out.append(int(hit[-1]))  # id 0 also marks padding: take the last
    return out


def xor_page(path, hidden: int = 4, steps: int = 2000, lr: float = 2.0, seed: int = 0,
             grid: int = 32, steps_per_section: int = 20, device=None) -> dict:
    """Write the page to ``path``; returns what it embeds (steps, the Python ms per step...)."""
    from ..algorithms.backprop import BackpropNet
    from ..engine.device import Device
    from ..engine.trace import trace

    if steps_per_section < 2 or steps_per_section % 2:
        raise ValueError("steps_per_section must be even and >= 2 (the weights ping-pong "
                         f"between two buffers every step), got {steps_per_section}")
    dev = device if device is not None else Device(profile="webgl2")
    g = np.linspace(0.0, 1.0, grid)
    points = np.array([[x, y] for y in g for x in g])
    with trace(dev) as t:
        net = BackpropNet(dev, [2, int(hidden), 1], XOR_X, XOR_T, lr=lr, schedule="fused",
                          packed=True, seed=seed)
        probe = net.probe(points)
        with t.section("outputs"):
            net.A[-1].get()
        with t.section("train"):
            net.step(steps_per_section)
        with t.section("surface"):
            probe.run().get()
    out_lay = net.A[-1].layout
    out_shape = net.A[-1].shape
    surf = probe.A[-1]
    # the Python run's pace on this device, for the page to show beside its own
    net.step(steps_per_section)
    dev.finish()
    t0 = time.perf_counter()
    n = 10 * steps_per_section
    net.step(n)
    dev.finish()
    py_ms = (time.perf_counter() - t0) * 1e3 / n
    config = {
        "hidden": int(hidden), "steps": int(steps), "steps_per_section": steps_per_section,
        "grid": int(grid), "X": XOR_X.tolist(), "T": XOR_T[:, 0].tolist(),
        "out_index": _texel_index(out_lay, out_shape, [(1, i) for i in range(4)]),
        "surface_index": _texel_index(surf.layout, surf.shape,
                                      [(1, i) for i in range(grid * grid)]),
        "python_ms_per_step": py_ms, "python_renderer": dev.caps.renderer,
    }
    net.release()
    with tempfile.TemporaryDirectory() as d:
        bundle = t.save(Path(d) / "xor.sgtrace").read_bytes()
    from .browser import web_folder
    web = web_folder()
    html = (web / "xor.html").read_text()
    html = html.replace("/*SG:PLAYER*/", (web / "player.js").read_text())
    html = html.replace("/*SG:CONFIG*/", json.dumps(config))
    html = html.replace("/*SG:BUNDLE*/", base64.b64encode(bundle).decode())
    Path(path).write_text(html)
    return config
