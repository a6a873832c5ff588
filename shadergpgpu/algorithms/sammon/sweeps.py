"""The passes of a sweep under the loop cap and without float blending (:func:`sweep_passes`):
the fit sizes its sweeps by them, and the pass plan ``sammon/fit``
(:mod:`shadergpgpu.analysis.plans.sammon`) counts with them."""
from __future__ import annotations

from ...engine.layout import Layout
from ...engine.limits import ceil_div
from ...ops import reduce as _reduce
from .kernels import SOURCES
from .tiles import tile_parts

def plan_layouts(n, n_features, source, max_size):
    order = "col" if source == "columns" else "row"
    if source == "cached":
        return {"D": Layout(n, n, True, "row", max_size)}
    return {"X": Layout(n, n_features, True, order, max_size)}


def accumulate_cost(n_outputs: int, float_blend: bool = True) -> int:
    """Passes one accumulating pass draws (as :meth:`Device.accumulate_passes`): 1 with float
    blending, else 1 + 2 per output (the engine's ping-pong accumulation)."""
    return 1 if float_blend else 1 + 2 * int(n_outputs)


def sweep_passes(kernel, n, n_features, source, chunks, loop_cap, max_size=1 << 20,
                 float_blend=True, unroll=1, tuning=None) -> int:
    """Passes the sweep of ``kernel`` draws over ``chunks`` under ``loop_cap``: the first part
    of the first chunk writes, every other part (chunks after the first, loop-cap cuts after
    the first of a chunk) accumulates, by blending or, without float blending, by the
    engine's ping-pong passes. ``unroll``: the tiled kernel's UNROLL; ``tuning``: the
    :class:`~.tuning.SammonTuning` of the tiled sweep's parts (default: the defaults)."""
    lays = plan_layouts(n, n_features, source, max_size)
    src = {"tiled": "rows"}.get(source, source)
    acc = accumulate_cost(len(kernel.outputs), float_blend)
    total = 0
    tiled = source == "tiled"
    parts = tile_parts(n, int(kernel.defines["K_PTS"]), chunks, kernel.split.align, tuning) \
        if tiled else 1
    if tiled:
        defines = kernel.resolve_defines({"UNROLL": int(unroll)})
    else:
        defines = {"SOURCE": SOURCES[src]} if "SOURCE" in kernel.defines else {}
    pt = ceil_div(ceil_div(n_features, 4), int(unroll)) * int(unroll)
    for k, (b0, nb) in enumerate(chunks):
        u = {"blk0": b0, "n_blk": nb, "pt_texels": pt, "n_part": parts}
        cuts = max(1, len(kernel.slices(lays, u, defines, loop_cap)))
        total += (1 + (cuts - 1) * acc) if k == 0 else cuts * acc
    return total


def sum_passes(texels: int, fanin) -> int:
    return _reduce.passes(texels, fanin or _reduce.DEFAULT_FANIN, packed=False)
