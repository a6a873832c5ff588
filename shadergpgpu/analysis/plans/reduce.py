"""The pass plans of the reductions (``reduce/sum``, ``reduce/argbest``, ``reduce/kernel``,
``reduce/dot``, ``reduce/norm``), registered when the package is imported."""
from __future__ import annotations

from .registry import PassPlan, register_plan
from ...ops.reduce.levels import axis_passes, default_fanin, passes


def _kernel_phases(n, fanin=None, packed=True, axis=None, length=None, loop_cap=None):
    fanin = fanin or default_fanin(loop_cap)
    if axis is None:
        return {"reduce": passes(n, fanin, packed)}
    return {"reduce": axis_passes(length, fanin)}


_FORMULA = ("max(1, ceil(log_F(ceil(n / 4))))  (F = fan-in, packed vector of n values; "
            "default F = 16, lowered to (loop_cap - 4) // 5 under a smaller loop cap)")
for _name, _notes in (
        ("reduce/sum", "one gather pass per level; the last level also adds the four lanes"),
        ("reduce/argbest", "arg-min or arg-max, values and indices written by the same pass "
                           "(two targets); the mask is applied in the first level")):
    register_plan(PassPlan(
        name=_name, formula=_FORMULA,
        phases=lambda n, fanin=None, packed=True, loop_cap=None: {
            "reduce": passes(n, fanin or default_fanin(loop_cap), packed)},
        notes=_notes, params=("n", "fanin", "packed", "loop_cap")))
for _name, _notes in (
        ("reduce/kernel", "a ReductionKernel: the map is applied in the first level, the "
                          "post-map in the last"),
        ("reduce/dot", "dot(x, y): ReductionKernel x * y, a + b"),
        ("reduce/norm", "norm(x): ReductionKernel x * x, a + b, sqrt in the last level")):
    register_plan(PassPlan(
        name=_name,
        formula=_FORMULA + "; along an axis of length L: ceil(log_F(L)) (at least 1)",
        phases=_kernel_phases, notes=_notes,
        params=("n", "fanin", "packed", "axis", "length", "loop_cap")))
