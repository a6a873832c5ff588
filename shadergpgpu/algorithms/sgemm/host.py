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

The module-level settings below live here only and are read at call time: change them on this
module (``shadergpgpu.algorithms.sgemm.host``), not on the package.
"""
from __future__ import annotations

import numpy as np

from ...engine import transfer
from ...engine.limits import ceil_div
from ...engine.scope import Scope
from .product import _product
from .staging import _stage_b
from .variants import _round_up

#: most row blocks of C one call is cut into; 0 or 1 turns the pipelining off
HOST_BLOCKS = 8
#: products from this many multiply-adds (M * N * K) on are pipelined (2^33: n = 2,048); smaller
#: ones keep the one-block path (the transfers are short, the blocks' passes would cost more)
HOST_MIN_WORK = 1 << 33
#: fewest elements of C per block (2,048 x 4,096): a block's product keeps as many fragments in
#: flight as a 2,048 x 4,096 output. Where readbacks are asynchronous (GPUs) a block also holds
#: at least ``engine.transfer.PBO_MIN_BYTES`` of texels: a smaller readback is synchronous and
#: would wait for the block's product with nothing queued behind it.
HOST_MIN_BLOCK_ELEMS = 1 << 23

# one element per page of host memory (4 KiB of float32): writing these faults the pages in
_PAGE_ELEMS = 1024


def host_blocks(dev, v, M: int, N: int, K: int) -> int:
    """Row blocks of C for ``sgemm(numpy, numpy)`` of ``M x K`` by ``K x N`` with variant
    ``v`` on ``dev``: 1 (no pipelining) below ``HOST_MIN_WORK`` or with ``HOST_BLOCKS`` < 2,
    else at most ``HOST_BLOCKS``, each block at least ``HOST_MIN_BLOCK_ELEMS`` elements of C
    (and, where readbacks are asynchronous, one pixel buffer object's worth of texels), each
    at least one tile of rows."""
    nb = int(HOST_BLOCKS)
    if nb < 2 or M * N * K < HOST_MIN_WORK:
        return 1
    if HOST_MIN_BLOCK_ELEMS > 0:
        nb = min(nb, (M * N) // int(HOST_MIN_BLOCK_ELEMS))
    if not (dev.is_software or dev.tracer is not None):
        # the readback of a block is asynchronous only from PBO_MIN_BYTES of texels on (the
        # result's texture bytes, as the layout layer lays them out)
        nb = min(nb, dev.layout((M, N)).nbytes // max(1, transfer.PBO_MIN_BYTES))
    nb = min(nb, ceil_div(M, v.tile_rows))
    return max(1, nb)


def row_blocks(v, M: int, nb: int) -> list:
    """``nb`` (or fewer) row ranges [r0, r1) covering M, each a whole number of tile rows but
    the last (so only the last block is padded)."""
    step = _round_up(ceil_div(M, nb), v.tile_rows)
    return [(r0, min(M, r0 + step)) for r0 in range(0, M, step)]


def pipelined(dev, v, A, B, C, alpha, beta, trans_a, trans_b, M, N, K, split, nb):
    """``alpha op(A) op(B) + beta C`` of host operands (float32 numpy, C None where beta does
    not read it) as a new numpy array, in ``nb`` row blocks (see the module doc)."""
    has_c = C is not None
    res = np.empty((M, N), dtype=np.float32)
    flat = res.reshape(-1)
    pending = None                    # (readback, scope) of the previous block
    with dev.scope() as s:
        Bs = s.track(_stage_b(dev, v, B, trans_b, N, K))      # staged once for every block
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
                    _product(dev, blk, v, out, Ab, None, Cb, alpha, beta, trans_a, trans_b,
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
