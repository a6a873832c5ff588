"""The analysis: what the engine's passes are expected to be and what they cost.

It observes the compute (:meth:`Device.observe <shadergpgpu.engine.device.Device.observe>`) and
is never imported by it: ``engine/``, ``ops/`` and ``algorithms/`` name nothing of this package.

* ``plans``: the pass-plan registry (:class:`~.plans.PassPlan`, :func:`~.plans.get_plan`) and
  one module of pass formulas per algorithm (``plans/backprop.py``, ``plans/sgemm.py`` ...),
  which the registry imports: importing ``shadergpgpu.analysis.plans`` registers every plan.
* ``kernel_work``: the work per fragment of the library's kernels, by kernel name.
* ``work_recorder``: :class:`~.work_recorder.WorkRecorder`, the listener that adds each observed
  call's work to a pass-counter snapshot (:func:`~.work_recorder.recording`).
* ``cost_model`` and ``calibration``: the cost model and its measured speeds.
* ``reports``: ``shadergpgpu report | predict | calibrate``.
"""
from importlib import import_module as _import_module

#: the subpackages and modules, imported on first use (``shadergpgpu.analysis.plans`` imports
#: every algorithm; the command line reaches the reports without them)
_SUBMODULES = ("calibration", "cost_model", "kernel_work", "plans", "reports", "work_recorder")

__all__ = list(_SUBMODULES)


def __getattr__(name):
    if name in _SUBMODULES:
        return _import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
