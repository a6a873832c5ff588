"""Where an estimator finds how to run on a cluster, without importing the cluster layer.

The algorithms sit below :mod:`shadergpgpu.distributed`: the distributed drivers import the
algorithms, never the other way round. An estimator given a Dask ``client`` asks this registry
for the driver by name (``runners.get("fit_mlp")``); the distributed package registers its
drivers when it is imported, and :func:`get` imports the providers listed in ``PROVIDERS`` the
first time a name is missing, so ``fit(X, y, client=client)`` works without a manual import.
"""
from __future__ import annotations

from importlib import import_module
from typing import Callable

#: modules that register runners when imported (plugins of the estimators)
PROVIDERS = ("shadergpgpu.distributed",)

_RUNNERS: dict[str, Callable] = {}


def register(name: str, fn: Callable) -> Callable:
    """Make ``fn`` the runner called ``name`` (a later registration replaces it)."""
    _RUNNERS[name] = fn
    return fn


def get(name: str) -> Callable:
    """The runner called ``name``, importing the providers once if it is not registered yet."""
    if name not in _RUNNERS:
        for module in PROVIDERS:
            import_module(module)
    try:
        return _RUNNERS[name]
    except KeyError:
        raise LookupError(f"no runner {name!r} is registered (providers: "
                          f"{', '.join(PROVIDERS)}; registered: {sorted(_RUNNERS)})") from None
