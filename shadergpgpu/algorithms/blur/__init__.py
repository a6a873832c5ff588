"""Gaussian blur on the engine: a recursive filter whose cost does not grow with sigma, and the
exact separable filter.

    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.algorithms.blur import gaussian_blur
    >>> img = np.random.default_rng(0).random((480, 640, 3)).astype(np.float32)
    >>> out = gaussian_blur(img, 8.0)                       # recursive, border "reflect"
    >>> ref = gaussian_blur(img, 8.0, method="exact")       # = scipy.ndimage.gaussian_filter

Both methods match ``scipy.ndimage.gaussian_filter(image, sigma, mode=border, truncate=4.0)``
(per channel): the exact one to float32 rounding, the recursive one to within 1.5e-3 of the
value range (typically 1e-4), whatever the image's offset; :func:`gaussian_blur` states the
bound, ``tests/algorithms/blur/test_blur_contracts.py`` checks it at its edges (sigma at the
identity threshold and at the largest accepted, values near 1e-38 and 1e38, constant and offset
images). Both keep a constant image exactly: their DC gain is 1 and they filter each line
less a value of that line (see "Offsets" below).

Files
-----
* ``api.py``: :func:`gaussian_blur` (argument checks, host image scaling, the identity copy)
  and the dispatch to a recipe or to the passes of a method.
* ``options.py``: methods, borders, schedules and the limits on sigma (truncation, largest
  exact radius, largest recursive sigma).
* ``tiling.py``: :class:`Tiling`, the kernels' loop counts and the line configuration on a
  device (:func:`fit_tiling`, :func:`line_config`).
* ``kernels.py``: every kernel declared once (:data:`REDUCE` .. :data:`FIR`).
* ``coefficients.py``: scipy's sampled kernel (:func:`gaussian_weights`), the recursive
  filter's gain-constrained fit (:func:`recursive_coefficients`) and its uniforms.
* ``recursive.py``: the recursive filter's passes (one line filter, the "hv" and "vtvt"
  schedules).
* ``exact.py``: the exact separable FIR passes and their pass count.
* ``work_arrays.py``: the work-array helpers the pass builders share, and what they tell a
  capture that records them (``engine/capture.py``).
* ``recipes.py``: prepared passes reused by repeated calls and the per-device recipe cache.
* ``tuning.py``: :class:`BlurTuning` (a recipe's flushes, the recipe cache's bound).
* ``lines.py``: the passes of one line filter and the traffic model of the benchmark (the
  pass plans ``blur/*`` are :mod:`shadergpgpu.analysis.plans.blur`).

The tuning is the device's :class:`BlurTuning` (``dev.tune(BlurTuning, flush_passes=False)``).
The kernel tables ``REDUCE`` .. ``TRANSPOSE`` (``kernels.py``) and ``_line_pass``
(``recursive.py``) live in their home modules, which read them at call time: read and set them
there. This package holds no copy; reading or setting one of them on the package raises an
AttributeError that names its home (a copy here would change nothing).

Device profiles
---------------
Under a profile (``Device(profile=...)``) the blur adapts to the device's limits instead of
failing (:func:`line_config`):

* render targets (``dev.max_outputs``): with 8 the summary passes write their 8 arrays at once
  and the apply pass 8 planes; with 4 (GeForce 7800 GTX, WebGL2, Raspberry Pi 4) each summary
  pass is drawn twice (causal half, then anticausal half: kernels with ``PART`` 1 and 2) and
  the apply pass writes 4 planes (``NPL`` 4: 4 texels per fragment; the interleave and
  transpose passes gather 4 planes). A packed grayscale row keeps its 2 summary arrays. Fewer
  than 4 targets: ``method="exact"`` (one target).
* loop cap (``dev.loop_cap``, 255 on the 7800 GTX): the tiling is lowered until every recursive
  kernel's declared loops fit (:func:`fit_tiling`; the default fits 255: the packed
  grayscale rows' reduce loops 210 times); an explicit ``tiling=`` is used as given (over the
  cap: LoopBudgetError).
* texture size: the image and every work array wrap into the device's texture size (all
  kernels read and write through the layout accessors); past what a wrapped texture holds,
  TooLargeError.
* float blending: only the exact method's split tap loop accumulates; without float blending
  the engine adds each slice by ping-pong passes (draw, combine, copy back).

The pass plans (:mod:`shadergpgpu.analysis.plans.blur`) take ``device=`` (or ``max_outputs=``, ``loop_cap=``, ``float_blending=``) and
match the pass counter under every profile.

Offsets
-------
The recursive kernels (reduce, carry, apply) filter each line less its first value c and add c
to the output; the exact one sums each output's taps less its centre value and adds it after.
The filters are linear with gain 1, so the result is the same, but the float32 rounding of the
recursion and of the long tap sums is then relative to the line's range, not to its magnitude:
1000 + rand(64, 64) comes out as accurately, relative to its range, as rand, within the
rounding of the output (6e-8 of 1000), where filtering the values themselves would leave
errors of a sizeable fraction of the range. For border "constant", the zero outside
becomes -c. Below :data:`IDENTITY_SIGMA` an axis is the identity (the recursive coefficients
are then alpha = 0, h0 = -1); with both axes there the blur is a copy.
"""

import sys as _sys
import types as _types

from . import kernels, lines, recipes, recursive
from .api import HOST_SCALE_EXP, gaussian_blur
from .coefficients import (IDENTITY_SIGMA, gaussian_weights, is_identity_sigma,
                           recursive_coefficients, recursive_kernel)
from .exact import exact_passes, exact_radius
from .kernels import C1_CONSTANTS, FIR, NPLS
from .options import (BORDERS, MAX_EXACT_RADIUS, MAX_RECURSIVE_SIGMA, METHODS, SCHEDULES,
                      TRUNCATE)
from .lines import line_passes, traffic_bytes
from .recipes import RECIPE_MAX_TEXELS, clear_cache, recipe_cache_bytes
from .tuning import BlurTuning
from .tiling import (DEFAULT_TILING, LineConfig, Tiling, apply_loop, carry_loop, combine_loop,
                     down_loop, fit_tiling, line_config, reduce_loop)

__all__ = [
    "BORDERS", "BlurTuning", "C1_CONSTANTS", "DEFAULT_TILING", "FIR", "HOST_SCALE_EXP",
    "IDENTITY_SIGMA", "LineConfig", "MAX_EXACT_RADIUS", "MAX_RECURSIVE_SIGMA", "METHODS", "NPLS",
    "RECIPE_MAX_TEXELS", "SCHEDULES", "TRUNCATE", "Tiling", "apply_loop", "carry_loop",
    "clear_cache", "combine_loop", "down_loop", "exact_passes", "exact_radius", "fit_tiling",
    "gaussian_blur", "gaussian_weights", "is_identity_sigma", "kernels", "line_config",
    "line_passes", "lines", "recipe_cache_bytes", "recipes", "recursive",
    "recursive_coefficients", "recursive_kernel", "reduce_loop", "traffic_bytes",
]

# the run-time settings and their home modules (see "Files" above)
_HOMES = {**dict.fromkeys(("APPLY", "CARRY", "COMBINE", "DOWN", "INTERLEAVE", "REDUCE",
                           "TRANSPOSE"), kernels),
          "_line_pass": recursive}


def _elsewhere(name: str) -> AttributeError:
    home = _HOMES[name].__name__
    return AttributeError(f"{name} lives in {home}, which reads it at call time: read or set "
                          f"it there ({home}.{name}); {__name__} holds no copy")


def __getattr__(name: str):
    if name in _HOMES:
        raise _elsewhere(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Package(_types.ModuleType):
    """This package's module type: setting a run-time setting here is refused (a copy here
    would change nothing), naming the module that holds it."""

    def __setattr__(self, name, value):
        if name in _HOMES:
            raise _elsewhere(name)
        super().__setattr__(name, value)


_sys.modules[__name__].__class__ = _Package
