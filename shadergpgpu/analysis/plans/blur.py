"""The pass plans of the blur (``blur/recursive-hv``, ``blur/recursive-vtvt``,
``blur/exact``)."""
from __future__ import annotations

from ...algorithms.blur.api import sigma_pair
from ...algorithms.blur.exact import exact_passes
from ...algorithms.blur.lines import device_limits, row_texels, line_passes
from ...algorithms.blur.tiling import DEFAULT_TILING
from .registry import PassPlan, register_plan


def _hv_phases(h, w, gray=True, tiling=None, device=None, max_outputs=8, loop_cap=None):
    mo, cap, _ = device_limits(device, max_outputs, loop_cap, True)
    out = {f"H.{k}": v for k, v in
           line_passes(row_texels(w, gray), tiling, gray, mo, cap).items()}
    out.update({f"V.{k}": v for k, v in line_passes(h, tiling, False, mo, cap).items()})
    out["interleave"] = 1
    return {k: v for k, v in out.items() if v}


def _vtvt_phases(h, w, gray=True, tiling=None, device=None, max_outputs=8, loop_cap=None):
    mo, cap, _ = device_limits(device, max_outputs, loop_cap, True)
    out = {f"V1.{k}": v for k, v in line_passes(h, tiling, False, mo, cap).items()}
    out["T1"] = 1
    out.update({f"V2.{k}": v for k, v in line_passes(w, tiling, False, mo, cap).items()})
    out["T2"] = 1
    return {k: v for k, v in out.items() if v}


_LIMIT_PARAMS = ("device", "max_outputs", "loop_cap")
register_plan(PassPlan(
    name="blur/recursive-hv",
    formula="P(ceil(W/4) or W) + P(H) + 1, P(n) = 1 + q (2 + 2 (L(n) - 1)), L(n) = levels of n "
            f"texels (C1={DEFAULT_TILING.c1}, G={DEFAULT_TILING.g}, top<={DEFAULT_TILING.top}, "
            "lowered under a loop cap), q = 1 with 8 render targets (or a grayscale row), 2 "
            "with 4; no sigma term",
    phases=_hv_phases, params=("h", "w", "gray", "tiling") + _LIMIT_PARAMS,
    notes="per axis: reduce, combine x (L-1), carry, down x (L-1) (each twice, causal and "
          "anticausal half, on 4 render targets), apply (8 or 4 render targets); then one "
          "interleave pass. Weights and coefficients are uniforms (no upload). Give device= "
          "(or max_outputs=, loop_cap=) for a profile."))
register_plan(PassPlan(
    name="blur/recursive-vtvt",
    formula="P(H) + 1 + P(W) + 1 (vertical filter, transpose, vertical filter, transpose)",
    phases=_vtvt_phases, params=("h", "w", "gray", "tiling") + _LIMIT_PARAMS,
    notes="the transposes also gather the planes of the apply passes"))


def _exact_phases(h=0, w=0, gray=True, sigma=1.0, loop_cap=None, float_blending=True,
                  device=None):
    _, cap, fb = device_limits(device, 8, loop_cap, float_blending)
    sy, sx = sigma_pair(sigma)
    return {"exact.H": exact_passes(sx, 0, gray, cap, fb),
            "exact.V": exact_passes(sy, 1, gray, cap, fb)}


register_plan(PassPlan(
    name="blur/exact",
    formula="S(sigma_x) + S(sigma_y) (rows, then columns); each fragment reads 2 r + 1 taps "
            "in r + 1 iterations (symmetric pairs), r = int(4 sigma + 0.5); S = 1 pass, or "
            "n = ceil(c (r + 1) / (cap - e)) passes "
            "added by blending when that exceeds the device's loop cap (c = 4, e = 4 for the "
            "grayscale rows, else c = 1, e = 0); without float blending each added pass is a "
            "ping-pong of 3 (S = 3 n - 2)",
    phases=_exact_phases,
    params=("h", "w", "gray", "sigma", "loop_cap", "float_blending", "device"),
    notes="one pass per axis below the loop cap (any GPU but Mesa's llvmpipe at sigma < ~4,100; "
          "sigma < ~60 under the 7800 GTX profile's cap of 255); work per pixel grows "
          "linearly with sigma"))
