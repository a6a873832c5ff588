"""``matmul``: ``a @ b`` on the cluster's devices, by blocks that fit one device's textures.

:func:`plan_blocks` chooses the block sizes from the workers' texture size and an element
budget (:data:`MAX_BLOCK_ELEMENTS`); every output block is one Dask task that sums the SGEMM
products of its K blocks on one worker's device (``_block_product``).
"""
from __future__ import annotations

import warnings

import dask
import dask.array as da
import numpy as np

from ..engine import validation as V
from .cluster import resolve_client, device_info
from .plugin import on_device

#: Largest operand block (elements) matmul puts on a device at once by default: 2^28 float32
#: values = 1 GiB per operand, ~6 GiB of device memory for one SGEMM block product.
MAX_BLOCK_ELEMENTS = 1 << 28

#: Output blocks per worker that :func:`plan_blocks` aims at for large products: a worker
#: with several blocks receives the operands of its next block while it multiplies the
#: current one, and the workers finish closer together (docs/performance.md has the scaling
#: over two GPUs).
BLOCKS_PER_WORKER = 4

#: Output blocks are cut for :data:`BLOCKS_PER_WORKER` only while each keeps at least this
#: many elements (4,096 x 4,096): smaller blocks would pay a task's fixed cost for little work.
MIN_SPLIT_ELEMENTS = 1 << 24


# ---- matmul ----------------------------------------------------------------------------------
def _round_down(x: int, m: int) -> int:
    return max(m, (x // m) * m)


def plan_blocks(M: int, N: int, K: int, n_workers: int, max_texture_size: int,
                max_elements: int = MAX_BLOCK_ELEMENTS) -> tuple[int, int, int]:
    """Block sizes ``(bm, bn, bk)`` for ``(M x K) @ (K x N)`` on ``n_workers`` devices.

    Every block side is at most the devices' ``max_texture_size`` (so no operand block wraps
    past one texture) and every operand block at most ``max_elements`` values; the output is
    cut into at least ``n_workers`` blocks where it can be (more work in flight), and, by
    halving a side, into about :data:`BLOCKS_PER_WORKER` blocks per worker (at least that
    many where the sizes allow; halving can overshoot for worker counts that are not powers
    of 2) while every block keeps at least :data:`MIN_SPLIT_ELEMENTS` elements; K as little
    as possible (one accumulator per output block, fewer passes).
    """
    lim = int(max_texture_size)
    bm, bn, bk = min(M, lim), min(N, lim), min(K, lim)
    # operand blocks within the element budget: shrink the largest side first
    while max(bm * bk, bk * bn, bm * bn) > max_elements:
        side = max(("m", bm), ("n", bn), ("k", bk), key=lambda t: t[1])[0]
        if side == "m":
            bm = _round_down((bm + 1) // 2, 8) if bm > 8 else bm
        elif side == "n":
            bn = _round_down((bn + 1) // 2, 8) if bn > 8 else bn
        else:
            bk = _round_down((bk + 1) // 2, 8) if bk > 8 else bk
        if bm <= 8 and bn <= 8 and bk <= 8:
            break
    # enough output blocks for every worker
    def halve():
        nonlocal bm, bn
        if bm >= bn and bm > 8:
            bm = -(-bm // 2)
        else:
            bn = -(-bn // 2)

    while -(-M // bm) * -(-N // bn) < n_workers and (bm > 8 or bn > 8):
        halve()
    # several blocks per worker where the product is large enough to pipeline: halve while
    # the blocks the halving makes (cut evenly, as matmul cuts them) keep MIN_SPLIT_ELEMENTS
    def smallest_after_halving() -> float:
        m, n = (-(-bm // 2), bn) if bm >= bn and bm > 8 else (bm, -(-bn // 2))
        return (M // -(-M // m)) * (N // -(-N // n))

    while (-(-M // bm) * -(-N // bn) < BLOCKS_PER_WORKER * n_workers
           and max(bm, bn) > 8 and smallest_after_halving() >= MIN_SPLIT_ELEMENTS):
        halve()
    return bm, bn, bk


def _block_product(a_blocks, b_blocks):
    """Task: sum over k of a_blocks[k] @ b_blocks[k] on this worker's device (float32)."""
    if not isinstance(a_blocks, list):
        a_blocks, b_blocks = [a_blocks], [b_blocks]
    a_blocks = [np.asarray(a, dtype=np.float32) for a in a_blocks]
    b_blocks = [np.asarray(b, dtype=np.float32) for b in b_blocks]
    return on_device(_accumulate_products, a_blocks, b_blocks)


def _accumulate_products(dev, a_blocks, b_blocks):
    from ..algorithms.sgemm import sgemm
    if len(a_blocks) == 1:                   # K in one block: no accumulator
        return sgemm(a_blocks[0], b_blocks[0], device=dev)
    M, N = a_blocks[0].shape[0], b_blocks[0].shape[1]
    acc = dev.zeros((M, N))
    try:
        for a, b in zip(a_blocks, b_blocks):
            # one block pair on the device at a time; the sum stays there (beta = 1)
            nxt = sgemm(a, b, C=acc, alpha=1.0, beta=1.0, device=dev)
            acc.release()
            acc = nxt
        return acc.get()
    finally:
        acc.release()


def _as_dask(x, name: str):
    if isinstance(x, da.Array):
        if x.ndim != 2:
            raise ValueError(f"{name} must be 2-D, got shape {x.shape}")
        if np.dtype(x.dtype).kind not in "biuf":
            raise TypeError(f"{name}: expected a real numeric array, got dtype {x.dtype}")
        return x, True
    arr = V.array(x, name, ndim=2, finite=False)
    return da.from_array(arr, chunks=arr.shape), False


def _fit_chunks(chunks: tuple, limit: int) -> tuple:
    """The chunks of one axis with every chunk cut to at most ``limit``."""
    if max(chunks) <= limit:
        return chunks
    total = sum(chunks)
    return (limit,) * (total // limit) + ((total % limit,) if total % limit else ())


def matmul(a, b, client=None, block=None, max_elements: int = MAX_BLOCK_ELEMENTS,
           name: str | None = None):
    """``a @ b`` on the cluster's devices, SGEMM blocks summed over K in float32.

    Parameters
    ----------
    a, b : 2-D ``dask.array`` or numpy arrays (any real dtype, computed in float32).
    client : a ``distributed.Client`` (default: the current one).
    block : ``(bm, bn, bk)`` block sizes; default from the workers' texture size
        (:func:`plan_blocks`); dask operands keep their chunks where these already fit.
    max_elements : largest operand block put on one device at once.
    name : the graph layer's name (default: a token of the operands, so that equal products
        share their keys as Dask expects of a pure function).

    Returns
    -------
    A lazy float32 ``dask.array`` when ``a`` or ``b`` is one (compute it on the cluster);
    a numpy array (computed on the cluster) when both are numpy arrays.

    Each output block is one task: the K blocks of its row of ``a`` and column of ``b`` are
    multiplied on the worker's device one pair at a time and accumulated there (SGEMM with
    ``beta = 1``), so only one pair of operand blocks and the accumulator occupy the device.
    Worker losses are handled by Dask (the lost tasks are recomputed from the graph).
    """
    client = resolve_client(client)
    A, a_dask = _as_dask(a, "a")
    B, b_dask = _as_dask(b, "b")
    M, K = A.shape
    K2, N = B.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: a is {M}x{K}, b is {K2}x{N}")
    if 0 in (M, N, K):
        raise ValueError(f"matmul of empty operands: a is {M}x{K}, b is {K2}x{N}")
    infos = device_info(client)
    limit = min(i["max_texture_size"] for i in infos)
    if block is None:
        bm, bn, bk = plan_blocks(M, N, K, len(infos), limit, max_elements)
    else:
        bm, bn, bk = (V.integer(v, "block", lo=1, hi=limit) for v in block)
    # dask operands keep their own chunks where they fit; numpy operands take the plan
    if a_dask or b_dask:
        rows = _fit_chunks(A.chunks[0], bm) if a_dask else _even(M, bm)
        cols = _fit_chunks(B.chunks[1], bn) if b_dask else _even(N, bn)
        inner = _fit_chunks(A.chunks[1] if a_dask else B.chunks[0], bk)
    else:
        rows, cols, inner = _even(M, bm), _even(N, bn), _even(K, bk)
    A = A.rechunk((rows, inner))
    B = B.rechunk((inner, cols))
    C = da.blockwise(_block_product, "ij", A, "ik", B, "kj", dtype=np.float32,
                     concatenate=False,
                     name=name or "shadergpgpu-matmul-" + dask.base.tokenize(A, B))
    if a_dask or b_dask:
        return C
    # numpy operands travel in the graph: the scheduler keeps them, so the blocks of a lost
    # worker are recomputed (build dask arrays on the cluster for data that is large)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*large graph.*")
        return client.compute(C).result()


def _even(n: int, b: int) -> tuple:
    """``n`` cut into blocks of at most ``b``, as even as possible."""
    k = -(-n // b)
    base, extra = divmod(n, k)
    return tuple(base + 1 if i < extra else base for i in range(k))
