"""The product of host operands pipelined by row blocks of C (numpy in, numpy out).

Transfers are synchronous on the host while the GPU runs its queue asynchronously, so a large
``sgemm(numpy, numpy)`` overlaps them with the product: op(B) is uploaded and staged once;
then for each block of rows of C the host uploads that block's rows of op(A) (and of C where
``beta`` reads it) while the GPU still computes the previous block, queues the block's passes
(the same staging, product and epilogue passes as the whole call, into a block-sized result),
faults the result's pages for the block, starts an asynchronous readback of the block into its
rows of the numpy result (:meth:`DeviceArray.get(wait=False)
<shadergpgpu.engine.arrays.DeviceArray.get>`, a pixel buffer object) and then completes the
previous block's readback. The call then costs about the upload of B, the product and one
block's transfers, instead of the sum of every transfer and the product.

The block count follows the device's :class:`~.tuning.SgemmTuning` (``host_*``), read at call
time.
"""
from __future__ import annotations

import numpy as np

from ...engine.tuning import EngineTuning
from ...engine.limits import ceil_div
from ...engine.scope import Scope
from .product import draw_product
from .staging import stage_b
from .tuning import SgemmTuning
from .variants import round_up

# one element per page of host memory (4 KiB of float32): writing these faults the pages in
_PAGE_ELEMS = 1024


def host_blocks(dev, v, M: int, N: int, K: int) -> int:
    """Row blocks of C for ``sgemm(numpy, numpy)`` of ``M x K`` by ``K x N`` with variant
    ``v`` on ``dev``, under the device's :class:`~.tuning.SgemmTuning` ``t``: 1 (no
    pipelining) below ``t.host_min_work`` or with ``t.host_blocks`` < 2, else at most
    ``t.host_blocks``, each block at least ``t.host_min_block_elems`` elements of C (and, where
    readbacks are asynchronous, one pixel buffer object's worth of texels), each at least one
    tile of rows."""
    t = dev.tuning(SgemmTuning)
    nb = t.host_blocks
    if nb < 2 or M * N * K < t.host_min_work:
        return 1
    if t.host_min_block_elems > 0:
        nb = min(nb, (M * N) // t.host_min_block_elems)
    if not (dev.is_software or dev.tracer is not None):
        # the readback of a block is asynchronous only from pbo_min_bytes of texels on (the
        # result's texture bytes, as the layout layer lays them out)
        pbo_bytes = dev.tuning(EngineTuning).pbo_min_bytes
        nb = min(nb, dev.layout((M, N)).nbytes // max(1, pbo_bytes))
    nb = min(nb, ceil_div(M, v.tile_rows))
    return max(1, nb)


def row_blocks(v, M: int, nb: int) -> list:
    """``nb`` (or fewer) row ranges [r0, r1) covering M, each a whole number of tile rows but
    the last (so only the last block is padded)."""
    step = round_up(ceil_div(M, nb), v.tile_rows)
    return [(r0, min(M, r0 + step)) for r0 in range(0, M, step)]


def pipelined(dev, v, A, B, C, alpha, beta, trans_a, trans_b, M, N, K, split, nb):
    """``alpha op(A) op(B) + beta C`` of host operands (float32 numpy, C None where beta does
    not read it) as a new numpy array, in ``nb`` row blocks (see the module doc)."""
    has_c = C is not None
    res = np.empty((M, N), dtype=np.float32)
    flat = res.reshape(-1)
    pending = None                    # (readback, scope) of the previous block
    with dev.scope() as s:
        Bs = s.track(stage_b(dev, v, B, trans_b, N, K))      # staged once for every block
        dev.flush()                   # staged on the GPU while the first block uploads
        try:
            for r0, r1 in row_blocks(v, M, nb):
                blk = Scope(dev)      # the block's arrays: released once its readback is done
                try:
                    # op(A)'s rows r0..r1: rows of A, or columns of A (one host copy) when
                    # transposed; the staging passes transpose and pad them as for a whole A
                    a = np.ascontiguousarray(A[:, r0:r1]) if trans_a else A[r0:r1]
                    Ab = blk.array(a, name="A")
                    Cb = blk.array(C[r0:r1], name="C") if has_c else None
                    out = blk.empty((r1 - r0, N))
                    draw_product(dev, blk, v, out, Ab, None, Cb, alpha, beta, trans_a, trans_b,
                             r1 - r0, N, K, True, has_c, split, Bs=Bs)
                    dev.flush()       # the GPU starts the block while the host goes on
                    flat[r0 * N:r1 * N:_PAGE_ELEMS] = 0.0   # fault the block's result pages
                    rb = out.get(out=res[r0:r1], wait=False)
                except BaseException:
                    blk.release()
                    raise
                if pending is not None:
                    prev, pending = pending, None
                    _complete(*prev)
                pending = (rb, blk)
            prev, pending = pending, None
            _complete(*prev)
        finally:
            if pending is not None:
                pending[1].release()
    return res


def _complete(rb, blk) -> None:
    """Wait for a block's readback (its rows of the result), then release its arrays."""
    try:
        rb.result()
    finally:
        blk.release()
