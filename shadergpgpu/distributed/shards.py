"""Sharded iterative computations: rows of host arrays kept on the workers' devices.

:class:`Shards` spreads row blocks over the workers, runs one step per shard per iteration
(``_shard_step``, in the worker's GL thread) and recovers from lost workers by rebuilding their
shards elsewhere from the client's copy of the data; with no worker left a step raises
:class:`~shadergpgpu.distributed.cluster.NoWorkersError`.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import time
import uuid
import weakref

import numpy as np

from ..engine import validation as V
from . import plugin
from .cluster import NoWorkersError, resolve_client, live_workers
from .plugin import PLUGIN_NAME, device_plugin


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
    p = device_plugin()

    def run():
        dev = p.device()
        key = (token, index)
        if key not in p.states:
            p.states[key] = setup(dev, dict(data, common=common))
        return step(dev, p.states[key], *args, **kwargs)

    return p.call(run)


def _drop_task(token):
    return device_plugin().drop(token)


def _drop_on_worker(token, dask_worker=None):
    p = dask_worker.plugins.get(PLUGIN_NAME) if dask_worker is not None else None
    if p is None:
        p = plugin._FALLBACK
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
        self.client = resolve_client(client)
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
            ws = live_workers(self.client)
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
