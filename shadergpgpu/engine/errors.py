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


class KernelDebugError(ShaderGPGPUError):
    """Debug mode (``Device(debug=True)`` or ``SHADERGPGPU_DEBUG=1``) caught a kernel reading
    an input out of range or making NaN/Inf from finite inputs. ``kernel``, ``array`` (the input
    or output named), ``index`` (its first bad index) and ``what`` ("read" or "nonfinite") say
    where; the message says it in words."""

    def __init__(self, message: str, kernel: str = "", array: str = "", index=None,
                 what: str = ""):
        super().__init__(message)
        self.kernel = kernel
        self.array = array
        self.index = index
        self.what = what
