"""The sgemm's tuning (:class:`SgemmTuning`): how host operands are pipelined, and the fragment
order of the uniform-block variants."""
from __future__ import annotations

from dataclasses import dataclass

from ...engine.tuning import Tuning, count, flag

__all__ = ["SgemmTuning"]


@dataclass(frozen=True)
class SgemmTuning(Tuning):
    """Choices of :func:`~shadergpgpu.algorithms.sgemm.sgemm` that trade speed only.

    Parameters
    ----------
    host_blocks : int, default 8
        Most row blocks of C a ``sgemm(numpy, numpy)`` call is cut into, each block's transfers
        overlapping the other blocks' products (:mod:`.host`); 0 or 1 turns the pipelining off.
    host_min_work : int, default 2**33
        Products from this many multiply-adds (M * N * K) on are pipelined (n = 2,048);
        smaller ones keep one block (the transfers are short, the blocks' passes would cost
        more).
    host_min_block_elems : int, default 2**23
        Fewest elements of C per block (2,048 x 4,096), so that a block's product keeps as many
        fragments in flight. Where readbacks are asynchronous (GPUs) a block also holds at
        least :attr:`EngineTuning.pbo_min_bytes <shadergpgpu.engine.tuning.EngineTuning>` of
        texels: a smaller readback is synchronous.
    ubo_quad_order : bool, default True
        The uniform-block variants number the fragments of a rect by pixel quads (the 4
        fragments of a quad read 4 consecutive columns of B) where its band and width are even,
        else row by row (``shaders/algorithms/sgemm/ubo_geo.glsl``).
    ubo_target_w : int, default 1024
        One block row's draw covers a rect of band x width texels of the product targets; the
        rects tile the targets about this many texels wide (0: in one column, a narrow strip).
    ubo_max_band : int, default 32
        The band is the largest power of two up to this with band**2 at most a block row's
        fragments (square-ish rects).
    ubo_min_quads : int, default 16
        Smallest uniform-block window compiled, in K-quads (the window length is a define from
        a small set of powers of two, so a handful of programs serves every K).
    """

    host_blocks: int = count(8)
    host_min_work: int = count(1 << 33)
    host_min_block_elems: int = count(1 << 23)
    ubo_quad_order: bool = flag(True)
    ubo_target_w: int = count(1024)
    ubo_max_band: int = count(32, 1)
    ubo_min_quads: int = count(16, 1)
