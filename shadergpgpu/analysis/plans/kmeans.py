"""The pass plan of a k-means fit (``kmeans/lloyd``), read from the problem's geometry
(:func:`shadergpgpu.algorithms.kmeans.sizes.geometry`), so the plan counts what the fit runs."""
from __future__ import annotations

from ...algorithms.kmeans.sizes import geometry
from ...ops.reduce import default_fanin, passes
from .registry import PassPlan, register_plan


def lloyd_phases(n, n_features, n_clusters, n_iter, loop_cap=None, float_blend=True,
                 fanin=None) -> dict:
    """Passes of one Lloyd run (one of ``n_init``) that took ``n_iter`` iterations."""
    g = geometry(n, n_features, n_clusters, loop_cap)
    a = len(g.assign_cuts)
    cuts = len(g.status_cuts)
    s = cuts + (cuts - 1) * (0 if float_blend else 2)
    return {"kmeans/init": 1, "kmeans/assign": (int(n_iter) + 1) * a,
            "kmeans/update": 2 * int(n_iter), "kmeans/status": int(n_iter) * s,
            "kmeans/inertia": passes(n, fanin or default_fanin(loop_cap))}


register_plan(PassPlan(
    name="kmeans/lloyd",
    formula="per run of n_iter iterations: init 1; assign (n_iter + 1) A; update 2 n_iter; "
            "status n_iter S; inertia L. A = ceil(k / floor(cap / (ceil(d / 4) + 1))) (1 "
            "without a loop cap); S = c status cuts (c = ceil(k ceil(d / 4) / cap), 1 below "
            "the cap), each after the first costing 2 more without float blending; "
            "L = ceil(log_F(ceil(n / 4))) (the sum of the distances, ops.reduce)",
    phases=lloyd_phases,
    notes="one 1-texel readback per iteration (shift, empty clusters, changed labels); the "
          "final assignment always runs (labels of the final centres); an iteration with an "
          "empty cluster is finished on the host (no passes; partial sums, labels and "
          "distances read back); labels, centres and the inertia read once per run",
    params=("n", "n_features", "n_clusters", "n_iter", "loop_cap", "float_blend", "fanin")))
