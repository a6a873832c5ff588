"""shadergpgpu: general-purpose GPU computing with fragment shaders and float textures.

Arrays live in RGBA32F textures (packed: 4 values per texel, or unpacked); every kernel is a
fragment-shader render pass. See README.md.
"""
from .arrays import DeviceArray, TexturePool
from .context import Capabilities
from .device import Device, Kernel, get_device
from .errors import CapabilityError, ShaderCompileError, ShaderGPGPUError, TooLargeError
from .layout import Layout, layout_for
from .passes import Pass, PassCounter

__version__ = "0.1.0"

__all__ = [
    "Capabilities", "CapabilityError", "Device", "DeviceArray", "Kernel", "Layout", "Pass",
    "PassCounter", "ShaderCompileError", "ShaderGPGPUError", "TexturePool", "TooLargeError",
    "get_device", "layout_for", "__version__",
]
