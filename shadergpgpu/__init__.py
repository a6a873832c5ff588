"""shadergpgpu: general-purpose GPU computing with fragment shaders and float textures.

Arrays live in RGBA32F textures (packed: 4 values per texel, or unpacked); every kernel is a
fragment-shader render pass. The package is layered (see README.md):

* :mod:`shadergpgpu.engine`: context, layouts, arrays, declared kernels, passes, plans;
* :mod:`shadergpgpu.ops`: reusable operations (reductions, RBF, ...);
* :mod:`shadergpgpu.algorithms`: backprop, sgemm, blur, svm, sammon;
* :mod:`shadergpgpu.frontends`: the ``shadergpgpu`` command, reports, window.
"""
from .engine import (BufferLayout, Capabilities, CapabilityError, Device, DeviceArray, In,
                     Kernel, Layout, LoopBudgetError, Pass, PassCounter, PingPong, Scope,
                     ShaderCompileError, ShaderGPGPUError, Split, TexturePool, TooLargeError,
                     get_device, layout_for)
from .engine import builtin

__version__ = "0.2.0"

__all__ = [
    "BufferLayout", "Capabilities", "CapabilityError", "Device", "DeviceArray", "In", "Kernel",
    "Layout", "LoopBudgetError", "Pass", "PassCounter", "PingPong", "Scope",
    "ShaderCompileError", "ShaderGPGPUError", "Split", "TexturePool", "TooLargeError",
    "builtin", "get_device", "layout_for", "__version__",
]
