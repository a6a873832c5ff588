"""The speeds of a device that the cost model prices passes with (:class:`Speeds`, measured by
:mod:`.calibration` or read from a profile), and the geometry it needs: the tiles a rectangle
covers, a software renderer's busiest thread."""
from __future__ import annotations

import functools
import heapq
import math
from dataclasses import dataclass, field


SPEED_KEYS = ("pass_overhead_us", "pass_gpu_us", "alu_gflops", "texel_rate_gtexels",
              "buffer_texel_rate_gtexels", "write_gbs", "upload_gbs", "readback_gbs",
              "saturation_fragments")


@dataclass
class Speeds:
    """Device speeds the model uses (per second rates; costs in microseconds)."""

    pass_overhead_us: float
    alu_gflops: float
    texel_rate_gtexels: float
    write_gbs: float
    buffer_texel_rate_gtexels: float = 0.0
    upload_gbs: float = 0.0
    readback_gbs: float = 0.0
    device: str = ""
    #: how a pass's ALU, fetch and write times combine, and host with device: "max" (a GPU
    #: overlaps them) or "sum" (a software renderer runs them on the same CPU cores)
    overlap: str = "max"
    #: device time of an empty pass (us): the least a pass costs on the device
    pass_gpu_us: float = 0.0
    #: host cost (us) per pass of each draw path (the counter's ``paths``: draw, prepared,
    #: repeat) and per host event (its ``events``: run, call, alloc, texture, upload,
    #: readback, finish, buffer_copy, api:<algorithm>, ...) and the like; empty:
    #: the first model (pass_overhead_us per pass)
    host_us: dict = field(default_factory=dict)
    #: fragments the device shades at once: a pass with fewer runs its loops at
    #: fragments / saturation_fragments of the rates (0: not modelled)
    saturation_fragments: float = 0.0
    #: per kernel name: [[fragments per pass, measured device time / the roofline's], ...]
    #: (calibrated at several sizes; see efficiency_at)
    efficiency: dict = field(default_factory=dict)
    #: the device time an accumulating pass adds per thousand fragments (us; see pass_floor)
    pass_gpu_us_per_kfragment: float = 0.0
    #: per kernel name: [[fragments per pass, measured / modelled per-pass floor], ...] for
    #: kernels whose passes the floor prices (accumulating passes one after another)
    floor_factor: dict = field(default_factory=dict)
    #: a software renderer's rasterizer threads (0 on a GPU): each takes whole 64 x 64
    #: tiles, so a pass covering fewer tiles than threads leaves threads idle
    threads: int = 0
    #: on a GPU, the (width, height) in pixels of the tiles whose count an accumulating
    #: pass's device time follows (a strip one texel high may cost as much as one two texels
    #: high: tiles of 1 x 2), and the time each adds (us); (0, 0): not calibrated (the
    #: per-fragment term prices it)
    tile: tuple = (0, 0)
    pass_gpu_us_per_tile: float = 0.0

    @classmethod
    def from_dict(cls, d: dict, device: str = "") -> "Speeds":
        need = ("pass_overhead_us", "alu_gflops", "texel_rate_gtexels")
        missing = [k for k in need if not d.get(k)]
        if missing:
            raise ValueError(f"speeds lack {missing}")
        write = d.get("write_gbs") or d.get("memory_bandwidth_gbs")
        if not write:
            raise ValueError("speeds lack write_gbs (or memory_bandwidth_gbs)")
        return cls(pass_overhead_us=float(d["pass_overhead_us"]),
                   alu_gflops=float(d["alu_gflops"]),
                   texel_rate_gtexels=float(d["texel_rate_gtexels"]),
                   write_gbs=float(write),
                   buffer_texel_rate_gtexels=float(d.get("buffer_texel_rate_gtexels") or
                                                   d["texel_rate_gtexels"]),
                   upload_gbs=float(d.get("upload_gbs") or 0.0),
                   readback_gbs=float(d.get("readback_gbs") or 0.0),
                   device=device or str(d.get("device", "")),
                   overlap=str(d.get("overlap") or "max"),
                   pass_gpu_us=float(d.get("pass_gpu_us") or 0.0),
                   host_us={str(k): float(v) for k, v in (d.get("host_us") or {}).items()},
                   saturation_fragments=float(d.get("saturation_fragments") or 0.0),
                   efficiency={str(k): _samples(v)
                               for k, v in (d.get("efficiency") or {}).items()},
                   threads=int(d.get("threads") or 0),
                   floor_factor={str(k): _samples(v)
                                 for k, v in (d.get("floor_factor") or {}).items()},
                   pass_gpu_us_per_kfragment=float(d.get("pass_gpu_us_per_kfragment")
                                                   or 0.0),
                   tile=_tile(d.get("tile")),
                   pass_gpu_us_per_tile=float(d.get("pass_gpu_us_per_tile") or 0.0))

    @property
    def detailed(self) -> bool:
        """Whether the speeds price the host paths (else the first model)."""
        return bool(self.host_us)

    def bound(self, terms: dict) -> float:
        """Seconds of the ALU, fetch and write terms together (see ``overlap``)."""
        return sum(terms.values()) if self.overlap == "sum" else max(terms.values())

    def terms(self, fragments: float, flops: float, fetches: float, nbytes: float,
              buffer_fetches: float = 0.0) -> dict:
        """Seconds of each roofline term for the given work totals (``buffer_fetches``: the
        part of ``fetches`` that reads buffer textures, at the buffer fetch rate)."""
        buf = min(max(buffer_fetches, 0.0), fetches)
        brate = self.buffer_texel_rate_gtexels or self.texel_rate_gtexels
        return {"alu": flops / (self.alu_gflops * 1e9),
                "fetch": (fetches - buf) / (self.texel_rate_gtexels * 1e9) + buf / (brate * 1e9),
                "write": nbytes / (self.write_gbs * 1e9)}

    def pass_time(self, flops: float, fetches: float, nbytes: float,
                  buffer_fetches: float = 0.0) -> float:
        """Predicted seconds of one pass doing this much work in total (first model)."""
        t = self.terms(0, flops, fetches, nbytes, buffer_fetches)
        return self.pass_overhead_us * 1e-6 + self.bound(t)

    def occupancy(self, fragments: float, size=None) -> float:
        """Slow-down of a pass of ``fragments`` fragments against a full device (>= 1): on a
        GPU, below ``saturation_fragments`` a pass takes as long as that many would (its
        loops run at their latency); on a software renderer, threads over the 64 x 64 tiles
        the pass covers (its rectangle ``size``, (w, h), where known; else its fragments
        packed in whole tiles)."""
        if fragments <= 0:
            return 1.0
        if self.threads:
            if size:
                return busiest_thread(int(size[0]), int(size[1]), self.threads)
            t = -(-int(fragments) // 4096)
            return self.threads / min(self.threads, max(t, 1))
        sat = self.saturation_fragments
        return max(1.0, sat / fragments) if sat else 1.0

    def efficiency_at(self, name: str, fragments: float, table: dict | None = None) -> float:
        """Kernel ``name``'s calibrated efficiency (or, ``table=self.floor_factor``, floor
        factor) for passes of ``fragments`` fragments: interpolated in log(fragments) between
        the calibrated sizes, the nearest one outside them; 1 for a kernel not calibrated."""
        pts = (self.efficiency if table is None else table).get(name)
        if not pts:
            return 1.0
        if len(pts) == 1 or fragments <= pts[0][0]:
            return pts[0][1]
        if fragments >= pts[-1][0]:
            return pts[-1][1]
        for (f0, e0), (f1, e1) in zip(pts, pts[1:]):
            if f0 <= fragments <= f1:
                w = math.log(fragments / f0) / math.log(f1 / f0) if f1 > f0 else 0.0
                return e0 * (e1 / e0) ** w
        return pts[-1][1]

    def pass_floor(self, fragments: float, size=None) -> float:
        """Seconds the device spends at least on an accumulating pass of ``fragments``
        fragments (a pass blending into the target of the previous one waits for its
        blends): the empty pass, plus ``pass_gpu_us_per_tile`` per tile of its rectangle
        ``size`` (w, h) where the tiles are calibrated and the size known, else
        ``pass_gpu_us_per_kfragment`` per thousand fragments; the floor of any pass is
        ``pass_floor(0)``."""
        if fragments <= 0:
            return self.pass_gpu_us * 1e-6
        if size and self.tile[0] and self.pass_gpu_us_per_tile:
            return (self.pass_gpu_us + self.pass_gpu_us_per_tile *
                    tiles(size, self.tile)) * 1e-6
        return (self.pass_gpu_us + self.pass_gpu_us_per_kfragment * fragments / 1e3) * 1e-6

    def host_cost(self, key: str) -> float:
        """Seconds of one pass of path ``key`` or one host event ``key`` (0 when unknown)."""
        return self.host_us.get(key, 0.0) * 1e-6


@functools.lru_cache(maxsize=4096)
def busiest_thread(w: int, h: int, threads: int, side: int = 64) -> float:
    """A software renderer's slow-down of a w x h pass against all ``threads`` busy all the
    time (>= 1): its threads take the rectangle's ``side`` x ``side`` tiles in raster order,
    each the next one when it is free, and the pass lasts as long as the busiest thread's
    fragments take (a 96 x 48 rectangle: a 64 x 48 tile on one thread and a 32 x 48 on the
    other, 1.33; a 64 x 32 one: one tile, one thread, 2)."""
    if w <= 0 or h <= 0 or threads <= 1:
        return 1.0
    free = [0] * threads
    for y in range(0, h, side):
        th = min(side, h - y)
        for x in range(0, w, side):
            t = heapq.heappop(free)
            heapq.heappush(free, t + th * min(side, w - x))
    return threads * max(free) / (w * h)


def tiles(size, tile) -> int:
    """Tiles of ``tile`` pixels ((width, height), or one side of a square) that a (w, h)
    rectangle covers."""
    tw, th = (tile, tile) if isinstance(tile, int) else tile
    w, h = size
    return -(-int(w) // int(tw)) * -(-int(h) // int(th))


def _tile(v) -> tuple:
    """(width, height) of a profile's ``tile`` (a pair, one side, or nothing: (0, 0))."""
    if not v:
        return (0, 0)
    if isinstance(v, (int, float)):
        return (int(v), int(v))
    return (int(v[0]), int(v[1]))


def _samples(v) -> list:
    """[[fragments, efficiency], ...] from a profile's value (a list, or one number)."""
    if isinstance(v, (int, float)):
        return [[1.0, float(v)]]
    return sorted([float(f), float(e)] for f, e in v)
