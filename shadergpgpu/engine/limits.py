"""Limits of the fragment path that kernels must respect, shared by every algorithm, and the
limits a device may be given below its driver's (:class:`Limits`)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Mesa llvmpipe stops a fragment shader's loops after 65,535 iterations in total per fragment
# (nested loops count together) and gives no error: the result is silently wrong. Kernels keep
# the loop iterations of one fragment in one pass below this budget, splitting the work over
# several (blended) passes where needed.
LOOP_BUDGET = 60_000


def ceil_div(a: int, b: int) -> int:
    """Smallest integer >= a / b for positive b."""
    return -(-int(a) // int(b))


@dataclass(frozen=True)
class Limits:
    """Limits a device keeps below the driver's (``Device(limits=...)``), e.g. to run as a
    smaller GPU would or to test the paths that split work.

    Parameters
    ----------
    max_texture_size : int or None, default None
        Cap below the driver's MAX_TEXTURE_SIZE (arrays wrap past it).
    loop_cap : int or None, default None
        Loop iterations one fragment may run (None: 65,535 on Mesa's software renderers, none
        elsewhere); kernels over it are split across passes or refused.
    """

    max_texture_size: int | None = None
    loop_cap: int | None = None

    def __post_init__(self):
        for name in ("max_texture_size", "loop_cap"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                                  or int(v) < 1):
                raise ValueError(f"Limits.{name} must be a positive integer or None, "
                                 f"got {v!r}")
