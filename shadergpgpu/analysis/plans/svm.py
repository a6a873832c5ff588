"""The pass plan of a binary SMO solve (``svm/smo``): the passes of the split distance kernels
(:func:`split_passes`) and of one solve (:func:`smo_phases`)."""
from __future__ import annotations

from ...algorithms.svm.choices import padded_count, walk_fits, gain_fused
from ...engine.limits import ceil_div
from ...ops import reduce as _reduce
from ...ops.rbf import pair_passes
from .registry import PassPlan, register_plan


def split_passes(n_features: int, loop_cap: int | None, n_outputs: int,
                 float_blend: bool = True) -> int:
    """Passes of one split distance kernel (0 below the loop cap): one pass per cut of the
    feature texels; the cuts after the first accumulate, by blending (1 pass) or, without float
    blending, by ping-pong passes (1 + 2 per output; ``Device.accumulate_passes``)."""
    texels = ceil_div(int(n_features), 4)
    if loop_cap is None or texels <= loop_cap:
        return 0
    cuts = ceil_div(texels, int(loop_cap))
    return cuts + (cuts - 1) * (0 if float_blend else 2 * int(n_outputs))


def smo_phases(n: int, n_iter: int, working_set: str = "second-order",
               fanin: int | None = None, fused: bool = True, n_features: int = 1,
               loop_cap: int | None = None, readback_every: int = 1,
               float_blend: bool = True, fuse_gain: bool = False) -> dict:
    """Passes of one binary SMO solve of ``n`` points that took ``n_iter`` iterations
    (``fanin`` None: the default for ``loop_cap``, as the solver picks it; ``fuse_gain``: the
    device's ``SvmTuning.fuse_gain``)."""
    fanin = fanin or _reduce.default_fanin(loop_cap)
    npad = padded_count(n)
    L = _reduce.passes(npad, fanin)
    rbf = pair_passes(n_features, loop_cap, float_blend)
    d2 = split_passes(n_features, loop_cap, 1, float_blend)
    obj = 1 if not d2 else d2 + 1
    if gain_fused(npad, n_features, fanin, loop_cap, working_set, fuse_gain):
        obj = 0
    second = working_set == "second-order"
    select = (L if fused else 2 * L) + (obj + L if second else 0)
    if readback_every == 1:
        return {"svm/init": 2, "svm/select": (n_iter + 1) * select, "svm/update": n_iter * rbf}
    if not second and not walk_fits(n_features, loop_cap):
        # the distances to i for K_ij: split cuts (at least one pass)
        select += max(1, d2)
    runs = ceil_div(n_iter + 1, int(readback_every)) * int(readback_every)
    return {"svm/init": 2, "svm/select": runs * select, "svm/update": runs * rbf}


register_plan(PassPlan(
    name="svm/smo",
    formula="readback_every = 1 (host step): init 2; per iteration: update R + select S, one "
            "more selection to stop. readback_every = k > 1 (device step, solved in the "
            "update pass): init 2; ceil((n_iter + 1) / k) * k iterations of select S, "
            "update R. "
            "S = L (fused I_up/I_low pair; 2L unfused) (+ O + L second-order); "
            "L = ceil(log_F(n_pad / 4)), n_pad = n rounded up to 256; R = 1, O = 0 (the "
            "gain computed in the arg-min's first level, where F (ceil(d / 4) + 1) fits the "
            "loop cap), else O = 1, or past "
            "the loop cap (ceil(d / 4) > cap, c = ceil(ceil(d / 4) / cap) cuts) R = c + 1, "
            "O = c + 1 (first-order device step with 2 ceil(d / 4) > cap: S += max(1, c)), each "
            "cut after the first costing "
            "1 + 2 per output more without float blending",
    phases=smo_phases,
    notes="host step: one small readback per iteration (3 texels); device step: one 1-texel "
          "readback every k iterations; G and alpha read once at the end",
    params=("n", "n_iter", "working_set", "fanin", "fused", "n_features", "loop_cap",
            "readback_every", "float_blend")))
