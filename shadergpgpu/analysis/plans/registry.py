"""The registry of pass plans: :class:`PassPlan` (an algorithm's formula for its passes per
phase), :func:`register_plan`, :func:`get_plan` and :func:`compare` (a plan against a counter
snapshot). The plan modules beside it register their plans on import."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass
class PassPlan:
    """Formula for an algorithm's passes per phase.

    name : registry key, e.g. "backprop/paper-packed".
    formula : human-readable formula, e.g. "MI + MH + MO + N/2 + 4".
    phases : function(**params) -> {phase label: expected passes}.
    notes : what the plan counts and what it leaves out.
    """

    name: str
    formula: str
    phases: Callable[..., dict]
    notes: str = ""
    params: tuple = field(default_factory=tuple)

    def expected(self, **params) -> dict:
        return {k: int(v) for k, v in self.phases(**params).items()}

    def total(self, **params) -> int:
        return sum(self.expected(**params).values())


PLANS: dict[str, PassPlan] = {}


def register_plan(plan: PassPlan) -> PassPlan:
    PLANS[plan.name] = plan
    return plan


def load_all() -> dict:
    """The registry (every plan module of this package registered its plans on import)."""
    return PLANS


def get_plan(name: str) -> PassPlan:
    try:
        return PLANS[name]
    except KeyError:
        raise KeyError(f"no pass plan named {name!r}; known: {', '.join(sorted(PLANS))}") from None


def compare(plan: PassPlan, measured: dict, **params) -> list[dict]:
    """Rows of {phase, expected, measured, match} for a measured counter snapshot."""
    exp = plan.expected(**params)
    rows = []
    for phase in list(exp) + [p for p in measured if p not in exp]:
        m = measured.get(phase, {})
        m = m.get("passes", 0) if isinstance(m, dict) else int(m)
        e = exp.get(phase)
        rows.append({"phase": phase, "expected": e, "measured": m,
                     "match": (e == m) if e is not None else None})
    return rows
