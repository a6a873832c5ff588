"""Reductions on the device: one engine for sum, dot, norm, arg-min / arg-max and user kernels.

Every reduction is a chain of render passes (:class:`Chain`). In each level one output texel
gathers ``fanin`` texels (or elements) of the level below, ``t = f + k * stride`` for output
``f``, so at every step neighbouring fragments read neighbouring texels; the last level writes
the result. A vector of ``n`` packed values (``ceil(n / 4)`` texels) takes
``max(1, ceil(log_fanin(ceil(n / 4))))`` passes; see :func:`passes` and the pass plans
``reduce/sum``, ``reduce/argbest``, ``reduce/kernel``, ``reduce/dot``, ``reduce/norm``.

* :class:`ReductionKernel` builds a reduction from expressions with CuPy's conventions::

      >>> import numpy as np, shadergpgpu as sg
      >>> from shadergpgpu.ops.reduce import ReductionKernel
      >>> l2 = ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)",
      ...                      identity=0.0, name="l2norm")
      >>> round(float(l2(np.arange(4.0))), 4)          # numpy in -> numpy out: sqrt(14)
      3.7417
      >>> l2(np.ones((3, 5)), axis=1).round(3)         # per row
      array([2.236, 2.236, 2.236], dtype=float32)

  Array parameters are read by element from textures of any layout; scalar parameters become
  uniforms. :data:`SUM`, :func:`dot` and :func:`norm` are instances of it, and
  :class:`SumReduction` (a prepared chain the algorithms reuse) runs :data:`SUM`'s kernels.
* Arg-min / arg-max (:class:`ArgReduction`) use the same chain with value and index textures
  (structure of arrays) and select-style code. Values are compared by their ordered bit
  patterns, never by float comparisons (which flush subnormals to zero on GPUs and llvmpipe):
  subnormals count, ``-0.0 == +0.0``, the first NaN wins, and ties go to the lower index, so
  the result equals :func:`numpy.argmin` / :func:`numpy.argmax` exactly; the value returned
  is the winner's stored bits. Indices travel as float32, exact up to
  2**24; longer inputs are refused. The first level may be a caller's kernel whose
  ``candidates()`` computes the values on the fly (SMO's working-set selection does this): build
  it with :func:`arg_kernels`.

Numerical contract (``u = 2**-24``, float32's unit roundoff; ``gamma(K) = K u / (1 - K u)``;
``F`` the fan-in; the bounds are against the exact sum of the float32 inputs):

* **Sums** (:func:`total`, :func:`sum`, :data:`SUM`, :class:`SumReduction`, and every
  ReductionKernel whose ``reduce_expr`` is ``a + b``). Each level adds, per lane, up to ``F``
  partial results one after the other onto the identity (``0 + x`` is exact, ``F - 1``
  roundings); the last whole-array level then folds the four lanes as ``(x + y) + (z + w)``
  (2 roundings). So a term meets at most ``K = L (F - 1) + 2`` roundings, ``L`` the passes
  (``len(level_sizes(T, F))`` over the ``T`` texels of the input's layout: ``ceil(n / 4)`` for
  a packed vector, ``n`` unpacked), and ``|s - sum(x)| <= gamma(K) * sum(|x|) + ftz``. Along
  an axis of length ``m`` (no lane fold): ``K = axis_passes(m, F) * (F - 1)``. Example:
  ``n = 300,000`` packed, ``F = 16``: ``L = 5``, ``K = 77``, ``gamma(K) = 4.6e-6``.
  :func:`rounding_depth` gives ``K``, :func:`error_bound` the bound.
* **dot** (``x * y`` mapped, one more rounding): ``K = L (F - 1) + 3`` (also when the driver
  fuses the multiply-add), bound ``gamma(K) * sum(|x y|) + ftz``.
* **norm**: ``s = sum(x * x)`` as ``dot``, then ``sqrt`` (GLSL allows it a few ulp):
  ``|r - ||x||| <= (gamma(K) / 2 + 10 u) ||x|| + sqrt(ftz)``.
* **ftz**, subnormals: GPUs and llvmpipe flush subnormal operands and results of float
  arithmetic to zero (sign kept or not). Each subnormal input read as 0 and each subnormal
  partial sum flushed loses less than ``2**-126``, so ``ftz = (1 + gamma(K)) * 2n * 2**-126``
  for a sum of ``n`` terms (for ``dot`` add ``2**-126 * sum(|x| + |y|)``: a subnormal factor
  loses its whole product). Example: the sum of ``[1e-45, 1e-40]`` is ``0.0`` (numpy:
  ``1.0e-40``); elements under ``2**-63 ~ 1.1e-19`` in magnitude have subnormal squares, which
  ``norm`` drops. On hardware that keeps subnormals the term is not needed, but it is the
  documented limit.
* **Overflow**: a partial sum beyond float32's range becomes ``+-inf`` and stays non-finite
  (``inf + -inf`` is NaN), so a finite result always satisfies the bound and an all-positive
  (all-negative) input whose sum exceeds ``3.4e38`` gives ``+inf`` (``-inf``), as numpy's
  float32 sum does. Where huge terms of both signs cancel, the device's tree and numpy's
  pairwise order may overflow at different points: NaN here where numpy gives inf, say.
  ``norm`` overflows to inf once ``sum(x * x)`` exceeds ``3.4e38`` (``||x|| > 1.8e19``; no
  rescaling), as numpy's float32 ``norm`` does. inf and NaN inputs propagate (IEEE).
* **Other ReductionKernels**: the expressions run in GLSL float32 arithmetic; ``min`` / ``max``
  select exactly among normal numbers but flush subnormals and are undefined for NaN in GLSL:
  use :func:`argmin` / :func:`argmax` (below) for an exact selection.
* **argmin / argmax**: exact, no bound (values ranked by their ordered bits; see
  :func:`argmin`).

Inputs: float64 arrays are converted to float32 (the device computes in float32); integer and
boolean arrays are accepted when every value is exactly representable (``|v| <= 2**24``);
complex, object and string arrays are refused.

    >>> from shadergpgpu.ops import reduce
    >>> dev = sg.Device()
    >>> x = dev.array(np.arange(10.0))
    >>> reduce.total(dev, x)
    45.0
    >>> reduce.argmax(dev, x)                     # (value, index)
    (9.0, 9)
    >>> reduce.argmin(dev, x, mask=np.arange(10) > 3)
    (4.0, 4)

Files:

* ``levels.py``: fan-in and the level schedule (:func:`level_sizes`, :func:`passes`,
  :func:`axis_passes`, :func:`fanin_for`, :data:`DEFAULT_FANIN`).
* ``bounds.py``: the error bounds (:data:`U`, :data:`TINY`, :func:`rounding_depth`,
  :func:`gamma`, :func:`error_bound`).
* ``chain.py``: :class:`Chain` (the prepared passes), :class:`Placeholder`, the partial-result
  vectors (``ReduceTuning.level_wrap``), :func:`result_array`.
* ``params.py``: checking a ReductionKernel's parameters, expressions and identity; operand
  conversion (:func:`host_operand`).
* ``kernel.py``: :class:`ReductionKernel` (its GLSL and its calls).
* ``kernel_chains.py``: the chains a ReductionKernel call runs (:class:`FlatChain`,
  :class:`AxisChain`).
* ``sums.py``: :data:`SUM`, :data:`DOT`, :data:`NORM`, :class:`SumReduction`, :func:`total`,
  :func:`total_device`, :func:`sum`, :func:`dot`, :func:`norm`.
* ``arg.py``: arg-min / arg-max (:func:`arg_kernels`, :class:`ArgReduction`, :func:`argmin`,
  :func:`argmax`, :func:`argmin_device`, :func:`argmax_device`), as the device's
  :class:`~shadergpgpu.ops.tuning.ReduceTuning` sets (``scan_strict``, ``arg_fetch_batch``).
"""

from . import arg, chain
from .arg import (ARG_FIRST, ARG_NEXT, ARG_NEXT_DUAL, MAX_INDEX, ArgReduction, arg_kernels,
                  argmax, argmax_device, argmin, argmin_device, index_of_max, index_of_min)
from .bounds import TINY, U, error_bound, gamma, rounding_depth
from .chain import Chain, Placeholder, result_array
from .kernel import ReductionKernel
from .kernel_chains import AxisChain, FlatChain
from .levels import (DEFAULT_FANIN, MAX_FANIN, axis_passes, default_fanin, fanin_for,
                     level_sizes, passes)
from .params import host_operand
from .sums import DOT, NORM, SUM, SumReduction, dot, norm, sum, total, total_device  # noqa: A004

__all__ = ["ARG_FIRST", "ARG_NEXT", "ARG_NEXT_DUAL", "ArgReduction", "AxisChain", "Chain",
           "DEFAULT_FANIN", "DOT", "FlatChain", "MAX_FANIN", "MAX_INDEX", "NORM", "Placeholder",
           "ReductionKernel", "SUM", "SumReduction", "TINY", "U", "arg_kernels", "argmax",
           "argmax_device", "argmin", "argmin_device", "axis_passes", "default_fanin", "dot",
           "index_of_max", "index_of_min",
           "error_bound", "fanin_for", "gamma", "host_operand", "level_sizes", "norm", "passes",
           "result_array", "rounding_depth", "sum", "total", "total_device",
           "arg", "chain"]
