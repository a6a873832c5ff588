"""A device's life: the record of the current context (:data:`CONTEXT`), the token that stands
for a device in it, :class:`Releasable` (what ``with`` and garbage collection release), and the
release of its context (from :meth:`Device.release` or when a dropped device is collected),
handing the heap back to the OS."""
from __future__ import annotations

import threading


class ContextState(threading.local):
    """Which device's GL context is current in this thread: the current device's token (a
    plain object, so that this record never keeps a dropped device alive). A GL context is
    current in one thread at a time: a device is used from the thread that made it (another
    thread gets a clear error; :func:`~shadergpgpu.engine.device.get_device` gives each thread
    its own default device)."""

    current = None


CONTEXT = ContextState()


class Releasable:
    """``with`` blocks and garbage collection call ``release()`` (which must be idempotent)."""

    __slots__ = ()

    def release(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


class Token:
    """Stands for a device in the process-wide record of the current context (see
    :class:`ContextState`) and says whether it is still alive."""

    __slots__ = ("alive",)

    def __init__(self):
        self.alive = True


def free_context(ctx, window, token) -> None:
    """Release a device's context (its GL objects go with it): from :meth:`Device.release` or
    when a dropped device is collected."""
    token.alive = False
    try:
        ctx.release()
    finally:
        # releasing a context may change which one is current: every device enters its own
        # context again on its next call
        CONTEXT.current = None
        if window is not None:
            import glfw
            glfw.destroy_window(window)
        _return_memory()


_MALLOC_TRIM = []


def _return_memory() -> None:
    """Hand freed heap memory back to the OS (glibc keeps what a software renderer's textures
    used in its arenas: without this, RSS stays up after the textures are deleted)."""
    if not _MALLOC_TRIM:
        fn = None
        try:
            import ctypes
            import ctypes.util
            name = ctypes.util.find_library("c")
            if name:
                fn = getattr(ctypes.CDLL(name), "malloc_trim", None)
        except OSError:  # pragma: no cover - not glibc
            fn = None
        _MALLOC_TRIM.append(fn)
    fn = _MALLOC_TRIM[0]
    if fn is not None:
        fn(0)


def trim_caches(dev) -> int:
    """:meth:`Device.trim <shadergpgpu.engine.device.Device.trim>`: release every cache the
    device holds; returns how many pool textures were deleted."""
    dev.activate()
    dev._epoch += 1
    dev._fbo_epoch += 1
    dev._resources.clear()
    dev._compiled.clear()
    dev._calls.clear()
    dev._quick.clear()
    dev._bodies.clear()
    dev._fbos.clear()
    dev._pbos.release()
    if dev.sanitizer is not None:
        dev.sanitizer.trim()
    n = dev.pool.trim()
    _return_memory()
    return n
