"""How a line is cut into blocks (:class:`Tiling`), the loop iterations each recursive kernel
declares for a tiling, and the line configuration on a device: the tiling lowered under a loop
cap (:func:`fit_tiling`), the planes and summary parts for its render targets
(:func:`line_config`)."""
from __future__ import annotations

from dataclasses import dataclass

from ...engine import validation
from ...engine.errors import CapabilityError


@dataclass(frozen=True)
class Tiling:
    """Blocking of a line: level-1 blocks of ``c1`` texels (a multiple of 8), coarser levels of
    ``g`` blocks each until at most ``top`` blocks remain."""

    c1: int = 16
    g: int = 8
    top: int = 16

    def __post_init__(self):
        c1 = validation.integer(self.c1, "c1", lo=8, hi=1 << 12)
        if c1 % 8:
            raise ValueError(f"c1 must be a positive multiple of 8, got {c1}")
        validation.integer(self.g, "g", lo=2, hi=1 << 12)
        validation.integer(self.top, "top", lo=1, hi=1 << 12)

    def levels(self, npos: int) -> list[int]:
        """Block counts per level for a line of ``npos`` texels (level 1 first)."""
        nb = [-(-npos // self.c1)]
        while nb[-1] > self.top:
            nb.append(-(-nb[-1] // self.g))
        return nb


DEFAULT_TILING = Tiling()


# Loop iterations per fragment, counting every loop (constant ones too, in case the compiler
# keeps them; nested loops count together): the tiling is chosen so that every kernel stays
# under the device's loop cap (:func:`fit_tiling`), and the engine refuses a call over it (an
# explicit Tiling too large for the cap) with the tiling hint.
def reduce_loop(c1: int, seq: bool) -> int:
    return 2 + c1 * (1 + (12 if seq else 2))


def combine_loop(g: int) -> int:
    return 2 + 3 * g


def carry_loop(nb: int) -> int:
    return 4 + 6 * nb


def down_loop(g: int) -> int:
    return 6 * g


def apply_loop(c1: int, seq: bool, npl: int) -> int:
    spt = 4 if seq else 1
    return 4 + (c1 // npl - 1) * (1 + npl * (1 + spt)) + npl * (3 + 2 * spt)


@dataclass(frozen=True)
class LineConfig:
    """How one line filter runs on a device: its tiling, the planes (render targets) of its
    apply pass, and the parts each summary pass is drawn in ((0,): all 8 arrays at once;
    (1, 2): the causal then the anticausal half, 4 targets each)."""

    tiling: Tiling
    npl: int
    parts: tuple


def fit_tiling(seq: bool, npl: int, loop_cap: int | None,
               base: Tiling = DEFAULT_TILING) -> Tiling:
    """The tiling the blur uses under a loop cap: ``base`` with c1, g and top lowered until every
    recursive kernel loops at most ``loop_cap`` times per fragment (as far as they go: c1 8,
    g 2, top 1; a cap below that is refused by the engine when the kernel runs)."""
    if loop_cap is None:
        return base
    c1, g, top = base.c1, base.g, base.top
    while c1 > 8 and max(reduce_loop(c1, seq), apply_loop(c1, seq, npl)) > loop_cap:
        c1 -= 8
    while g > 2 and max(combine_loop(g), down_loop(g)) > loop_cap:
        g -= 1
    while top > 1 and carry_loop(top) > loop_cap:
        top -= 1
    if (c1, g, top) == (base.c1, base.g, base.top):
        return base
    return Tiling(c1=c1, g=g, top=top)


def line_config(seq: bool, tiling: Tiling | None = None, max_outputs: int = 8,
                loop_cap: int | None = None) -> LineConfig:
    """The :class:`LineConfig` of a line filter (``seq``: a packed grayscale row) on a device
    with ``max_outputs`` render targets and ``loop_cap``; ``tiling`` None picks
    :func:`fit_tiling` of the default, an explicit one is used as given."""
    if max_outputs < 4:
        raise CapabilityError(f"method='recursive' needs 4 render targets per pass; this "
                              f"device/profile has {max_outputs}: use method='exact'")
    npl = 8 if max_outputs >= 8 else 4
    parts = (0,) if seq or max_outputs >= 8 else (1, 2)
    til = fit_tiling(seq, npl, loop_cap) if tiling is None else tiling
    return LineConfig(til, npl, parts)
