"""The pass plan of a Sammon fit (``sammon/fit``): the passes per phase (:func:`plan_phases`)
and the plan's parameters from a fitted estimator (:func:`plan_params`)."""
from __future__ import annotations

from ...algorithms.sammon import step as _step
from ...algorithms.sammon.chunking import sweep_chunks
from ...algorithms.sammon.tuning import SammonTuning
from ...algorithms.sammon.kernels import ROW_SUMS, sweep_source, update_kernel
from ...algorithms.sammon.sweeps import sum_passes, sweep_passes
from ...engine.limits import ceil_div
from ...ops import reduce as _reduce
from .registry import PassPlan, register_plan


def plan_phases(n, n_features, layout="rows", n_evals=1, split="auto", cached=False,
                n_rejects=0, adaptive=False, loop_cap=None, fanin=None, float_blend=True,
                max_outputs=8, tiled=True, tile_jb=None, tile_points=None, tile_s_lane=None,
                tile_unroll=None, stress_host=None, tuning=None):
    """Passes of one fit per phase (registered as plan ``sammon/fit``).

    n, n_features : the data's shape; layout : "rows" / "columns"; n_evals : update
    evaluations (``n_iter_``); split : the estimator's ``split`` parameter; cached : whether
    the distances were cached (``cached_``); n_rejects : ``n_rejected_``; adaptive : step
    "adaptive"; loop_cap : the device's ``loop_cap``; fanin : the sum reduction's fan-in;
    float_blend : the device's ``float_blending`` (False: accumulation by ping-pong passes);
    max_outputs : the device's ``max_outputs`` (points per tiled fragment); tiled : whether the
    rows sweep is the tiled kernel (``tiled_``); tile_jb : its points per block (default
    ``tuning.tile_jb``); tile_points, tile_s_lane, tile_unroll : its points i per fragment, s
    in g's w lane, coordinate unroll (``tile_points_``, ``tile_s_lane_``, ``tile_unroll_``;
    default: the tuning's for positions of at most 3 coordinates); stress_host : the stress
    summed on the host, no reduction passes (default: ``tuning.stress_on_host``, False where
    it is None); tuning : the fit's :class:`SammonTuning` (``tuning_``; default: the
    defaults). :func:`plan_params` collects them.
    """
    n, n_features = int(n), int(n_features)
    t = tuning or SammonTuning()
    if stress_host is None:
        stress_host = bool(t.stress_on_host)
    red = sum_passes(n, fanin)                       # S and V: one texel per point
    source = sweep_source(layout, cached, tiled)
    kern = update_kernel(source, max_outputs, tile_jb or t.tile_jb, tile_s_lane, tile_points)
    update = sweep_passes(kern, n, n_features, source,
                          sweep_chunks(n, n_features, source, split, tile_jb, t), loop_cap,
                          float_blend=float_blend,
                          unroll=t.tile_unroll if tile_unroll is None else tile_unroll,
                          tuning=t)
    if source == "tiled":
        update += 1                                   # FINISH: back to one texel per point
    if cached:
        setup = 1 + sum_passes(n * ceil_div(n, 4), fanin)
    else:
        setup = sweep_passes(ROW_SUMS[layout], n, n_features, layout,
                             sweep_chunks(n, n_features, layout, 1, tuning=t), loop_cap,
                             float_blend=float_blend) + red
    out = {"sammon/setup": setup,
           "sammon/update": int(n_evals) * update,
           "sammon/stress": 0 if stress_host else int(n_evals) * red}
    if adaptive:
        out["sammon/step"] = 1 + red + 1 + int(n_rejects)
    return out


def plan_params(est, dev) -> dict:
    """The parameters of plan ``sammon/fit`` for a fitted :class:`Sammon` on ``dev``."""
    return dict(n=est.embedding_.shape[0], n_features=est.n_features_in_, layout=est.layout,
                n_evals=est.n_iter_, split=est.split, cached=est.cached_,
                n_rejects=est.n_rejected_, adaptive=est.step == "adaptive",
                loop_cap=dev.loop_cap, fanin=_reduce.fanin_for(dev),
                float_blend=dev.float_blending,
                max_outputs=dev.max_outputs, tiled=est.tiled_, tile_jb=est.tile_jb_,
                tile_points=getattr(est, "tile_points_", None),
                tile_s_lane=getattr(est, "tile_s_lane_", None),
                tile_unroll=getattr(est, "tile_unroll_", None),
                stress_host=_step.stress_on_host(dev) if getattr(est, "tuning_", None) is None
                else bool(est.tuning_.stress_on_host),
                tuning=getattr(est, "tuning_", None))


register_plan(PassPlan(
    name="sammon/fit",
    formula="setup: 1 + R(N ceil(N/4)) cached, else c + R(N); update: E * (k + t); "
            "stress: E * R(N) (0 with the stress summed on the host); adaptive step: 2 + R(N) + rejects  (E = evaluations incl. the "
            "final stress, k = passes of one j sweep (chunks, each cut for the loop cap; each "
            "accumulating part 1 + 2 x outputs passes without float blending), t = 1 for the "
            "tiled rows sweep (its finishing pass) else 0, c = passes of the dn row sums, "
            "R(t) = sum passes over t texels)",
    phases=plan_phases,
    notes="setup: distance cache (or row sums of dn) and its sum; update: the gather passes of "
          "eq. 3 (one per part of the j sweep); stress: one device sum per evaluated position "
          "set; step (adaptive only): |G|^2 pass and its sum, first step, one step pass per "
          "rejected candidate",
    params=("n", "n_features", "layout", "n_evals", "split", "cached", "n_rejects",
            "adaptive", "loop_cap", "fanin", "float_blend", "max_outputs", "tiled",
            "tile_jb", "tile_points", "tile_s_lane", "tile_unroll", "stress_host", "tuning")))

