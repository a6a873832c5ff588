"""shadergpgpu: general-purpose GPU computing with fragment shaders and float textures.

Arrays live in RGBA32F textures (packed: 4 values per texel, or unpacked); every kernel is a
fragment-shader render pass. The package is layered (see docs/architecture.md):

* :mod:`shadergpgpu.engine`: context, layouts, arrays, declared kernels, passes, the pass
  counter and what the engine reports to listeners (``Device.observe``);
* :mod:`shadergpgpu.ops`: reusable operations (reductions, RBF, ...);
* :mod:`shadergpgpu.algorithms`: backprop, sgemm, blur, svm, sammon;
* :mod:`shadergpgpu.analysis`: pass plans, the cost model, its calibration and the reports,
  which observe the compute (nothing below imports it);
* :mod:`shadergpgpu.frontends`: the ``shadergpgpu`` command, window, web export.

The operations and estimators are also here, one import away (``sg.ElementwiseKernel``,
``sg.sgemm``, ``sg.MLP``, ``sg.SVC`` ...); they load on first use, so ``import shadergpgpu``
stays light (no scikit-learn, scipy or Dask until needed).
"""
from importlib import import_module as _import_module

from .engine import (BufferLayout, CacheBounds, Capabilities, CapabilityError, Device,
                     DeviceArray, EngineTuning, In, Kernel, KernelDebugError, Layout, Limits,
                     LoopBudgetError, Pass, PassCounter, PingPong, Scope, ShaderCompileError,
                     ShaderGPGPUError, Split, TexturePool, TooLargeError, Tuning, get_device,
                     layout_for)
from .engine import builtin

__version__ = "0.2.0"

#: name -> module it lives in ("module:name there" where it differs), imported on first
#: access (PEP 562)
_LAZY = {
    "ElementwiseKernel": "ops.elementwise", "ReductionKernel": "ops.reduce",
    "sum": "ops.reduce", "dot": "ops.reduce", "norm": "ops.reduce",
    "cumsum": "ops.scan", "sort": "ops.sort", "argsort": "ops.sort",
    "sgemm": "algorithms.sgemm", "gaussian_blur": "algorithms.blur",
    "MLP": "algorithms.backprop", "MLPClassifier": "algorithms.backprop",
    "MLPRegressor": "algorithms.backprop",
    "SVC": "algorithms.svm", "Sammon": "algorithms.sammon",
    "KMeans": "algorithms.kmeans",
    "trace": "engine.trace", "TraceError": "engine.trace",
    "export_web": "frontends.webmodels",
    "argmin": "ops.reduce.arg:index_of_min", "argmax": "ops.reduce.arg:index_of_max",
    # the tuning of each operation (engine/tuning.py; set on a device: Device.tune / tuned)
    "BlurTuning": "algorithms.blur", "SgemmTuning": "algorithms.sgemm",
    "SvmTuning": "algorithms.svm", "BackpropTuning": "algorithms.backprop",
    "SammonTuning": "algorithms.sammon", "SortTuning": "ops.tuning",
    "ReduceTuning": "ops.tuning",
}
_SUBMODULES = ("ops", "algorithms", "distributed", "analysis", "frontends")


def __getattr__(name):
    if name in _LAZY:
        module, _, attr = _LAZY[name].partition(":")  # "module" or "module:its own name"
        value = getattr(_import_module(f"{__name__}.{module}"), attr or name)
        globals()[name] = value
        return value
    if name in _SUBMODULES:
        return _import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))


__all__ = [
    "BufferLayout", "CacheBounds", "Capabilities", "CapabilityError", "Device", "DeviceArray",
    "EngineTuning", "In", "Kernel", "KernelDebugError", "Layout", "Limits", "LoopBudgetError",
    "Pass", "PassCounter", "PingPong", "Scope", "ShaderCompileError", "ShaderGPGPUError",
    "Split", "TexturePool", "TooLargeError", "Tuning",
    "builtin", "get_device", "layout_for", "__version__",
    *_LAZY,
]
