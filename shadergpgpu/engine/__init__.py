"""The engine: GL context, layouts, device arrays, declared kernels, render passes.

Layers, bottom up: ``context`` (GL context and capabilities), ``layout`` (pure shape math and
the GLSL accessors), ``arrays`` (textures and their pool), ``programs`` (shader files and the
program cache), ``kernels`` (declared kernels: inputs, outputs, typed uniforms, loop work),
``passes`` (compiled kernels, prepared passes), ``counter`` (the pass counter), ``calls`` (the
cached quick path of a known call), ``transfer`` (uploads and readbacks, mapped buffers),
``device`` (ties them together; ``Device.run``'s checks and draws),
``validation`` (input checks shared by every algorithm), ``sanitizer`` (debug mode: reads out
of range, NaN/Inf made by a kernel), ``observe`` (what the engine reports to listeners:
:meth:`Device.observe`; pass plans and cost models listen from outside the engine).
"""
from .arrays import DeviceArray, TexturePool
from .context import Capabilities
from .device import Device, PingPong, Scope, get_device
from .errors import (CapabilityError, KernelDebugError, LoopBudgetError, ShaderCompileError,
                     ShaderGPGPUError, TooLargeError)
from .kernels import In, Kernel, Split
from .layout import BufferLayout, Layout, layout_for
from .counter import PassCounter
from .passes import Pass
from .cache import CacheBounds
from .limits import Limits
from .tuning import EngineTuning, Tuning

__all__ = ["BufferLayout", "CacheBounds", "Capabilities", "CapabilityError", "Device",
           "DeviceArray", "EngineTuning", "In", "Limits", "Tuning",
           "Kernel", "KernelDebugError", "Layout", "LoopBudgetError", "Pass", "PassCounter",
           "PingPong", "Scope", "ShaderCompileError", "ShaderGPGPUError", "Split", "TexturePool",
           "TooLargeError", "get_device", "layout_for"]
