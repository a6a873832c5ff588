"""Exceptions raised by shadergpgpu."""


class ShaderGPGPUError(RuntimeError):
    """Base class of the library's runtime errors."""


class CapabilityError(ShaderGPGPUError):
    """The OpenGL implementation lacks something the library needs (no GL, no float32 rendering)."""


class ShaderCompileError(ShaderGPGPUError):
    """A shader failed to compile or link; the message names the original file and line."""


class TooLargeError(ValueError):
    """An array does not fit in one texture even after wrapping."""


class LoopBudgetError(ValueError):
    """One fragment would run more loop iterations than the device's loop cap allows (Mesa
    llvmpipe silently stops longer loops), and the kernel's work cannot be split."""
