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

Files:

* ``plugin.py``: :data:`PLUGIN_NAME`, the GL thread, :class:`DevicePlugin`,
  :func:`worker_device`, :func:`register` (the worker side);
* ``cluster.py``: :func:`count_gpus`, :class:`DeviceCluster`, :func:`local_cluster`, the client
  helpers, :func:`device_info`, :class:`NoWorkersError`;
* ``block_matmul.py``: :func:`plan_blocks`, :func:`matmul` and its block tasks;
* ``shards.py``: :class:`Shards`, the shard step task and the recovery from lost workers;
* ``mlp.py``: :func:`fit_mlp`, data-parallel backpropagation;
* ``sammon.py``: :func:`fit_sammon`, Sammon mapping split by rows of points (the shard, the
  client-side driver, the source and adaptive step rules).

Importing the package registers :func:`device_info`, :func:`fit_mlp` and :func:`fit_sammon` in
:mod:`shadergpgpu.engine.runners`, where the estimators find them (the algorithms never import
this layer).
"""
from __future__ import annotations

try:
    import dask  # noqa: F401 - the extra is checked once here, for every file of the package
    import dask.array  # noqa: F401
    import distributed  # noqa: F401
    from distributed.deploy.local import LocalCluster  # noqa: F401
except ImportError as e:  # pragma: no cover - depends on the extra
    raise ImportError("shadergpgpu.distributed needs Dask: pip install "
                      "'shadergpgpu[distributed]'") from e

from ..engine import runners
from .block_matmul import MAX_BLOCK_ELEMENTS, matmul, plan_blocks
from .cluster import DeviceCluster, NoWorkersError, count_gpus, device_info, local_cluster
from .mlp import fit_mlp
from .plugin import PLUGIN_NAME, DevicePlugin, register, worker_device
from .sammon import fit_sammon
from .shards import Shards

__all__ = ["DeviceCluster", "DevicePlugin", "NoWorkersError", "PLUGIN_NAME", "Shards",
           "count_gpus", "device_info", "fit_mlp", "fit_sammon", "local_cluster", "matmul",
           "plan_blocks", "register", "worker_device"]

runners.register("device_info", device_info)
runners.register("fit_mlp", fit_mlp)
runners.register("fit_sammon", fit_sammon)
