"""Pass plans: the passes per phase of one learning step, as formulas of the sizes and limits.

:func:`paper_phases` and :func:`fused_phases` give the exact count the device's counter
measures (under every profile), :func:`step_flops` the products' work; the plans registered
here (``backprop/paper-unpacked``, ``backprop/paper-packed``, ``backprop/fused``) carry them
in the plan registry.
"""
from __future__ import annotations

from ...engine.layout import Layout
from ...algorithms.backprop.geometry import (accumulate_pass_count, bp_rows, fused_delta, fwd_rows,
                                             gather_passes, grid_width, limits, quad_count,
                                             recomputes_first_layer, split_passes, squarish_layout,
                                             tile_rows, ubo_forward_plan, ubo_recompute,
                                             update_chunk)
from .registry import PassPlan, register_plan
from ...algorithms.backprop.kernels import BACKPROP, BACKPROP_TILE, FORWARD_TILE, APPLY_TILE

PAPER_PHASES = ("forward", "backprop", "update")      # what the paper's formula counts
EXTRA_PHASES = ("output-error", "apply")              # passes the paper leaves out


# ---- pass plans ----------------------------------------------------------------------------
def _sizes_arg(sizes=None, MI=None, MH=None, MO=None):
    if sizes is None:
        hidden = MH if isinstance(MH, (tuple, list)) else (MH,)
        sizes = (MI, *hidden, MO)
    return [int(s) for s in sizes]


def paper_phases(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None,
                 loop_cap=None, profile=None, device=None, software=False,
                 max_texture_size=None) -> dict:
    """Expected passes per phase label for one learning step of the paper schedule.

    Its kernels have no loops, so the loop cap changes nothing; without float blending
    (``profile``/``device``: e.g. the GeForce 7800 GTX) every accumulating pass is drawn as
    1 + 2 ping-pong passes, so forward, backprop and update triple (less their first pass)."""
    L = _sizes_arg(sizes, MI, MH, MO)
    K = len(L) - 1
    lim = limits(device, profile, loop_cap, software, max_texture_size)
    acc = accumulate_pass_count(lim, 1)
    per_layer = grid_width(N, packed)
    return {"forward": sum(1 + L[m] * acc + 1 for m in range(K)),
            "backprop": sum(1 + (L[m + 1] - 1) * acc for m in range(1, K)),
            "update": K * (1 + (per_layer - 1) * acc),
            "output-error": 1,
            "apply": K}


def fused_phases(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None,
                 loop_cap=None, profile=None, device=None, software=False,
                 max_texture_size=None, tuning=None) -> dict:
    """Expected passes per phase label for one learning step of the fused schedule.

    On uniform blocks (``limits(...).block_bytes`` at least ``geometry.UBO_BLOCK_BYTES``, where
    the :class:`~shadergpgpu.algorithms.backprop.BackpropTuning` takes them: ``tuning``, else
    the device's or the defaults): forward 1, update 1, apply 2 on the recompute path
    (:func:`~.geometry.ubo_recompute`); elsewhere a forward product reading its weights from
    blocks is one draw per window (:func:`~.geometry.ubo_forward_plan`) and its gather.

    Per weight layer: forward 1 pass (a thin layer: the direct kernel computes and applies f)
    or 2 (the register-tiled product into R render targets, then a pass gathering them and
    applying f); backprop 1 (direct) or 2 (tiled product, then the pass multiplying by
    a (1 - a)); update 1 (tiled partial sums) and apply 1. A loop longer than the device's loop
    cap (``loop_cap``, or the profile's / device's) adds the passes the engine cuts it into;
    each of them is 1 + 2R ping-pong passes where the device has no float blending. Limits
    come from ``device``, else from ``profile`` and ``loop_cap``.
    """
    L = _sizes_arg(sizes, MI, MH, MO)
    K = len(L) - 1
    lim = limits(device, profile, loop_cap, software, max_texture_size, tuning)
    if ubo_recompute(L, lim, N, packed):
        # the recompute path on uniform blocks: forward 1, gradients of both layers 1, apply 2
        return {"forward": 1, "update": 1, "apply": 2}
    cap = lim.loop_cap
    gw = grid_width(N, packed)
    nchunk = -(-gw // update_chunk(gw, cap))
    fwd = bwd = app = 0
    rc = recomputes_first_layer(L, lim)
    for m in range(K):
        R = fwd_rows(lim, L[m] + 1, L[m + 1])
        u = None if rc and m <= 1 else ubo_forward_plan(lim, L[m] + 1, L[m + 1], N, packed)
        if rc and m == 0:
            pass                             # the first hidden layer is never stored
        elif u:
            fwd += u[1] + 1                  # one product draw per weight window, the gather
        elif R == 1 and (cap is None or quad_count(L[m] + 1) <= cap):
            fwd += 1
        else:
            out = (squarish_layout(lim.max_texture_size, L[m + 1] + 1, N, packed) if m == K - 1
                   else Layout(L[m + 1] + 1, int(N), packed, "row", lim.max_texture_size))
            fwd += split_passes(FORWARD_TILE[False][R][True], lim, R, A=(L[m] + 1, N)) + \
                gather_passes(lim, R, L[m + 1], out, m == K - 1)
        Rg = tile_rows(lim.max_outputs, L[m + 1])
        app += split_passes(APPLY_TILE[Rg], lim, 1, W=(L[m] + 1, L[m + 1]),
                             P0=(nchunk * -(-L[m + 1] // Rg), L[m] + 1))
    for m in range(2 if fused_delta(L, lim) else 1, K):
        R = bp_rows(lim, L[m + 1], L[m] + 1)
        if R == 1:
            bwd += split_passes(BACKPROP[True], lim, 1, W=(L[m] + 1, L[m + 1]))
        else:
            bwd += split_passes(BACKPROP_TILE[R][True], lim, R, W=(L[m] + 1, L[m + 1])) + 1
    out = {"forward": fwd, "backprop": bwd, "update": K, "apply": app}
    return {k: v for k, v in out.items() if v}


def step_flops(sizes) -> int:
    """Floating-point operations of the products in one learning step per training vector
    (2 per multiply-add): forward (L_m + 1) L_{m+1}, error backpropagation L_m L_{m+1}
    (m >= 1) and gradient (L_m + 1) L_{m+1} per weight layer."""
    L = _sizes_arg(sizes)
    f = 0
    for m in range(len(L) - 1):
        f += 2 * 2 * (L[m] + 1) * L[m + 1]
        if m > 0:
            f += 2 * L[m] * L[m + 1]
    return f


def paper_formula_total(sizes=None, N=1, packed=True, MI=None, MH=None, MO=None) -> int:
    """The paper's own count (forward + backprop + update) for one step."""
    ph = paper_phases(sizes, N, packed, MI, MH, MO)
    return sum(ph[p] for p in PAPER_PHASES)


PLAN_PAPER_UNPACKED = register_plan(PassPlan(
    name="backprop/paper-unpacked", formula="MI + MH + MO + 2N + 4",
    phases=lambda packed=False, **kw: paper_phases(packed=False, **kw),
    notes="forward MI+MH+4, backprop MO, update 2N; plus output-error 1 and apply 2 "
          "(not counted by the paper)",
    params=("sizes", "N", "loop_cap", "profile", "software", "max_texture_size")))
PLAN_PAPER_PACKED = register_plan(PassPlan(
    name="backprop/paper-packed", formula="MI + MH + MO + N/2 + 4",
    phases=lambda packed=True, **kw: paper_phases(packed=True, **kw),
    notes="update takes ceil(N/4) passes per weight layer (N/2 when 4 divides N); plus "
          "output-error 1 and apply 2 (not counted by the paper)",
    params=("sizes", "N", "loop_cap", "profile", "software", "max_texture_size")))
PLAN_FUSED = register_plan(PassPlan(
    name="backprop/fused", formula="4K - 3 to 6K - 2 (5 to 10 for three layers; 4 on uniform blocks "
            "for one hidden layer over <= 3 inputs)",
    phases=lambda **kw: fused_phases(**kw),
    notes="per weight layer: forward 1 (direct) or 2 (register-tiled product + gather/f), "
          "backprop 1 or 2 (tiled product + a(1-a)), update 1 (tiled partial sums), apply 1; "
          "no backprop pass into the first hidden layer under an upper layer of <= 4 neurons, "
          "no forward pass for a first hidden layer over <= 3 inputs (both made inside the "
          "consumers); independent of N while every loop fits the loop cap (loop_cap=, "
          "profile=: split loops add passes, ping-pong accumulation without float blending); "
          "on uniform blocks of 64 KiB (a native hardware rasteriser): 4 passes for one hidden "
          "layer over <= 3 inputs and <= 4 outputs (forward through both layers, the gradients "
          "of both, 2 apply; nothing stored per hidden unit), else one more forward pass per "
          "weight window past the first",
    params=("sizes", "N", "packed", "loop_cap", "profile", "software", "max_texture_size")))


def plan_for(schedule: str, packed: bool) -> PassPlan:
    if schedule == "fused":
        return PLAN_FUSED
    return PLAN_PAPER_PACKED if packed else PLAN_PAPER_UNPACKED


def passes_per_step(net) -> dict:
    """Expected passes per phase for one step of a :class:`~shadergpgpu.algorithms.backprop.
    BackpropNet` (its plan on its device)."""
    fn = paper_phases if net.schedule == "paper" else fused_phases
    return fn(net.sizes, net.N, net.packed, device=net.dev)
