"""The worker side: one GL device per Dask worker process, used from one GL thread.

:class:`DevicePlugin` (a Dask ``WorkerPlugin``, registered under :data:`PLUGIN_NAME`) gives each
worker process one :class:`~shadergpgpu.engine.device.Device`, made lazily in the plugin's GL
thread (:class:`_GLThread`: a GL context is bound to the thread that made it current), and keeps
the device state of sharded computations by token. :func:`worker_device` and ``on_device`` run
code on that device; :func:`register` installs the plugin on a user's cluster.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import threading

from distributed import WorkerPlugin, get_worker
from ..engine.device import Device

PLUGIN_NAME = "shadergpgpu-device"


# ---- the GL thread ---------------------------------------------------------------------------
class _GLThread:
    """One long-lived thread that owns a GL context: every call on the device runs here."""

    def __init__(self, name: str):
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            fut, fn, args, kwargs = item
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                fut.set_result(fn(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                fut.set_exception(e)

    def submit(self, fn, *args, **kwargs) -> concurrent.futures.Future:
        fut: concurrent.futures.Future = concurrent.futures.Future()
        self._q.put((fut, fn, args, kwargs))
        return fut

    def call(self, fn, *args, **kwargs):
        if threading.current_thread() is self._thread:
            return fn(*args, **kwargs)
        return self.submit(fn, *args, **kwargs).result()

    def stop(self, timeout: float = 10.0):
        self._q.put(None)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)


# ---- the worker plugin -----------------------------------------------------------------------
class DevicePlugin(WorkerPlugin):
    """One :class:`~shadergpgpu.engine.device.Device` per Dask worker process.

    Parameters
    ----------
    check : at worker start, make a device once and release it, so that a worker whose GPU
        cannot run the library (no float32 rendering, no OpenGL 3.3) is refused before it
        joins, with the device's own :class:`~shadergpgpu.engine.errors.CapabilityError`.
    **device_options : keyword arguments of ``Device`` (``profile=``, ``limits=``,
        ``tuning=``...). ``device_index`` defaults to ``SHADERGPGPU_EGL_DEVICE`` of the
        worker's environment (the GPU :func:`local_cluster` gave it).

    The device itself is made lazily, on the first task that needs it, in the plugin's GL
    thread; per-computation state (:class:`Shards`) is kept in :attr:`states` by token.
    """

    name = PLUGIN_NAME
    idempotent = False

    def __init__(self, check: bool = True, **device_options):
        self.check = bool(check)
        self.device_options = dict(device_options)
        self._init_runtime()

    def _init_runtime(self):
        self._gl = None
        self._device = None
        self._lock = threading.Lock()
        self.states: dict = {}
        self.address = None

    def __getstate__(self):
        return {"check": self.check, "device_options": self.device_options}

    def __setstate__(self, state):
        self.check = state["check"]
        self.device_options = state["device_options"]
        self._init_runtime()

    # -- lifecycle
    def setup(self, worker=None):
        self.address = getattr(worker, "address", None)
        self._thread()
        if self.check:
            return self._check_async()
        return None

    async def _check_async(self):
        await asyncio.wrap_future(self._thread().submit(self._probe))

    def _probe(self):
        Device(**self.device_options).release()

    def teardown(self, worker=None):
        gl = self._gl
        if gl is None:
            return
        try:
            gl.call(self._release_all)
        finally:
            gl.stop()
            self._gl = None

    def _release_all(self):
        states, self.states = self.states, {}
        for st in states.values():
            _release_state(st)
        if self._device is not None:
            try:
                self._device.release()
            finally:
                self._device = None

    # -- use
    def _thread(self) -> _GLThread:
        with self._lock:
            if self._gl is None:
                self._gl = _GLThread(f"shadergpgpu-gl-{os.getpid()}")
            return self._gl

    def call(self, fn, *args, **kwargs):
        """Run ``fn(*args, **kwargs)`` in the GL thread (where :meth:`device` may be used)."""
        return self._thread().call(fn, *args, **kwargs)

    def device(self):
        """The worker's Device (made on first use); call from the GL thread (:meth:`call`)."""
        if self._device is None:
            self._device = Device(**self.device_options)
        return self._device

    def drop(self, token) -> int:
        """Release the states of one computation (all its shards on this worker)."""
        def run():
            keys = [k for k in self.states if k[0] == token]
            for k in keys:
                _release_state(self.states.pop(k))
            return len(keys)
        return self.call(run)


def _release_state(state) -> None:
    """Release the GL objects of a shard state (a DeviceArray, or containers of them)."""
    if state is None:
        return
    rel = getattr(state, "release", None)
    if callable(rel):
        try:
            rel()
        except Exception:  # noqa: BLE001 - best effort at teardown
            pass
        return
    if isinstance(state, dict):
        state = state.values()
    if isinstance(state, (list, tuple, set, type({}.values()))):
        for s in state:
            _release_state(s)


_FALLBACK: DevicePlugin | None = None
_FALLBACK_LOCK = threading.Lock()


def device_plugin() -> DevicePlugin:
    """This worker's plugin; a default one (made here, no start check) where none was
    registered."""
    global _FALLBACK
    try:
        w = get_worker()
    except ValueError:
        w = None
    if w is not None:
        p = w.plugins.get(PLUGIN_NAME)
        if p is not None:
            return p
    with _FALLBACK_LOCK:
        if _FALLBACK is None:
            _FALLBACK = DevicePlugin(check=False)
            _FALLBACK.address = getattr(w, "address", None)
        return _FALLBACK


def worker_device():
    """The worker's Device, for code already running in its GL thread (a ``setup`` or
    ``step`` of :class:`Shards` receives it as its first argument)."""
    return device_plugin().device()


def on_device(fn, *args, **kwargs):
    """Task body: ``fn(device, *args, **kwargs)`` in the worker's GL thread."""
    p = device_plugin()
    return p.call(lambda: fn(p.device(), *args, **kwargs))


def register(client, check: bool = True, **device_options) -> dict:
    """Register a :class:`DevicePlugin` on every worker of ``client`` (and on workers that join
    later). Raises the workers' error (e.g. ``CapabilityError``) if one cannot make a device."""
    return client.register_plugin(DevicePlugin(check=check, **device_options),
                                  name=PLUGIN_NAME)
