"""Beyond one GPU: the workloads on a Dask cluster, one GL device per worker process.

    from shadergpgpu import distributed as sgd
    client = sgd.local_cluster()              # one worker process per GPU (llvmpipe: 1)
    C = sgd.matmul(A, B, client=client)       # numpy or dask.array operands
    MLPClassifier(hidden=(64,)).fit(X, y, client=client)     # data-parallel training
    Sammon(cache=False).fit(X, client=client)                # points split over workers

Pieces (see ``docs/distributed.md``):

* :class:`DevicePlugin`: a Dask ``WorkerPlugin`` that gives each worker process one
  :class:`~shadergpgpu.engine.device.Device`, pinned to one GPU (``SHADERGPGPU_EGL_DEVICE`` in
  the worker's environment, set per worker by :func:`local_cluster`; llvmpipe where there is
  no GPU). The device lives in a dedicated GL thread of the worker (a GL context is bound to
  the thread that made it current), is created lazily on first use, and holds the device state
  of sharded computations between iterations (keyed by a token). At worker start the plugin
  checks that a device can be made (``check=True``): a worker without float32 rendering is
  refused with the device's own :class:`~shadergpgpu.engine.errors.CapabilityError`.
* :func:`local_cluster`: a ``distributed.Client`` on one worker process per GPU of this
  machine, one thread each. Users with their own cluster pass their own Client (the plugin is
  registered on first use, or explicitly with :func:`register`).
* :func:`matmul`: ``a @ b`` for dask arrays (numpy wrapped): every output block is the sum
  over the K blocks of SGEMM products accumulated on one worker's device; blocks are chosen
  from the workers' texture size, so matrices larger than one device stream through by blocks.
* :class:`Shards`: rows of host arrays spread over the workers' devices, kept there between the
  steps of an iterative computation; each step broadcasts small arguments and returns small
  numpy results. A worker that dies loses nothing: its shards are rebuilt on a live worker from
  the data the client still holds and the step is run again (same answer); with no worker left
  the step fails with :class:`NoWorkersError`.
* :func:`fit_mlp`, :func:`fit_sammon`: the drivers behind ``MLP`` / ``MLPClassifier``
  ``.fit(X, y, client=)`` (data-parallel full-batch steps) and ``Sammon.fit(X, client=)``
  (rows of points split across workers), both on :class:`Shards`.

Nothing that holds a GL object is ever pickled (``Device`` refuses to be): only numpy arrays,
shard tokens and functions travel.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import math
import os
import queue
import shutil
import subprocess
import threading
import time
import uuid
import warnings
import weakref

import numpy as np

try:
    import dask
    import dask.array as da
    import distributed
    from distributed import WorkerPlugin, get_worker
    from distributed.deploy.local import LocalCluster
except ImportError as e:  # pragma: no cover - depends on the extra
    raise ImportError("shadergpgpu.distributed needs Dask: pip install "
                      "'shadergpgpu[distributed]'") from e

from .engine import validation as V
from .engine.errors import ShaderGPGPUError

__all__ = ["DeviceCluster", "DevicePlugin", "NoWorkersError", "PLUGIN_NAME", "Shards",
           "count_gpus", "device_info", "fit_mlp", "fit_sammon", "local_cluster", "matmul",
           "plan_blocks", "register", "worker_device"]

PLUGIN_NAME = "shadergpgpu-device"

#: Largest operand block (elements) matmul puts on a device at once by default: 2^28 float32
#: values = 1 GiB per operand, ~6 GiB of device memory for one SGEMM block product.
MAX_BLOCK_ELEMENTS = 1 << 28


class NoWorkersError(ShaderGPGPUError, RuntimeError):
    """The cluster has no worker left to run a computation on."""


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
    **device_options : keyword arguments of ``Device`` (``max_texture_size=``, ``profile=``,
        ``loop_cap=``...). ``device_index`` defaults to ``SHADERGPGPU_EGL_DEVICE`` of the
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
        from .engine.device import Device
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
            from .engine.device import Device
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


def _plugin() -> DevicePlugin:
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
    return _plugin().device()


def _on_device(fn, *args, **kwargs):
    """Task body: ``fn(device, *args, **kwargs)`` in the worker's GL thread."""
    p = _plugin()
    return p.call(lambda: fn(p.device(), *args, **kwargs))


def register(client, check: bool = True, **device_options) -> dict:
    """Register a :class:`DevicePlugin` on every worker of ``client`` (and on workers that join
    later). Raises the workers' error (e.g. ``CapabilityError``) if one cannot make a device."""
    return client.register_plugin(DevicePlugin(check=check, **device_options),
                                  name=PLUGIN_NAME)


# ---- the cluster -----------------------------------------------------------------------------
def count_gpus() -> int:
    """NVIDIA GPUs on this machine (``nvidia-smi -L``); 0 where there is none or no driver."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return 0
    try:
        out = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return 0
    if out.returncode != 0:
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


class DeviceCluster(LocalCluster):
    """A LocalCluster of one single-threaded worker process per GL device.

    Worker ``i`` runs with ``SHADERGPGPU_EGL_DEVICE=gpus[i % len(gpus)]`` in its environment
    (``None``: the default EGL device, llvmpipe on a machine without GPUs) and a
    :class:`DevicePlugin`; workers added later by ``scale`` continue the cycle.
    """

    def __init__(self, n_workers: int, gpus, plugin: DevicePlugin, env=None, **kwargs):
        self._gpus = list(gpus) or [None]
        self._plugin_proto = plugin
        self._env = dict(env or {})
        self._k = 0
        kwargs.setdefault("dashboard_address", ":0")
        kwargs.setdefault("memory_limit", "auto")
        if kwargs["memory_limit"] == "auto":
            from distributed.system import MEMORY_LIMIT
            kwargs["memory_limit"] = int(MEMORY_LIMIT // max(1, n_workers))
        super().__init__(n_workers=0, threads_per_worker=1, processes=True, **kwargs)
        try:
            for _ in range(n_workers):
                self.worker_spec.update(self.new_worker_spec())
            self.sync(self._correct_state)
            self.sync(self._wait_for, n_workers)
        except BaseException:
            self.close()
            raise

    #: How long a worker process may take to come back (its nanny restarts it after a crash)
    #: before the cluster gives its nanny up; Dask's default (15 s) is shorter than a busy
    #: machine takes to start a worker and make its device.
    lost_worker_timeout = "300s"

    def _update_worker_status(self, op, msg):
        with dask.config.set({"distributed.deploy.lost-worker-timeout":
                              self.lost_worker_timeout}):
            super()._update_worker_status(op, msg)

    async def _wait_for(self, n):
        while len(self.scheduler.workers) < n:
            await asyncio.sleep(0.01)

    def new_worker_spec(self):
        (name, spec), = super().new_worker_spec().items()
        gpu = self._gpus[self._k % len(self._gpus)]
        self._k += 1
        opts = dict(spec.get("options", {}))
        env = dict(self._env)
        if gpu is not None:
            env["SHADERGPGPU_EGL_DEVICE"] = str(gpu)
            opts["resources"] = {**(opts.get("resources") or {}), "GPU": 1}
        opts["env"] = {**(opts.get("env") or {}), **env}
        opts["plugins"] = {self._plugin_proto}
        return {name: {"cls": spec["cls"], "options": opts}}


def local_cluster(n_workers: int | None = None, *, gpus=None, device_options=None,
                  check: bool = True, env=None, **kwargs):
    """Start one worker process per GPU of this machine and return a ``distributed.Client``.

    Parameters
    ----------
    n_workers : workers to start; default one per GPU (``nvidia-smi -L``), or 1 on a machine
        without GPUs (every worker then renders with llvmpipe, the default EGL device).
    gpus : EGL device indices, one per worker (cycled); default ``range(count_gpus())``.
    device_options : keyword arguments of every worker's ``Device`` (e.g.
        ``{"max_texture_size": 64}``).
    check : refuse a worker whose device cannot run the library at start (see
        :class:`DevicePlugin`); the error is raised here.
    env : extra environment variables of every worker process.
    **kwargs : passed to ``distributed.LocalCluster`` (``threads_per_worker=1`` and
        ``processes=True`` are fixed: one GL context per process, used by one thread).

    ``client.cluster`` is the cluster; ``client.close(); client.cluster.close()`` (or ``with``
    on both) stops it.
    """
    for k in ("threads_per_worker", "processes"):
        if k in kwargs:
            raise TypeError(f"local_cluster fixes {k}: one GL device per single-threaded worker "
                            "process")
    if gpus is None:
        ngpu = count_gpus()
        gpus = list(range(ngpu)) if ngpu else [None]
    else:
        gpus = [None if g is None else V.integer(g, "gpus", lo=0) for g in gpus] or [None]
    if n_workers is None:
        n_workers = len(gpus)
    n_workers = V.integer(n_workers, "n_workers", lo=1)
    plugin = DevicePlugin(check=check, **(device_options or {}))
    try:
        cluster = DeviceCluster(n_workers, gpus, plugin, env=env, **kwargs)
    except Exception as e:
        # a refused worker: raise the device's own error (CapabilityError), not "Nanny failed
        # to start"
        cause = _root_cause(e, ShaderGPGPUError)
        if cause is not None:
            try:
                err = type(cause)(*cause.args)
            except Exception:  # noqa: BLE001 - an error type with another signature
                err = cause
            raise err from e
        raise
    try:
        client = distributed.Client(cluster)
    except BaseException:
        cluster.close()
        raise
    return client


def _root_cause(e: BaseException, kind) -> BaseException | None:
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, kind):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _client(client):
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError as e:
        raise ValueError("no Dask client: pass client= (e.g. shadergpgpu.distributed."
                         "local_cluster()) or create a distributed.Client first") from e


def _live_workers(client) -> list:
    return sorted(client.scheduler_info(n_workers=-1)["workers"]) if _sinfo_takes_n(client) \
        else sorted(client.scheduler_info()["workers"])


def _sinfo_takes_n(client) -> bool:
    import inspect
    try:
        return "n_workers" in inspect.signature(client.scheduler_info).parameters
    except (TypeError, ValueError):  # pragma: no cover
        return False


# ---- device information ----------------------------------------------------------------------
def _info(dev, worker=None) -> dict:
    return {"worker": worker, "pid": os.getpid(), "renderer": dev.caps.renderer,
            "vendor": dev.caps.vendor, "max_texture_size": int(dev.max_texture_size),
            "loop_cap": dev.loop_cap, "is_software": bool(dev.is_software),
            "max_outputs": int(dev.max_outputs), "float_blending": bool(dev.float_blending),
            "egl_device": os.environ.get("SHADERGPGPU_EGL_DEVICE"),
            "profile": dev.profile.name}


def _info_task():
    return _on_device(_info, _worker_address())


def _worker_address():
    try:
        return get_worker().address
    except ValueError:
        return None


def device_info(client=None) -> list[dict]:
    """Per worker: address, pid, GL renderer, texture size, loop cap, EGL device index."""
    client = _client(client)
    workers = _live_workers(client)
    if not workers:
        raise NoWorkersError("the Dask cluster has no worker")
    futs = [client.submit(_info_task, workers=[w], allow_other_workers=False, pure=False,
                          key=f"shadergpgpu-info-{uuid.uuid4().hex}") for w in workers]
    return client.gather(futs)


# ---- matmul ----------------------------------------------------------------------------------
def _round_down(x: int, m: int) -> int:
    return max(m, (x // m) * m)


def plan_blocks(M: int, N: int, K: int, n_workers: int, max_texture_size: int,
                max_elements: int = MAX_BLOCK_ELEMENTS) -> tuple[int, int, int]:
    """Block sizes ``(bm, bn, bk)`` for ``(M x K) @ (K x N)`` on ``n_workers`` devices.

    Every block side is at most the devices' ``max_texture_size`` (so no operand block wraps
    past one texture) and every operand block at most ``max_elements`` values; the output is
    cut into at least ``n_workers`` blocks where it can be (more work in flight), K as little
    as possible (one accumulator per output block, fewer passes).
    """
    lim = int(max_texture_size)
    bm, bn, bk = min(M, lim), min(N, lim), min(K, lim)
    # operand blocks within the element budget: shrink the largest side first
    while max(bm * bk, bk * bn, bm * bn) > max_elements:
        side = max(("m", bm), ("n", bn), ("k", bk), key=lambda t: t[1])[0]
        if side == "m":
            bm = _round_down((bm + 1) // 2, 8) if bm > 8 else bm
        elif side == "n":
            bn = _round_down((bn + 1) // 2, 8) if bn > 8 else bn
        else:
            bk = _round_down((bk + 1) // 2, 8) if bk > 8 else bk
        if bm <= 8 and bn <= 8 and bk <= 8:
            break
    # enough output blocks for every worker
    while -(-M // bm) * -(-N // bn) < n_workers and (bm > 8 or bn > 8):
        if bm >= bn and bm > 8:
            bm = -(-bm // 2)
        else:
            bn = -(-bn // 2)
    return bm, bn, bk


def _block_product(a_blocks, b_blocks):
    """Task: sum over k of a_blocks[k] @ b_blocks[k] on this worker's device (float32)."""
    if not isinstance(a_blocks, list):
        a_blocks, b_blocks = [a_blocks], [b_blocks]
    a_blocks = [np.asarray(a, dtype=np.float32) for a in a_blocks]
    b_blocks = [np.asarray(b, dtype=np.float32) for b in b_blocks]
    return _on_device(_accumulate_products, a_blocks, b_blocks)


def _accumulate_products(dev, a_blocks, b_blocks):
    from .algorithms.sgemm import sgemm
    if len(a_blocks) == 1:                   # K in one block: no accumulator
        return sgemm(a_blocks[0], b_blocks[0], device=dev)
    M, N = a_blocks[0].shape[0], b_blocks[0].shape[1]
    acc = dev.zeros((M, N))
    try:
        for a, b in zip(a_blocks, b_blocks):
            # one block pair on the device at a time; the sum stays there (beta = 1)
            nxt = sgemm(a, b, C=acc, alpha=1.0, beta=1.0, device=dev)
            acc.release()
            acc = nxt
        return acc.get()
    finally:
        acc.release()


def _as_dask(x, name: str):
    if isinstance(x, da.Array):
        if x.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
        if np.dtype(x.dtype).kind not in "biuf":
            raise TypeError(f"{name}: expected a real numeric array, got dtype {x.dtype}")
        return x, True
    arr = V.array(x, name, ndim=2, finite=False)
    return da.from_array(arr, chunks=arr.shape), False


def _fit_chunks(chunks: tuple, limit: int) -> tuple:
    """The chunks of one axis with every chunk cut to at most ``limit``."""
    if max(chunks) <= limit:
        return chunks
    total = sum(chunks)
    return (limit,) * (total // limit) + ((total % limit,) if total % limit else ())


def matmul(a, b, client=None, block=None, max_elements: int = MAX_BLOCK_ELEMENTS,
           name: str | None = None):
    """``a @ b`` on the cluster's devices, SGEMM blocks summed over K in float32.

    Parameters
    ----------
    a, b : 2-D ``dask.array`` or numpy arrays (any real dtype, computed in float32).
    client : a ``distributed.Client`` (default: the current one).
    block : ``(bm, bn, bk)`` block sizes; default from the workers' texture size
        (:func:`plan_blocks`); dask operands keep their chunks where these already fit.
    max_elements : largest operand block put on one device at once.
    name : the graph layer's name (default: a token of the operands, so that equal products
        share their keys as Dask expects of a pure function).

    Returns
    -------
    A lazy float32 ``dask.array`` when ``a`` or ``b`` is one (compute it on the cluster);
    a numpy array (computed on the cluster) when both are numpy arrays.

    Each output block is one task: the K blocks of its row of ``a`` and column of ``b`` are
    multiplied on the worker's device one pair at a time and accumulated there (SGEMM with
    ``beta = 1``), so only one pair of operand blocks and the accumulator occupy the device.
    Worker losses are handled by Dask (the lost tasks are recomputed from the graph).
    """
    client = _client(client)
    A, a_dask = _as_dask(a, "a")
    B, b_dask = _as_dask(b, "b")
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: a is {M}x{K}, b is {K2}x{N}")
    if 0 in (M, N, K):
        raise ValueError(f"matmul of empty operands: a is {M}x{K}, b is {K2}x{N}")
    infos = device_info(client)
    limit = min(i["max_texture_size"] for i in infos)
    if block is None:
        bm, bn, bk = plan_blocks(M, N, K, len(infos), limit, max_elements)
    else:
        bm, bn, bk = (V.integer(v, "block", lo=1, hi=limit) for v in block)
    # dask operands keep their own chunks where they fit; numpy operands take the plan
    if a_dask or b_dask:
        rows = _fit_chunks(A.chunks[0], bm) if a_dask else _even(M, bm)
        cols = _fit_chunks(B.chunks[1], bn) if b_dask else _even(N, bn)
        inner = _fit_chunks(A.chunks[1] if a_dask else B.chunks[0], bk)
    else:
        rows, cols, inner = _even(M, bm), _even(N, bn), _even(K, bk)
    A = A.rechunk((rows, inner))
    B = B.rechunk((inner, cols))
    C = da.blockwise(_block_product, "ij", A, "ik", B, "kj", dtype=np.float32,
                     concatenate=False,
                     name=name or "shadergpgpu-matmul-" + dask.base.tokenize(A, B))
    if a_dask or b_dask:
        return C
    # numpy operands travel in the graph: the scheduler keeps them, so the blocks of a lost
    # worker are recomputed (build dask arrays on the cluster for data that is large)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*large graph.*")
        return client.compute(C).result()


def _even(n: int, b: int) -> tuple:
    """``n`` cut into blocks of at most ``b``, as even as possible."""
    k = -(-n // b)
    base, extra = divmod(n, k)
    return tuple(base + 1 if i < extra else base for i in range(k))


# ---- sharded iterative computations ----------------------------------------------------------
_WORKER_LOSS = ()


def _loss_errors() -> tuple:
    global _WORKER_LOSS
    if not _WORKER_LOSS:
        from distributed.scheduler import KilledWorker
        errs = [KilledWorker, concurrent.futures.CancelledError, asyncio.CancelledError,
                OSError, asyncio.TimeoutError, TimeoutError]
        try:
            from distributed.client import FutureCancelledError
            errs.append(FutureCancelledError)
        except ImportError:  # pragma: no cover
            pass
        try:
            from distributed.comm.core import CommClosedError
            errs.append(CommClosedError)
        except ImportError:  # pragma: no cover
            pass
        _WORKER_LOSS = tuple(errs)
    return _WORKER_LOSS


def _shard_step(token, index, data, common, setup, step, args, kwargs):
    """Task: run ``step(dev, state, *args)`` on this worker, building the shard's device state
    from ``data`` first if this worker does not hold it (first step, or after a failure)."""
    p = _plugin()

    def run():
        dev = p.device()
        key = (token, index)
        if key not in p.states:
            p.states[key] = setup(dev, dict(data, common=common))
        return step(dev, p.states[key], *args, **kwargs)

    return p.call(run)


def _drop_task(token):
    return _plugin().drop(token)


def _drop_on_worker(token, dask_worker=None):
    p = dask_worker.plugins.get(PLUGIN_NAME) if dask_worker is not None else None
    if p is None:
        p = _FALLBACK
    if p is None or p._gl is None:
        return 0
    return p.drop(token)


class Shards:
    """Rows of host arrays spread over the workers' devices for an iterative computation.

    Parameters
    ----------
    client : a ``distributed.Client``.
    data : a dict of numpy arrays with the same number of rows (or one array); shard ``s``
        holds rows ``bounds[s]:bounds[s+1]`` of each. An int: that many rows and no per-row
        arrays (the shards are then row ranges, with their data in ``common``).
    setup : ``setup(dev, shard) -> state`` run on the worker's device the first time a worker
        runs a step of that shard; ``shard`` is the dict of row blocks plus ``"start"`` and
        ``"stop"`` (the rows' global range) and ``"common"``. The state (device arrays, ...)
        stays on the worker until :meth:`close`. It must depend on ``shard`` only: after a
        worker is lost it is rebuilt elsewhere from the client's copy of the data.
    common : anything every shard needs whole (e.g. all the points whose rows the shards
        split); sent once to every worker, kept by the client for recovery.
    n_shards : default one per worker. bounds : the shards' row boundaries instead.
    retries : how often one step is run again after losing workers.
    wait_workers : seconds a step waits for a worker to (re)join when none is left before it
        raises :class:`NoWorkersError`.

    :meth:`map` runs ``step(dev, state, *args)`` for every shard and returns the results in
    shard order. Everything that changes between iterations must travel in ``args`` (small
    arrays, or futures of :meth:`broadcast`), so a step is a pure function of the shard and
    its arguments and a re-run gives the same answer.
    """

    def __init__(self, client, data, setup, n_shards: int | None = None, retries: int = 3,
                 wait_workers: float = 60.0, bounds=None, common=None):
        self.client = _client(client)
        if isinstance(data, (int, np.integer)) and not isinstance(data, (bool, np.bool_)):
            data = {"_rows": np.empty((V.integer(data, "data", lo=1), 0), np.uint8)}
        elif not isinstance(data, dict):
            data = {"X": data}
        arrays = {}
        n = None
        for k, v in data.items():
            v = np.asarray(v)
            if v.ndim < 1:
                raise ValueError(f"data[{k!r}] must have rows, got a scalar")
            if n is None:
                n = v.shape[0]
            elif v.shape[0] != n:
                raise ValueError(f"every array of data needs {n} rows; {k!r} has {v.shape[0]}")
            arrays[k] = v
        if not arrays or not n:
            raise ValueError("Shards needs at least one non-empty array")
        self.n_rows = int(n)
        self.retries = V.integer(retries, "retries", lo=0)
        self.wait_workers = V.real(wait_workers, "wait_workers", lo=0)
        workers = self._workers_or_wait()
        if bounds is None:
            k = len(workers) if n_shards is None else V.integer(n_shards, "n_shards", lo=1)
            k = min(k, self.n_rows)
            bounds = np.linspace(0, self.n_rows, k + 1).round().astype(int)
        self.bounds = [int(b) for b in bounds]
        if self.bounds[0] != 0 or self.bounds[-1] != self.n_rows or \
                any(b1 <= b0 for b0, b1 in zip(self.bounds, self.bounds[1:])):
            raise ValueError(f"bounds must rise strictly from 0 to {self.n_rows}, "
                             f"got {self.bounds}")
        self.n_shards = len(self.bounds) - 1
        self._arrays = arrays
        self.setup = setup
        self.token = f"shards-{uuid.uuid4().hex}"
        self.recoveries = 0
        self._where = [workers[s % len(workers)] for s in range(self.n_shards)]
        self._data = [None] * self.n_shards
        self._common = common
        self._common_fut = None
        if common is not None:
            self._common_fut = self._broadcast_common()
        for s in range(self.n_shards):
            self._place(s, self._where[s])
        self._finalizer = weakref.finalize(self, _drop_everywhere, self.client, self.token)

    # -- placement
    def shard(self, s: int) -> dict:
        """The host data of shard ``s`` (row blocks and their global range)."""
        lo, hi = self.bounds[s], self.bounds[s + 1]
        out = {k: v[lo:hi] for k, v in self._arrays.items() if k != "_rows"}
        out["start"], out["stop"] = lo, hi
        return out

    def _place(self, s: int, worker: str):
        # a list: scatter sends a dict as one future per value
        self._data[s], = self.client.scatter([self.shard(s)], workers=[worker], hash=False)
        self._where[s] = worker

    def _broadcast_common(self):
        fut, = self.client.scatter([self._common], broadcast=True, hash=False)
        return fut

    def _workers_or_wait(self) -> list:
        t0 = time.monotonic()
        while True:
            ws = _live_workers(self.client)
            if ws:
                return ws
            if time.monotonic() - t0 >= self.wait_workers:
                raise NoWorkersError(
                    f"no Dask worker left: the cluster lost every worker and none joined "
                    f"within {self.wait_workers:g} s (wait_workers)")
            time.sleep(0.1)

    # -- steps
    def broadcast(self, x):
        """Send ``x`` to every worker once; returns its future (:meth:`map` does this for
        positional numpy arguments over 64 KiB)."""
        fut, = self.client.scatter([x], broadcast=True, hash=False)
        return fut

    def map(self, step, *args, **kwargs) -> list:
        """``[step(dev, state_s, *args, **kwargs) for every shard s]``, each on the worker
        holding shard ``s``; recovers from lost workers (see class doc)."""
        if self._finalizer is None or not self._finalizer.alive:
            raise ValueError("these Shards have been closed")
        loss = _loss_errors()
        for attempt in itertools.count():
            futs = []
            try:
                # large arrays go to every worker once (again on a retry: a lost worker may
                # have held the only copy), not once per task through the scheduler; the
                # scheduler answers KeyError for a worker that left during the scatter
                try:
                    sargs = tuple(self.broadcast(a) if _large(a) else a for a in args)
                except KeyError as e:
                    raise concurrent.futures.CancelledError(f"worker {e} left") from e
                futs = [self.client.submit(_shard_step, self.token, s, self._data[s],
                                           self._common_fut, self.setup, step, sargs, kwargs,
                                           workers=[self._where[s]],
                                           allow_other_workers=True, pure=False,
                                           key=f"{self.token}-{s}-{uuid.uuid4().hex[:12]}")
                        for s in range(self.n_shards)]
                return self.client.gather(futs)
            except loss:
                for f in futs:
                    f.cancel()
                if attempt >= self.retries:
                    raise
                self._recover()

    def _recover(self):
        """Re-place the shards whose data or worker was lost on live workers (from the
        client's copy of the data); more workers may go while this runs: try again."""
        self.recoveries += 1
        loss = _loss_errors()
        for attempt in itertools.count():
            workers = self._workers_or_wait()
            live = set(workers)
            cycle = itertools.cycle(workers)
            try:
                if self._common_fut is not None and self._common_fut.status != "finished":
                    self._common_fut = self._broadcast_common()
                for s in range(self.n_shards):
                    if self._where[s] not in live or self._data[s].status != "finished":
                        self._place(s, next(cycle))
                return
            except loss + (ValueError, KeyError):
                # a worker that left between the listing and the scatter
                if attempt >= 10 * max(1, self.retries):
                    raise
                time.sleep(0.2)

    def close(self):
        """Release the shards' device state on every worker."""
        if self._finalizer is not None and self._finalizer.alive:
            self._finalizer()
        self._data = [None] * self.n_shards
        self._common_fut = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __reduce__(self):
        raise TypeError("Shards live on a client and cannot be pickled")


def _large(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.nbytes > (64 << 10)
    if isinstance(x, (list, tuple)) and x and all(isinstance(v, np.ndarray) for v in x):
        return sum(v.nbytes for v in x) > (64 << 10)
    return False


def _drop_everywhere(client, token):
    try:
        if client.status == "running":
            client.run(_drop_on_worker, token)
    except Exception:  # noqa: BLE001 - the cluster may be gone already
        pass


# ---- data-parallel backpropagation -----------------------------------------------------------
def _mlp_setup(params, dev, shard):
    """Shard state: a BackpropNet on this worker's training vectors."""
    from .algorithms.backprop import BackpropNet
    return BackpropNet(dev, params["sizes"], shard["X"], shard["T"], lr=params["lr"],
                       schedule=params["schedule"], packed=params["packed"])


def _mlp_step(dev, net, weights, want_loss: bool, want_passes: bool):
    """One full-batch step on this shard from the broadcast ``weights``: returns the weight
    change of the shard (``-lr * its gradient``, as float64 differences of the float32
    weights), the loss of its forward pass (if asked) and the passes drawn (if asked)."""
    net.set_weights(weights)
    before = dict(dev.counter.passes) if want_passes else None
    net.step()
    passes = None
    if want_passes:
        passes = {k: v - before.get(k, 0) for k, v in dev.counter.passes.items()
                  if v != before.get(k, 0)}
    loss = net.loss() if want_loss else None
    new = net.weights()
    return [n - np.asarray(w, np.float64) for n, w in zip(new, weights)], loss, passes


def fit_mlp(est, X, T, client=None, n_shards=None):
    """Data-parallel full-batch training of ``est`` (an ``MLP`` / ``MLPClassifier``) on X
    (N, MI) and targets T (N, MO) in [0, 1]: the training vectors are split in row shards over
    the workers (each shard's BackpropNet stays on its worker's device), every step broadcasts
    the weights, each shard takes one step from them on its device and returns its weight
    change, and the client sums the changes (the gradient of the summed error is the sum of
    the shards' gradients). Sets the fitted attributes as ``fit`` does; the ``callback``
    receives ``None`` for the network (there is no single device net)."""
    from .algorithms import backprop as bp
    hidden = est._check_params()
    X = np.asarray(X, dtype=np.float64)
    T = np.asarray(T, dtype=np.float64)
    sizes = [X.shape[1], *hidden, T.shape[1]]
    # the weights as the devices hold them (float32), updated in float64 and rounded once per
    # step: one shard reproduces the single-device run exactly
    W = [np.asarray(w, np.float32) for w in bp.init_weights(sizes, est.seed)]
    params = {"sizes": sizes, "lr": float(est.lr), "schedule": est.schedule,
              "packed": bool(est.packed)}
    import functools
    loss_curve, loss_steps, passes = [], [], {}
    steps, every = int(est.steps), int(est.loss_every)
    done = 0
    with Shards(client, {"X": X, "T": T}, functools.partial(_mlp_setup, params),
                n_shards=n_shards) as sh:
        for s in range(steps):
            want_loss = bool((every and s % every == 0) or s == steps - 1)
            out = sh.map(_mlp_step, W, want_loss, s == 0)
            W = [(np.asarray(w, np.float64) + sum(o[0][m] for o in out)).astype(np.float32)
                 for m, w in enumerate(W)]
            done = s + 1
            if s == 0:
                passes = out[0][2] or {}
            if want_loss:
                loss = float(sum(o[1] for o in out))
                loss_curve.append(loss)
                loss_steps.append(s)
                if est.callback is not None and est.callback(s, loss, None) is False:
                    break
        n_shards = sh.n_shards
    weights = [w.astype(np.float64) for w in W]
    est._set_fitted(weights, sizes, loss_curve, loss_steps, done, passes)
    est.n_shards_ = n_shards
    return est


# ---- Sammon mapping, rows of points split across workers -------------------------------------
def _rows_rect(layout, first: int, last: int):
    """The texture rows of ``layout`` that hold its rows ``first`` .. ``last`` (a rect over
    the whole width; where rows share texture rows with their neighbours, as when a wrapped
    layout's rows are not whole texture rows, the neighbours' texels are computed too, the same
    way as on one device), or None (the whole texture) for column order."""
    if layout.order != "row":
        return None
    y0 = layout.texel_of(first, 0)[1]
    y1 = layout.texel_of(last, layout.cols - 1)[1]
    return (0, y0, layout.tex_w, y1 - y0 + 1)


def _restricted(p, n: int, lo: int, hi: int, k_pts: int):
    """The prepared pass ``p`` of a Sammon fit, drawn only over the texels of points
    lo .. hi-1: outputs with one texel per point (positions, direction, stress) or one per
    fragment of ``k_pts`` points (the tiled sweep's sums)."""
    from .engine.passes import Pass
    lay = next(iter(p.outputs.values())).layout
    if lay.rows == n:
        first, last = lo, hi - 1
    elif lay.rows == -(-n // k_pts):
        first, last = lo // k_pts, (hi - 1) // k_pts
    else:  # pragma: no cover - a new output kind of the single-device fit
        raise NotImplementedError(f"{p.kernel.name}: outputs of {lay.rows} rows for {n} "
                                  "points; shadergpgpu.distributed does not know how its "
                                  "texels map to points")
    rect = _rows_rect(lay, first, last)
    uniforms = {k: v for k, v in p.values.items() if k in p.kernel.uniforms}
    return Pass(p.device, p.kernel, p.inputs, p.outputs, uniforms, p.defines, p.blend, rect)


class _SammonShard:
    """One worker's part of a Sammon fit: the single-device fit state (``sammon._Run``: all
    the source points, since the sweep over j needs them, and the position textures) with
    its passes restricted to the texture rows of this worker's points lo .. hi-1 (the i of
    the gather): the setup's row sums of dn (their sum is this worker's part of sum dn) and
    every update pass. Chunks and per-point sums are the single-device ones, so each point's
    update is the same float32 computation as on one device given the same sum dn."""

    def __init__(self, dev, shard):
        from .algorithms import sammon as S
        c = shard["common"]
        Xc = c["X"]
        self.lo, self.hi = lo, hi = int(shard["start"]), int(shard["stop"])
        self.dev = dev
        n = Xc.shape[0]
        est = S.Sammon(**dict(c["params"], cache=False))
        rowsums = tuple(S.ROWSUM.values())
        cleared = set()
        plain_run = dev.run

        def rows_only(kernel, outputs, *args, **kwargs):
            # the setup's row sums of dn: this worker's rows only, zeros elsewhere (so the
            # device sum that follows is the sum over this worker's rows)
            if any(kernel is k for k in rowsums) and kwargs.get("rect") is None:
                if id(outputs) not in cleared:
                    dev.fill(outputs, 0.0)
                    cleared.add(id(outputs))
                kwargs["rect"] = _rows_rect(outputs.layout, lo, hi - 1)
            return plain_run(kernel, outputs, *args, **kwargs)

        dev.run = rows_only
        try:
            self.run = run = S._Run(dev, Xc, np.zeros((n, int(est.n_components))), est,
                                    rows=(lo, hi))
        finally:
            del dev.run
        try:
            # shards cut at whole texture rows of V (fit_sammon's bounds): the device sum is
            # over exactly these rows; otherwise sum them here from V
            lay = run.V.layout
            if lay.texel_of(lo, 0)[0] == 0 and (hi == n or lay.texel_of(hi, 0)[0] == 0):
                self.rowsum = float(run.sum_dn)
            else:
                self.rowsum = float(run.V.get().reshape(-1)[lo:hi].sum(dtype=np.float64))
            k_pts = run.k_pts
            run.passes = [_restricted(p, n, lo, hi, k_pts) for p in run.passes]
            if run.finish is not None:
                run.finish = _restricted(run.finish, n, lo, hi, k_pts)
            self.floor = run.dm_floor
        except BaseException:
            run.release()
            raise

    def evaluate(self, y_in, mu: float, dm_floor: float):
        """Update of this worker's points from positions ``y_in`` (all N): their next
        positions (eq. 3, step ``mu``), direction g and the sum of their stress terms."""
        run, dev = self.run, self.dev
        if dm_floor != self.floor:           # from the whole sum dn (the client's)
            for p in run.passes:
                if "dm_floor" in p.kernel.uniforms:
                    p.set(dm_floor=float(dm_floor))
            self.floor = dm_floor
        run.Y[0].set(y_in)
        with dev.phase("sammon/update"):
            if run.finish is not None:
                for p in run.passes:
                    p.run()
                run.finish.run(mu=float(mu))
            else:
                for p in run.passes:
                    p.run(mu=float(mu))
        lo, hi = self.lo, self.hi
        s = float(run.S.get().reshape(-1)[lo:hi].sum(dtype=np.float64))
        return run.Y[1].get()[lo:hi], run.G[0].get()[lo:hi], s

    def release(self):
        self.run.release()


def _sammon_setup(dev, st):
    r = st.run
    return {"rowsum": st.rowsum, "setup_s": r.setup_s, "split": r.split,
            "chunks": len(r.chunks), "tiled": bool(r.tiled),
            "tile_jb": getattr(r, "tile_jb", None)}


def _sammon_eval(dev, st, y_in, mu, dm_floor):
    return st.evaluate(y_in, mu, dm_floor)


class _SammonDriver:
    def __init__(self, shards, dm_floor):
        self.sh, self.dm_floor = shards, dm_floor
        self.eval_s = []

    def evaluate(self, y, mu):
        """(next positions, direction, stress of y) gathered from every shard."""
        t0 = time.perf_counter()
        parts = self.sh.map(_sammon_eval, np.ascontiguousarray(y, np.float32), float(mu),
                            self.dm_floor)
        nxt = np.concatenate([p[0] for p in parts]).astype(np.float32)
        g = np.concatenate([p[1] for p in parts]).astype(np.float32)
        s = float(sum(p[2] for p in parts))
        self.eval_s.append(time.perf_counter() - t0)
        return nxt, g, s


def fit_sammon(est, X, client=None, n_shards=None):
    """``Sammon.fit(X, client=)``: the points i of the gather split in row ranges across the
    workers, every worker holding all the source points (the sweep over j); each evaluation
    broadcasts the positions, every worker runs the single-device passes restricted to its
    rows and returns their next positions, direction and stress partial sum; the step rule
    (``step="source"`` or ``"adaptive"``) runs on the client. The distances are recomputed
    (``cache=True`` is refused: an N x N cache does not split by rows of points here)."""
    from sklearn.utils.validation import validate_data
    from .algorithms import sammon as S
    est._check_params()
    if est.cache is True or (isinstance(est.cache, np.bool_) and bool(est.cache)):
        raise ValueError("cache=True is not available with client=: every worker recomputes "
                         "the distances of its rows (use cache=False or 'auto')")
    if hasattr(X, "device") and hasattr(X, "layout") and hasattr(X, "get"):
        raise TypeError("X: pass a host array (Sammon reads the source points once)")
    X = validate_data(est, X, dtype=np.float32, ensure_min_samples=2)
    m = int(est.n_components)
    Y0 = np.asarray(est._start(X, m), dtype=np.float64)
    n = X.shape[0]
    # the parameters, not the estimator: its device (if any) lives in this process
    params = {k: v for k, v in est.get_params(deep=False).items() if k != "device"}
    common = {"X": X, "params": params}
    client = _client(client)
    info = device_info(client)
    k = len(info) if n_shards is None else V.integer(n_shards, "n_shards", lo=1)
    # shards cut at whole rows of the per-point textures (_Run's near-square wrap)
    w = min(max(1, math.isqrt(n - 1) + 1), min(i["max_texture_size"] for i in info))
    rows = -(-n // w)
    cuts = sorted({min(n, w * round(rows * t / k)) for t in range(k + 1)} | {0, n})
    with Shards(client, n, _SammonShard, bounds=cuts, common=common) as sh:
        # every worker made the single-device setup with the row sums of dn of its rows
        parts = sh.map(_sammon_setup)
        info = parts[0]
        sum_dn = float(sum(p["rowsum"] for p in parts))
        if not sum_dn > 0 or not math.isfinite(sum_dn):  # pragma: no cover - _Run refuses
            raise ValueError("X: all samples coincide (every source distance is 0); the "
                             "Sammon stress is undefined")
        mu = 2.0 * float(est.learning_rate) / sum_dn
        drv = _SammonDriver(sh, S.DM_FLOOR * sum_dn / (n * (n - 1)))
        info["setup_s"] = max(p["setup_s"] for p in parts)
        if est.step == "source":
            y, hist, evals, rejected, step = _sammon_source(est, drv, Y0, mu, sum_dn)
        else:
            y, hist, evals, rejected, step = _sammon_adaptive(est, drv, Y0, mu, sum_dn)
        n_shards = sh.n_shards
    if not np.isfinite(y).all():  # pragma: no cover - guarded by the clamps
        raise FloatingPointError("the embedding became non-finite; lower learning_rate")
    est.embedding_ = np.asarray(y, np.float32)
    est.stress_ = float(hist[-1])
    est.stress_history_ = [float(v) for v in hist]
    est.n_iter_ = evals
    est.n_rejected_ = rejected
    est.step_ = float(step)
    est.mu_ = mu
    est.cached_ = False
    est.tiled_ = info["tiled"]
    if info["tile_jb"] is not None:
        est.tile_jb_ = info["tile_jb"]
    est.split_ = info["split"]
    est.chunks_ = info["chunks"]
    est.timings_ = {"setup_s": info["setup_s"], "eval_s": list(drv.eval_s)}
    est.n_shards_ = n_shards
    return est


def _sammon_source(est, drv, Y0, mu, sum_dn):
    cur = Y0.astype(np.float32)
    history = []
    for it in range(int(est.n_iter)):
        nxt, _, s = drv.evaluate(cur, mu)
        e = s / sum_dn
        history.append(e)
        cur = nxt
        if est.tol is not None and it > 0 and abs(history[-2] - e) <= est.tol * history[-2]:
            break
    history.append(drv.evaluate(cur, 0.0)[2] / sum_dn)
    return cur, history, len(history), 0, mu


def _saxpy(alpha, x, y):
    """``alpha x + y`` in float32, as the device's SAXPY pass."""
    return (np.float32(alpha) * x + y).astype(np.float32)


def _sammon_adaptive(est, drv, Y0, mu, sum_dn):
    from .algorithms import sammon as S
    n = Y0.shape[0]
    ya = Y0.astype(np.float32)
    _, ga, s = drv.evaluate(ya, 0.0)
    e_a = s / sum_dn
    n_evals, history = 1, [e_a]
    g2 = float((ga.astype(np.float64) ** 2).sum())
    spread = float(np.sqrt(((Y0 - Y0.mean(axis=0)) ** 2).sum() / n))
    rms_g = math.sqrt(max(g2, 0.0) / n)
    step = S.start_step(mu, rms_g, spread)
    if step is None:
        return ya, history, n_evals, 0, 0.0
    yb = _saxpy(step, ga, ya)
    rule = S.StepRule(step, est.tol)
    while n_evals < est.n_iter:
        yc, gb, s = drv.evaluate(yb, rule.trial)
        e_b = s / sum_dn
        n_evals += 1
        accepted, stop = rule.judge(e_a, e_b)
        if accepted:
            ya, yb = yb, yc
            ga = gb
            e_a = e_b
            history.append(e_b)
        if stop:
            break
        if not accepted:
            yb = _saxpy(rule.step, ga, ya)
    return ya, history, n_evals, rule.rejected, rule.step
