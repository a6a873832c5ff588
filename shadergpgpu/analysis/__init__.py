"""The analysis: what the engine's passes are expected to be and what they cost.

It observes the compute (:meth:`Device.observe <shadergpgpu.engine.device.Device.observe>`) and
is never imported by it: ``engine/``, ``ops/`` and ``algorithms/`` name nothing of this package.

* ``plans``: the pass-plan registry (:class:`~.plans.PassPlan`, :func:`~.plans.get_plan`) and
  one module of pass formulas per algorithm (``plans/backprop.py``, ``plans/sgemm.py`` ...),
  registered when this package is imported.
* ``work``: the work per fragment of the library's kernels, by kernel name.
* ``recorder``: :class:`~.recorder.WorkRecorder`, the listener that adds each observed call's
  work to a pass-counter snapshot (:func:`~.recorder.recording`).
* ``model`` and ``calibration``: the cost model and its measured speeds.
* ``reports``: ``shadergpgpu report | predict | calibrate``.
"""
from . import plans  # noqa: F401  (registers every algorithm's pass plans)

__all__ = ["plans"]
