"""The pass plans of the one-pass and few-pass operations (``ops/elementwise``, ``rbf/pair``,
``ops/scan``, ``ops/sort``), registered when the package is imported."""
from __future__ import annotations

from .registry import PassPlan, register_plan
from ...ops.rbf import pair_passes
from ...ops.scan import scan_passes
from ...ops.sort import sort_passes

register_plan(PassPlan(
    name="ops/elementwise",
    formula="1 (+1 copy per output that is also an input)",
    phases=lambda aliased=0: {"elementwise": 1 + int(aliased)},
    notes="one fragment pass writes every output (up to 8 render targets); an output that is "
          "also an input is computed into a temporary and copied back (one copy pass each)",
    params=("aliased",)))

register_plan(PassPlan(
    name="rbf/pair",
    formula="1; past the loop cap (ceil(d / 4) > cap): c + 1, c = ceil(ceil(d / 4) / cap) "
            "distance passes (+ 4 per cut after the first without float blending: ping-pong "
            "accumulation of the two outputs)",
    phases=lambda n_features=1, loop_cap=None, float_blend=True: {
        "rbf": pair_passes(n_features, loop_cap, float_blend)},
    notes="K(x_t, x_h) and K(x_t, x_l) for all t in one pass with two render targets",
    params=("n_features", "loop_cap", "float_blend")))

register_plan(PassPlan(
    name="ops/scan",
    formula="max(1, ceil(log2 L))  (L = length of the scanned axis; flattened: the size)",
    phases=lambda length: {"scan": scan_passes(length)},
    notes="Hillis-Steele: one pass per offset 1, 2, 4, ... < L; exclusive scans shift the "
          "input in the first pass, so they take the same passes",
    params=("length",)))

register_plan(PassPlan(
    name="ops/sort",
    formula="1 + sum_{b=4..m} ceil((b - 2) / g), m = ceil(log2 L), g = FOLD_LOG2  "
            "(L = length of each sorted sequence)",
    phases=lambda length: {"sort": sort_passes(length)},
    notes="bitonic network over (key, index) pairs padded to 2**m; a first pass sorts groups "
          "of 8, then each merge level b takes ceil((b - 2) / g) passes, each running up to g "
          "stages of texel stride (and the last also the two lane stages) on registers; keys "
          "and indices written together (2 render targets)",
    params=("length",)))
