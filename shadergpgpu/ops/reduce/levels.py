"""The level schedule of every reduction: fan-in and pass counts.

A level gathers ``fanin`` texels of the level below per output texel, until one texel is left;
:func:`level_sizes` lists the levels, :func:`passes` / :func:`axis_passes` count them, and
:func:`fanin_for` picks the fan-in a call uses (lowered to fit a device's loop cap).
"""
from __future__ import annotations

import numpy as np

from ...engine.limits import ceil_div

#: Texels gathered per fragment and pass. A fan-in of 16..32 is within a few percent of the
#: best on GPUs and on llvmpipe (``benchmarks/svm.py`` sweeps it), and 16 keeps the pass count
#: low for the vector lengths the trainers use.
DEFAULT_FANIN = 16
MAX_FANIN = 4096


def level_sizes(n_texels: int, fanin: int = DEFAULT_FANIN) -> list[tuple[int, int]]:
    """[(source texels, output texels)] per pass, until one texel is left."""
    if n_texels < 1:
        raise ValueError(f"n_texels must be positive, got {n_texels}")
    if fanin < 2:
        raise ValueError(f"fanin must be at least 2, got {fanin}")
    out, n = [], int(n_texels)
    while True:
        m = ceil_div(n, fanin)
        out.append((n, m))
        if m == 1:
            return out
        n = m


def passes(n: int, fanin: int = DEFAULT_FANIN, packed: bool = True) -> int:
    """Passes one whole-array reduction takes over a vector of ``n`` elements."""
    return len(level_sizes(ceil_div(int(n), 4 if packed else 1), fanin))


def axis_passes(length: int, fanin: int = DEFAULT_FANIN) -> int:
    """Passes of a reduction along an axis of ``length`` elements (``axis=0`` or ``1``)."""
    return len(level_sizes(int(length), fanin))


def default_fanin(loop_cap: int | None = None) -> int:
    """:data:`DEFAULT_FANIN`, lowered to fit a loop cap (a level runs up to 5 loop iterations
    per texel gathered, plus 4): the fan-in calls and pass plans use when none is given."""
    if loop_cap is None:
        return DEFAULT_FANIN
    return max(2, min(DEFAULT_FANIN, (int(loop_cap) - 4) // 5))


def check_fanin(fanin) -> int:
    if fanin is None:
        return DEFAULT_FANIN
    if not isinstance(fanin, (int, np.integer)) or isinstance(fanin, bool) or fanin < 2:
        raise ValueError(f"fanin must be an integer >= 2, got {fanin!r}")
    if fanin > MAX_FANIN:
        raise ValueError(f"fanin must be at most {MAX_FANIN}, got {fanin}")
    return int(fanin)


def fanin_for(dev, fanin=None) -> int:
    """The fan-in a call uses: ``fanin`` (checked), else :data:`DEFAULT_FANIN` lowered to fit
    the device's loop cap (a level runs up to 5 loop iterations per texel gathered, plus 4)."""
    if fanin is not None:
        return check_fanin(fanin)
    return default_fanin(getattr(dev, "loop_cap", None))
