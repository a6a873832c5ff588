"""The SGEMM variants (tile shape, A's path, unroll), the device limits they depend on
(:class:`Limits`), the default choice per device (:func:`default_variant`) and their adaptation
to a device's limits (:func:`effective_variant`); the padding of M and K a variant needs.
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

from ...engine.blocks import has_uniform_blocks, max_block_bytes, offset_alignment
from ...engine.limits import ceil_div
from .kernels import SIMPLE, TILE, TILE_UBO, TILE_UBO_B_TRANSPOSED


@dataclass(frozen=True)
class Variant:
    name: str
    a_path: str          # "buffer", "texture" or "block" (uniform buffer)
    tile_rows: int       # output rows per fragment (8 or 4 for the micro-tile, 1 for simple;
                         # the uniform-block tiles with B transposed: 32 / tile_cols or fewer)
    unroll: int          # K-quads per loop iteration (1, 2 or 4; 1 for simple)
    description: str
    tile_cols: int = 4   # columns of C per fragment: 4 (B by rows: one texel = 4 columns), or
                         # 2 / 1 (uniform-block path only: B transposed, one texel = 4 K)

    def __post_init__(self):
        if self.a_path not in ("buffer", "texture", "block"):
            raise ValueError(f"a_path must be buffer, texture or block, got {self.a_path!r}")
        if self.tile_cols not in (1, 2, 4):
            raise ValueError(f"tile_cols must be 1, 2 or 4, got {self.tile_cols}")
        if self.tile_cols == 4 and self.tile_rows not in (1, 4, 8):
            raise ValueError(f"tile_rows must be 1, 4 or 8, got {self.tile_rows}")
        if self.tile_cols < 4:
            if self.a_path != "block":
                raise ValueError("tile_cols 2 or 1 needs the uniform-block path (a_path block)")
            if self.tile_rows * self.tile_cols not in (4, 8, 16, 32):
                raise ValueError(f"tile_rows x tile_cols must fill 1, 2, 4 or 8 render targets "
                                 f"(4 to 32 elements), got {self.tile_rows}x{self.tile_cols}")
        if self.unroll not in (1, 2, 4) or (self.tile_rows == 1 and self.unroll != 1):
            raise ValueError(f"unroll must be 1, 2 or 4 (1 for the simple kernel), got "
                             f"{self.unroll}")
        if self.a_path == "block" and self.tile_rows == 1 and self.tile_cols == 4:
            raise ValueError("the uniform-block path needs a micro-tile (tile_rows 4 or 8)")

    @property
    def targets(self) -> int:
        """Render targets the product kernel writes (tile elements / 4)."""
        return self.tile_rows * self.tile_cols // 4

    @property
    def b_transposed(self) -> bool:
        """B staged as op(B)^T (one texel = 4 K of one column): tiles of 2 or 1 columns."""
        return self.tile_cols < 4

    @property
    def kernel(self):
        if self.tile_rows == 1 and self.tile_cols == 4:
            return SIMPLE
        if self.a_path == "block":
            return (TILE_UBO_B_TRANSPOSED if self.b_transposed else TILE_UBO)[self.targets]
        return TILE[self.tile_rows]

    @property
    def defines(self) -> dict:
        if self.tile_rows == 1 and self.tile_cols == 4:
            return {}
        if self.b_transposed:
            return {"UNROLL": self.unroll, "TILE_COLS": self.tile_cols}
        return {"UNROLL": self.unroll}

    @property
    def fetches_per_quad(self) -> int:
        """Texel fetches per fragment per K-quad: 4 of B (tile_cols of op(B)^T for the
        transposed tiles), plus tile_rows of A unless A comes from a uniform block (uniform
        reads are not texel fetches)."""
        b = self.tile_cols if self.b_transposed else 4
        return b + (0 if self.a_path == "block" else self.tile_rows)

    @property
    def flops_per_quad(self) -> int:
        """Flops per fragment per K-quad: tile_rows x tile_cols x 4 k x 2."""
        return 8 * self.tile_rows * self.tile_cols


VARIANTS = {
    "tile8x4": Variant("tile8x4", "buffer", 8, 2,
                       "A via buffer texture, B via 2-D texture, 8x4 micro-tile, 8 targets"),
    "tile8x4-tex": Variant("tile8x4-tex", "texture", 8, 2,
                           "A and B via 2-D textures, 8x4 micro-tile, 8 targets"),
    "tile4x4": Variant("tile4x4", "buffer", 4, 2,
                       "A via buffer texture, B via 2-D texture, 4x4 tile, 4 targets"),
    "simple": Variant("simple", "buffer", 1, 1,
                      "A via buffer texture, B via 2-D texture, one texel per fragment"),
    "tile8x4-ubo": Variant("tile8x4-ubo", "block", 8, 2,
                           "A via uniform buffer (one 8-row block of C per draw, every "
                           "fragment reads the same A), B via 2-D texture, 8x4 micro-tile, "
                           "8 targets"),
    "tile16x2-ubo": Variant("tile16x2-ubo", "block", 16, 2,
                            "A via uniform buffer (one 16-row block of C per draw), B "
                            "transposed via 2-D texture (2 fetches per K-quad), 16x2 "
                            "micro-tile, 8 targets", tile_cols=2),
    "tile32x1-ubo": Variant("tile32x1-ubo", "block", 32, 2,
                            "A via uniform buffer (one 32-row block of C per draw), B "
                            "transposed via 2-D texture (1 fetch per K-quad), 32x1 "
                            "micro-tile, 8 targets", tile_cols=1),
}
DEFAULT_VARIANT = "auto"


def default_variant(dev) -> str:
    """The faster variant on ``dev`` (docs/performance.md has the figures): on a software
    rasteriser the buffer path for A ("tile8x4"); on a GPU with uniform blocks the 16x2 tile
    with A from a uniform buffer ("tile16x2-ubo", well ahead of the texture path; it is not
    unrolled by 4, which would pad K to 16 and not fit the smallest textures), else
    "tile8x4-tex" (2-D textures fetch faster than texture buffers on GPU drivers)."""
    if dev.plans_for_software:
        return "tile8x4"
    return "tile16x2-ubo" if Limits.of(dev).uniform_blocks else "tile8x4-tex"


@dataclass(frozen=True)
class Limits:
    """The device limits the SGEMM plan depends on (:meth:`of` reads them off a Device).

    Without a device (pass plans of a hypothetical GPU): no loop cap, 8 render targets, buffer
    textures, float blending, uniform blocks of 64 KiB, 16384-texel textures."""

    loop_cap: int | None = None
    max_outputs: int = 8
    buffer_textures: bool = True
    float_blending: bool = True
    uniform_blocks: bool = True
    block_bytes: int = 65536
    block_align: int = 256
    max_texture_size: int = 16384

    @classmethod
    def of(cls, device=None, loop_cap=None) -> "Limits":
        """Limits of ``device`` (a Device or Limits); else the defaults with ``loop_cap`` (an
        int, None, or a Device, read as the device itself)."""
        if device is None and loop_cap is not None and \
                not isinstance(loop_cap, numbers.Integral):
            device, loop_cap = loop_cap, None
        if isinstance(device, Limits):
            return device
        if device is None:
            return cls(loop_cap=None if loop_cap is None else int(loop_cap))
        if not hasattr(device, "ctx"):  # a namespace with some of the attributes
            return cls(**{k: getattr(device, k) for k in cls.__dataclass_fields__
                          if hasattr(device, k)})
        return cls(loop_cap=device.loop_cap, max_outputs=device.max_outputs,
                   buffer_textures=device.buffer_textures,
                   float_blending=device.float_blending,
                   uniform_blocks=has_uniform_blocks(device),
                   block_bytes=max_block_bytes(device),
                   block_align=offset_alignment(device),
                   max_texture_size=device.max_texture_size)

    def accumulate_passes(self, n_outputs: int) -> int:
        """Passes one accumulating pass costs (as :meth:`Device.accumulate_passes`)."""
        return 1 if self.float_blending else 1 + 2 * n_outputs


def as_variant(v) -> Variant:
    return v if isinstance(v, Variant) else VARIANTS[v]


def effective_variant(variant, device=None) -> Variant:
    """``variant`` adapted to the device's limits (a Device, its :class:`Limits` or None):
    fewer tile rows than render targets (8 -> 4 -> 1, the simple kernel; the transposed-B
    uniform-block tiles halve their rows), A through the 2-D texture path without buffer
    textures (or, for the block path, without uniform blocks: then the 8x4 tile)."""
    v = as_variant(variant)
    lim = Limits.of(device)
    if v.b_transposed:
        if lim.uniform_blocks:
            rows = v.tile_rows
            while rows * v.tile_cols > 4 * max(1, lim.max_outputs):
                rows //= 2
            return v if rows == v.tile_rows else replace(v, tile_rows=rows)
        v = replace(v, a_path="texture", tile_rows=8, tile_cols=4)
    rows, a_path = v.tile_rows, v.a_path
    while rows > lim.max_outputs:
        rows = 4 if rows == 8 else 1
    if a_path == "buffer" and not lim.buffer_textures:
        a_path = "texture"
    if a_path == "block" and (not lim.uniform_blocks or rows == 1):
        a_path = "texture" if rows > 1 or not lim.buffer_textures else "buffer"
    if (rows, a_path) == (v.tile_rows, v.a_path):
        return v
    return replace(v, tile_rows=rows, a_path=a_path, unroll=v.unroll if rows > 1 else 1)


def round_up(x: int, m: int) -> int:
    return ceil_div(x, m) * m


def padded_shape(variant: Variant, M: int, K: int) -> tuple[int, int]:
    return round_up(M, variant.tile_rows), round_up(K, 4 * variant.unroll)
