"""Pass plans: the formula for the passes each algorithm runs, one module per algorithm.

A plan maps the algorithm's parameters to the expected number of passes per phase label; the
pass-count reports run the algorithm, read
:class:`~shadergpgpu.engine.counter.PassCounter`, and hold the two side by side. The plan
modules of this package register their plans when the package is imported (the compute never
names them).
"""
from __future__ import annotations

from .registry import PLANS, PassPlan, compare, get_plan, load_all, register_plan  # noqa: F401

# the plan modules register their plans (they import the registry)
from . import backprop, blur, kmeans, ops, reduce, sammon, sgemm, svm  # noqa: F401
