"""The Sammon fit's tuning (:class:`SammonTuning`): the tiled update's variant, the fetch
variants, where the stress is summed, and how the j sweep is cut into passes and host waits."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...engine.tuning import Tuning, check_field, count, flag

__all__ = ["SammonTuning", "TILE_DEFAULT", "TILE_VARIANTS"]

#: Named settings of the tiled kernel (:meth:`SammonTuning.variant`,
#: ``benchmarks/diag/sammon_variants.py``): k = K points i per fragment (``tile_max``),
#: jb = JB points j per block (``tile_jb``), s_lane (``tile_s_lane``), unroll
#: (``tile_unroll``), il (``tile_interleave``).
TILE_VARIANTS = {
    "k4j16": dict(k=4, jb=16, s_lane=False, unroll=1, il=False),
    "k4j8": dict(k=4, jb=8, s_lane=False, unroll=1, il=False),
    "k4j32": dict(k=4, jb=32, s_lane=False, unroll=1, il=False),
    "k4j16w": dict(k=4, jb=16, s_lane=True, unroll=1, il=False),
    "k4j16i": dict(k=4, jb=16, s_lane=False, unroll=1, il=True),
    "k4j16u2": dict(k=4, jb=16, s_lane=False, unroll=2, il=False),
    "k8j8wi": dict(k=8, jb=8, s_lane=True, unroll=1, il=True),
    "k8j16w": dict(k=8, jb=16, s_lane=True, unroll=1, il=False),
    "k8j16wi": dict(k=8, jb=16, s_lane=True, unroll=1, il=True),
    "k8j16wiu2": dict(k=8, jb=16, s_lane=True, unroll=2, il=True),
}
#: The preset of the defaults (docs/performance.md has the comparison).
TILE_DEFAULT = "k8j8wi"
_TD = TILE_VARIANTS[TILE_DEFAULT]
_FIELDS = {"k": "tile_max", "jb": "tile_jb", "s_lane": "tile_s_lane", "unroll": "tile_unroll",
           "il": "tile_interleave"}


@dataclass(frozen=True)
class SammonTuning(Tuning):
    """Choices of :class:`~shadergpgpu.algorithms.sammon.Sammon` that trade speed only (read
    when a fit starts).

    Parameters
    ----------
    tile_rows : bool, default True
        ``layout="rows"`` without the distance cache runs the tiled update (``tile.frag``:
        several points i per fragment, JB points j per block); False runs the
        one-point-per-fragment pair kernel (``update.frag``).
    tile_max : int, default 8
        Most points i one tiled fragment owns (K; fewer where the device has fewer render
        targets): 4, or 8 with ``tile_s_lane``.
    tile_jb : int, default 8
        Points j per block of the tiled sweep (8, 16 or 32).
    tile_s_lane : bool, default True
        Put a point's stress terms in the w lane of its g target (positions of at most 3
        coordinates): K targets instead of K + 1.
    tile_unroll : int, default 1
        Coordinate texels per step of the tiled kernel's coordinate loop (1 or 2).
    tile_interleave : bool, default True
        Interleave the JB points of each block in the blocked source (one base texel per
        block), where K divides JB and a block's texels fit one texture row.
    tile_fragments : int, default 2**18
        The j range of a tile is cut into parts swept by separate fragments so that a pass
        has about this many fragments ...
    tile_parts_max : int, default 64
        ... at most this many parts.
    fetch_variants : bool, default True
        The pair kernels' fetch variants (y_j's texel stepped along the sweep, a texel's four
        cached distances from one block fetch) instead of the per-pair accessors.
    stress_on_host : bool or None, default None (True on a GPU, False on a software renderer)
        Sum the stress of each evaluated position set on the host in float64 from the
        per-point terms (one larger read, no reduction passes) instead of by the device sum
        reduction.
    pass_work : int, default 6e9
        Most work one pass may run, in pair-texel fetches (long passes have come back wrong
        on a GPU).
    sync_work : int or None, default 6e9
        Most work queued between two host waits (``dev.finish()``); None: never wait.
    auto_points : int, default 8192
        ``split="auto"`` keeps about this many points j per pass at most.
    cache_auto_bytes : int, default 1 GiB
        ``cache="auto"`` keeps the N x N source distances when they take at most this many
        bytes (and fit one texture, and the distance kernel's loop fits the cap).
    """

    tile_rows: bool = flag(True)
    tile_max: int = count(_TD["k"], 1)
    tile_jb: int = count(_TD["jb"], 1)
    tile_s_lane: bool = flag(_TD["s_lane"])
    tile_unroll: int = count(_TD["unroll"], 1)
    tile_interleave: bool = flag(_TD["il"])
    tile_fragments: int = count(1 << 18, 1)
    tile_parts_max: int = count(64, 1)
    fetch_variants: bool = flag(True)
    stress_on_host: bool | None = flag(None)
    pass_work: int = count(6_000_000_000, 1)
    sync_work: int | None = 6_000_000_000
    auto_points: int = count(8192, 1)
    cache_auto_bytes: int = count(1 << 30)

    SOFTWARE: ClassVar[dict] = {"stress_on_host": False}
    HARDWARE: ClassVar[dict] = {"stress_on_host": True}

    def check(self) -> None:
        check_field(self, "tile_max", self.tile_max <= 8, "an integer from 1 to 8")
        check_field(self, "tile_jb", self.tile_jb in (8, 16, 32), "8, 16 or 32")
        check_field(self, "tile_unroll", self.tile_unroll in (1, 2), "1 or 2")
        w = self.sync_work
        check_field(self, "sync_work", w is None or (isinstance(w, int) and
                                                     not isinstance(w, bool) and w >= 1),
                    "a positive integer or None")

    @classmethod
    def variant(cls, name: str, **changes) -> "SammonTuning":
        """The tuning with the tiled kernel's preset ``name`` of :data:`TILE_VARIANTS` (and
        ``changes``)."""
        if name not in TILE_VARIANTS:
            raise ValueError(f"unknown tile variant {name!r}; one of {sorted(TILE_VARIANTS)}")
        v = {_FIELDS[k]: x for k, x in TILE_VARIANTS[name].items()}
        return cls(**dict(v, **changes))

    @property
    def variant_name(self) -> str | None:
        """The name of this tuning's tile settings in :data:`TILE_VARIANTS` (None: no preset)."""
        now = {k: getattr(self, f) for k, f in _FIELDS.items()}
        return next((k for k, v in TILE_VARIANTS.items() if v == now), None)
