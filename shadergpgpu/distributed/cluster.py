"""The client side: a cluster of one worker process per GPU, the client helpers, device info.

:func:`local_cluster` starts a :class:`DeviceCluster` (one single-threaded worker process per GL
device, each with a :class:`~shadergpgpu.distributed.plugin.DevicePlugin`) and returns its
Client; ``resolve_client`` and ``live_workers`` find the client and its workers; :func:`device_info`
asks every worker what its device offers; :class:`NoWorkersError` is raised when no worker is
left.
"""
from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import uuid

import dask
import distributed
from distributed import get_worker
from distributed.deploy.local import LocalCluster

from ..engine import validation as V
from ..engine.errors import ShaderGPGPUError
from .plugin import DevicePlugin, on_device


class NoWorkersError(ShaderGPGPUError, RuntimeError):
    """The cluster has no worker left to run a computation on."""


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
        ``{"limits": Limits(max_texture_size=64)}``).
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


def resolve_client(client):
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError as e:
        raise ValueError("no Dask client: pass client= (e.g. shadergpgpu.distributed."
                         "local_cluster()) or create a distributed.Client first") from e


def live_workers(client) -> list:
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
    return on_device(_info, _worker_address())


def _worker_address():
    try:
        return get_worker().address
    except ValueError:
        return None


def device_info(client=None) -> list[dict]:
    """Per worker: address, pid, GL renderer, texture size, loop cap, EGL device index."""
    client = resolve_client(client)
    workers = live_workers(client)
    if not workers:
        raise NoWorkersError("the Dask cluster has no worker")
    futs = [client.submit(_info_task, workers=[w], allow_other_workers=False, pure=False,
                          key=f"shadergpgpu-info-{uuid.uuid4().hex}") for w in workers]
    return client.gather(futs)
