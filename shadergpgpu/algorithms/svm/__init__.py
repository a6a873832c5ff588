"""Support vector classification trained by SMO on the device (RBF kernel).

The solver is libsvm's (Fan, Chen and Lin 2005) laid out the way Catanzaro et al. (2008) run it
on a GPU. The dual gradient ``G``, the alphas and the labels live on the device as packed
vectors; each iteration is

1. selection: ``i = argmax_{t in I_up} -y_t G_t`` and ``Gmax2 = max_{t in I_low} y_t G_t`` by
   masked arg-max reductions (:mod:`shadergpgpu.ops.reduce`) whose first level computes the values
   and the I_up / I_low membership on the fly; with ``working_set="second-order"`` one more pass
   evaluates the kernel row of ``i`` and libsvm's second-order gain for every point (reading
   ``i`` from the device, no readback) and an arg-min picks ``j``; with ``"first-order"``
   ``j`` is the I_low arg-max (the "high"/"low" pair of the source);
2. the two-variable subproblem, solved exactly as libsvm does (clipping to the box), and
3. one update pass evaluating ``K(x_t, x_i)`` and ``K(x_t, x_j)`` for all ``t`` (fused) and
   adding ``y_t (y_i dalpha_i K_ti + y_j dalpha_j K_tj)`` to ``G_t``, writing the new alphas.

By default (``readback_every = k > 1``) step 2 runs on the device: every fragment of the update
pass solves the subproblem itself from the selection results (a few fetches: ``G_i, G_j``,
``alpha_i, alpha_j``, ``y_i, y_j`` and ``K_ij`` from the objective pass's kernel row), so an
iteration is the selection passes and one update pass, with no readback and no host work. The
solver state (iterations, stop flag, duality gap) lives in the last texel of the alpha vector
(padding points); the host reads that one texel every k iterations for the stopping test
(libsvm's ``Gmax + Gmax2 < tol``, or no second-order partner, or ``max_iter``). Once stopped,
the steps are no-ops, so the at most k - 1 iterations run past the stop change nothing and the
result does not depend on k. ``readback_every = 1`` solves the step on the host: one readback
of the 3-texel result array per iteration, the step solved on the host in float64, its result passed
to the update pass as uniforms. The device step computes in float32 (libsvm's kernel cache is
float32 too); on the test problems both paths take the same iterations and support vectors.

G and the alphas are read once at the end for the bias and the dual coefficients.

Loop budget: the update and objective passes walk all features in one fragment. Past the
device's loop cap (llvmpipe: ``ceil(n_features / 4) > 65,535``, i.e. more than 262,140
features) the squared distances are summed by split kernels over several blended passes and
the exponential is applied in one more pass (:mod:`shadergpgpu.ops.rbf`); below the cap the
fused single passes run unchanged. Under a device profile without float blending
(``Device(profile="geforce-7800gtx")`` and the mobile ones) the split passes accumulate by
ping-pong passes instead (the engine's ``accumulate``), and the reduction fan-in stays within
the profile's loop cap (:func:`shadergpgpu.ops.reduce.fanin_for`). The pass plan ``svm/smo``
counts every path (its parameters include ``loop_cap``, ``float_blend``, ``readback_every``).
Multi-class problems are split one-vs-one as libsvm does; the fitted attributes follow
scikit-learn's ``SVC`` (``classes_, support_, support_vectors_, n_support_, dual_coef_,
intercept_, n_iter_``).

Files:

* ``estimator.py``: :class:`SVC`, the scikit-learn estimator (one-vs-one training, fitted
  attributes, prediction on the host);
* ``smo.py``: :class:`BinarySMO`, one binary problem solved on the device (selection chains,
  updates, the device-step and host-step loops), ``READBACK_EVERY``;
* ``tuning.py``: :class:`SvmTuning` (the kernels' CPU-renderer indexing, the gain computed
  inside the arg-min), set on the device (``dev.tune(SvmTuning, fuse_gain=True)``);
* ``kernels.py``: every declared kernel (selection levels, objective, updates);
* ``choices.py``: the padding of a problem, :func:`gain_fused`; the pass plan ``svm/smo`` is
  :mod:`shadergpgpu.analysis.plans.svm`;
* ``libsvm.py``: libsvm's two-variable step and bias on the host (float64);
* ``checks.py``: what float32 and the device can hold (:func:`check_rbf_range`,
  :func:`check_fits`).
"""
from __future__ import annotations

# the names code outside the package uses
from . import choices, kernels  # noqa: F401  (kernels declared)
from .checks import check_fits, check_rbf_range  # noqa: F401
from .estimator import SVC  # noqa: F401
from .smo import READBACK_EVERY, BinarySMO  # noqa: F401
from .tuning import SvmTuning
