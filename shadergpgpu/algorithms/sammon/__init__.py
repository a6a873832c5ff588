"""Sammon mapping by gradient descent, one gather pass per iteration.

Source 003 (Borisov and Myasnikov) maps N points from n to m dimensions by minimising the
Sammon stress (eq. 1)

    E = 1 / sum_{i<j} dn_ij * sum_{i<j} (dn_ij - dm_ij)^2 / dn_ij

(dn: distances in the source space, dm: in the target space) with the gradient step (eq. 3)

    y_i(t+1) = y_i(t) + mu * sum_{j != i} (dn_ij - dm_ij) / (dn_ij dm_ij) * (y_i(t) - y_j(t)),
    mu = 2 lambda / sum_{i != j} dn_ij                                             (eq. 4)

How it runs on the engine
-------------------------
* Textures: the source points ``X`` (N x n, four coordinates per RGBA texel), the positions
  ``prev`` and ``next`` (N x m, m <= 4: one texel per point), the direction ``G`` and the
  per-point stress terms ``S``. Positions, ``G`` and ``S`` share one texture shape: a near-square
  wrap of N texels (a 1 x N strip would leave half of every 2 x 2 fragment quad idle).
* Kernels are declared once in :mod:`.kernels` (:data:`UPDATE` and :data:`ROW_SUMS`, one per
  source, :data:`DISTANCES`, :data:`SQUARED_NORMS`; the step is
  :data:`shadergpgpu.engine.builtin.SAXPY`). Sizes reach the shaders as uniforms, so a fit of
  any N and n compiles the same few programs.
* The tiled update (``layout="rows"``, distances recomputed; ``shaders/algorithms/sammon/
  tile.frag``, :data:`TILE`): a fragment owns K points i and one of ``n_part`` parts of the
  j range, and sweeps the points j in blocks of JB (``SammonTuning.tile_jb``). The default
  (:data:`TILE_DEFAULT` "k8j8wi") has K = 8, their s in the w lane of their 8 g targets
  (positions of at most 3 coordinates), JB = 8 and the block's points interleaved; else K = 4
  (K targets for g, one for s in four lanes; K = max_outputs - 1 on devices with fewer render
  targets). Per texel of coordinates it fetches the K texels of its points i and the
  JB texels of the block and forms K x JB dot products, so a fetched texel serves K or JB pairs
  (a register tile, as in SGEMM). dn^2 = |x_i|^2 + |x_j|^2 - 2 x_i.x_j (one multiply-add per
  coordinate and pair; X is centred on the host and its squared norms uploaded); a block where
  some real pair has dn^2 <= (|x_i|^2 + |x_j|^2) / 4 (where the subtraction could cancel: near
  or duplicate points) is recomputed exactly as sum (x_j - x_i)^2, so duplicates give dn = 0
  exactly and the distances keep float32 accuracy. X is stored blocked by points
  (:func:`blocked_source`) so it does not wrap and a point's texels are consecutive. The parts
  (about ``SammonTuning.tile_fragments`` fragments per pass, so a GPU has work for every core at
  N = 20,000) are summed by the finishing pass (``finish.frag``, :data:`FINISH`), which writes
  ``next_i = prev_i + mu * g_i`` (eq. 3), ``g_i`` and ``s_i`` one texel per point.
  The kernel is fetch-bound on GPUs (K + JB texels fetched per K x JB pairs and coordinate
  texel); variants (:data:`TILE_VARIANTS`, :meth:`SammonTuning.variant`): K = 4 or 8 (s in the
  w lane: ``tile_s_lane``), JB = 8 / 16 / 32, the coordinate loop unrolled by 2
  (``tile_unroll``), the block's points interleaved in the blocked source (one base texel
  per block, ``tile_interleave``). ``benchmarks/diag/sammon_variants.py`` times them.
* The pair update (``layout="columns"``, the cached distances, or ``SammonTuning.tile_rows`` off;
  ``shaders/algorithms/sammon/update.frag``): fragment i owns point i, loops over every j,
  recomputes (or fetches) dn_ij, and writes three targets at once: ``next_i``, ``g_i``, ``s_i``.
  It steps y_j's texel along the sweep instead of dividing by the shape uniforms per pair
  and computes the pair terms in m components (Y_STEP, Y_DIMS), and the cached distances of
  a texel's four lanes come from one block fetch (DIST's SHARED): the same bits. Made for
  CPU renderers, used on every device (``SammonTuning.fetch_variants`` turns them off).
* Then ``prev`` and ``next`` swap (ping-pong, :meth:`Pass.bind`), and the stress of ``prev`` is
  ``sum_i s_i / sum dn`` by the device sum reduction of :mod:`shadergpgpu.ops.reduce`: one
  float comes back per iteration (or, with ``SammonTuning.stress_on_host``, the terms s come
  back and are summed in float64 on the host: no reduction passes).
* Device profiles (``Device(profile=...)``): every accumulating pass uses
  ``accumulate="add"``, i.e. hardware blending, or the engine's ping-pong passes (1 + 2 per
  output) where the device has no float32 blending; loops are cut within ``dev.loop_cap``
  (255 on the GeForce 7800 GTX); arrays wrap at the profile's texture size; a pass writes at
  most ``dev.max_outputs`` targets (the tile shrinks to K = max_outputs - 1 points). The
  plan takes the same limits (:func:`plan_params`), so plan == counter under every profile.
* Source layouts (``layout=``): ``"rows"`` stores X row-major (``order="row"``, a texel holds
  four coordinates of one point; the sweep visits four consecutive points at a time, so the
  fetch of point i is shared by four pairs) and ``"columns"``
  column-major (``order="col"``, a texel holds one coordinate of four consecutive points, so
  one fetch serves four pairs and neighbouring fragments read the same texel).
* Cached distances (``cache=``): the constant dn can be computed once into an N x N texture
  (4 N^2 bytes: 0.4 GB at N = 10,000; it cannot hold N = 100,000) so that an iteration reads one
  texel per four pairs instead of recomputing n-dimensional distances.
* The j sweep is the kernels' :class:`~shadergpgpu.engine.kernels.Split` range (points for
  the tiled sweep, cut at multiples of JB, and for the ``"rows"`` pair kernel, cut at
  multiples of 4; packed columns of four points otherwise), with a loop cost per unit that
  depends on n (:func:`block_cost`). It is cut in two ways, every part one pass summed into
  the targets by additive accumulation (the first pair-kernel part adds ``prev``): into
  *chunks* (:mod:`.chunking`), to keep one pass under ``SammonTuning.pass_work`` (long draws on the
  NVIDIA driver), under about 8,192 points, and into at least ``split`` parts; and by the
  engine, when one fragment's loop would pass the device's loop cap (``dev.loop_cap``:
  65,535 on llvmpipe).
  The update is still exactly eq. 3 (only the order of the float additions changes).
  :func:`shadergpgpu.analysis.plans.sammon.plan_phases` gives the passes beforehand (registered plan ``sammon/fit``).
* Host waits: a chain of chunk passes (the setup's row sums, every update) waits for the GPU
  (``dev.finish()``) whenever more than ``SammonTuning.sync_work`` would be queued
  (:func:`host_waits`):
  a GPU driver may drop a long queue of passes without a GL error (a large setup's row sums
  queued at once come back as zeros, where the same passes with a wait after each are right;
  ``benchmarks/diag/sammon_rowsum.py`` runs both ways).
  The first update of a fit (:func:`spot_check_update`) and the setup's row sums
  (:func:`spot_check_rowsums`) are spot-checked against float64 rows on the host: a dropped
  or cut pass raises instead of fitting.

Why a full sweep instead of the source's half sweep
--------------------------------------------------
The source's fastest GPU variant visits each pair once (j > i) and adds the pair's term to both
points with atomic additions. A fragment shader can only write its own output texel(s): there is
no scatter and no atomic add on this path. So every fragment does a *full sweep* (all j != i) and
*gathers* the terms of its own point i: each pair is evaluated twice (once by i, once by j), twice
the arithmetic of the half sweep, but with no write conflicts, no atomics and a deterministic
result. (Additive blending could scatter only into whole render targets in a fixed order, which
does not help for per-pair contributions to two different points.)

Step size
---------
``step="source"`` applies eq. 3 with mu from eq. 4 (``learning_rate`` = lambda) at every
iteration. That step moves almost nothing on some data and overshoots on other data, so the
default ``step="adaptive"`` keeps eq. 3's direction and adapts only the length: the first step is
eq. 4's mu, rescaled if needed so that the RMS move lies between 0.1% and 5% of the embedding's
RMS spread (a normalised step); afterwards a "bold driver" backtracking rule multiplies the
step by 2 (until the first rejection, a warm-up) or by 1.2 after each iteration that lowers the
stress, and halves it (and retries from the last accepted positions) after one that does not.
The stress of a candidate comes free with the next update pass, so a
rejected candidate costs one pass and an O(N) step pass.

Degenerate pairs
----------------
Pairs with dn_ij = 0 (duplicate source points) are skipped in the update, in the stress and in
sum dn (their term in eq. 1 is undefined). In the update dm_ij is clamped from below by
``dm_floor = 1e-6 * mean(dn)`` so coinciding targets (dm = 0) give a zero term, not 0 * inf;
the stress uses the exact dm.

Files
-----
* ``estimator.py``: the scikit-learn estimator :class:`Sammon` (validation, ``fit`` in the units
  of X; a Dask fit through the runner ``fit_sammon`` of :mod:`shadergpgpu.engine.runners`).
* ``run.py``: :class:`SammonRun`, the device state of one fit between iterations (textures, prepared
  passes, the update and stress evaluation, the two step rules).
* ``geometry.py``: :func:`fit_geometry` (every layout, the cache, the sweep and its cuts from the
  shapes alone, before anything is allocated) and :func:`use_cache`.
* ``kernels.py``: the declared kernels (UPDATE, ROW_SUMS, TILE, FINISH, DISTANCES,
  SQUARED_NORMS), their loop costs and splits, :func:`sweep_source` and :func:`update_kernel`.
* ``tuning.py``: :class:`SammonTuning`, the choices that trade speed (the tiled update's
  variant, :data:`TILE_VARIANTS`; the fetch variants; where the stress is summed; the pass and
  wait bounds of the sweep), set on the device (``dev.tune(SammonTuning.variant("k4j16"))``)
  and read when a fit starts (``tuning_``).
* ``tiles.py``: points per fragment, parts per tile and the blocked source of the tiled update.
* ``chunking.py``: the j sweep in chunk passes and the host waits (:func:`sweep_chunks`,
  :func:`chunk_work`, :func:`host_waits`).
* ``sweeps.py``: the passes of a sweep under the loop cap (:func:`sweep_passes`); the pass
  plan ``sammon/fit`` is :mod:`shadergpgpu.analysis.plans.sammon`.
* ``checks.py``: the spot checks of the setup's row sums and of the first update against
  float64 rows on the host.
* ``step.py``: the adaptive step (:func:`start_step`, :class:`StepRule`), :data:`DM_FLOOR` and
  where the stress is summed (:func:`~.step.stress_on_host`).
* ``scaling.py``: X centred and scaled (:func:`data_scale`, :func:`normalized`) and
  :func:`pca_init`.
* ``reference.py``: the float64 numpy reference (:func:`reference_terms`,
  :func:`reference_fit`).

The step constants live in their home module and are read there at call time; the names
re-exported below are copies for reading.
"""
from __future__ import annotations

from ...engine.limits import ceil_div  # noqa: F401  (read as sammon.ceil_div by the tests)
from . import chunking, geometry, kernels, run, scaling, step, sweeps, tiles, tuning  # noqa: F401
from .checks import UPDATE_CHECK_EPS, host_row  # noqa: F401
from .chunking import (chunk_work, host_waits, sweep_align, sweep_chunks,  # noqa: F401
                       sweep_units)
from .estimator import Sammon
from .geometry import fit_geometry  # noqa: F401
from .kernels import (DISTANCES, FINISH, ROW_SUMS, SOURCES, SQUARED_NORMS, TILE, TILE_SHAPES,
                      UPDATE, block_cost, sweep_source, update_kernel)
from .sweeps import accumulate_cost, sweep_passes  # noqa: F401
from .reference import reference_fit, reference_terms
from .scaling import SCALE_MIN, data_scale, normalized, pca_init  # noqa: F401
from .step import DM_FLOOR, WARMUP_GROW, StepRule, start_step  # noqa: F401
from .tiles import (blocked_shape, blocked_source, tile_parts, tile_points,  # noqa: F401
                    tile_s_lane)
from .tuning import TILE_DEFAULT, TILE_VARIANTS, SammonTuning  # noqa: F401

__all__ = [
    "Sammon", "SammonTuning", "reference_fit", "reference_terms",
    # the submodules and the functions and classes re-exported from them (see "Files")
    "chunking", "geometry", "kernels", "run", "scaling", "step", "sweeps", "tiles", "tuning",
    "StepRule", "accumulate_cost", "block_cost", "blocked_shape", "blocked_source",
    "chunk_work", "data_scale", "fit_geometry", "host_row", "host_waits", "normalized",
    "pca_init", "start_step", "sweep_align", "sweep_chunks", "sweep_passes",
    "sweep_source", "sweep_units", "tile_parts", "tile_points", "tile_s_lane",
    "update_kernel",
]
