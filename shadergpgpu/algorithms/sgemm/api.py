"""The public function :func:`sgemm`: argument checks, the size check from the shapes alone
(:func:`check_fits`), numpy or device operands, and the dispatch to the product passes.
"""
from __future__ import annotations

import numpy as np

from ...engine import validation as V
from ...engine.arrays import DeviceArray
from ...engine.errors import TooLargeError
from ...engine.glraw import max_texture_buffer_size
from ...engine.layout import BufferLayout, Layout
from ...engine.limits import ceil_div
from . import host
from .product import draw_product
from .tuning import SgemmTuning
from .ubo import ubo_plan
from .variants import (DEFAULT_VARIANT, VARIANTS, Limits, Variant, padded_shape, default_variant,
                       effective_variant)


def check_fits(dev, v: Variant, M: int, N: int, K: int) -> None:
    """Refuse, from the shapes alone (before any staging copy on the host or texture on the
    device), a call whose device arrays would not fit one texture of ``dev``: the staged
    op(A) (M padded to the tile rows, K to 4 x unroll), the staged op(B), the product targets
    and C. ValueError naming the argument (A, B, or both for the result)."""
    mx = dev.max_texture_size
    Mp, Kp = padded_shape(v, M, K)
    arrays = []
    if v.a_path == "block":
        try:
            plan = ubo_plan(v, M, N, K, Limits.of(dev), tuning=dev.tuning(SgemmTuning))
        except TooLargeError:
            plan = None
            arrays.append(("A and B", f"the product targets of op(A) @ op(B) ({M} x {N})",
                           None))
        if plan is not None and v.b_transposed:
            arrays.append(("B", f"op(B) transposed, padded to {plan.fw * plan.cols} x {Kp}",
                           (plan.fw * plan.cols, Kp)))
        elif plan is not None:
            arrays.append(("B", f"op(B) padded to {Kp} x {N}", (Kp, N)))
    else:
        buf = v.a_path == "buffer" and \
            BufferLayout(Mp, Kp).n_texels <= max_texture_buffer_size(dev)
        if not buf:
            arrays.append(("A", f"op(A) padded to {Mp} x {Kp}", (Mp, Kp)))
        arrays.append(("B", f"op(B) padded to {Kp} x {N}", (Kp, N)))
        if v.tile_rows > 1:
            arrays.append(("A and B", f"the {v.tile_rows} product targets "
                           f"({Mp // v.tile_rows} x {N})", (Mp // v.tile_rows, N)))
    arrays.append(("A and B", f"the result C ({M} x {N})", (M, N)))
    for name, what, shape in arrays:
        try:
            if shape is None:
                raise TooLargeError(what)
            Layout(shape[0], shape[1], True, "row", mx)
        except TooLargeError:
            texels = "" if shape is None else f" ({shape[0] * ceil_div(shape[1], 4)} texels)"
            raise ValueError(
                f"{name}: too large for this device: {what}{texels} exceeds one texture of "
                f"{mx} x {mx} = {mx * mx} texels (the device's max_texture_size); op(A) is "
                f"{M} x {K}, op(B) is {K} x {N}. Split the product into blocks "
                "(shadergpgpu.distributed.matmul cuts it to fit)") from None


def _operand(x, name: str):
    if isinstance(x, DeviceArray):
        return V.device_array(x, name, ndim=2)
    # NaN / Inf propagate as in BLAS (and are ignored where the operand is not read)
    return V.array(x, name, ndim=2, finite=False)


def _shape(x):
    """The 2-D shape of an operand without converting it (None where the conversion's own
    checks must speak first: other dimensions, empty, not numeric)."""
    if isinstance(x, DeviceArray):
        return tuple(x.shape) if x.ndim == 2 and not x.released else None
    a = x if isinstance(x, np.ndarray) else None
    if a is None:
        return None
    if a.ndim != 2 or a.size == 0 or a.dtype.kind not in "biuf":
        return None
    return tuple(int(d) for d in a.shape)


def _flag(x, name: str) -> bool:
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(x).__name__}")
    return bool(x)


def sgemm(A, B, C=None, alpha=1.0, beta=0.0, trans_a=False, trans_b=False,
          variant: str = DEFAULT_VARIANT, device=None, split: int | None = None):
    """``alpha * op(A) @ op(B) + beta * C`` in float32 on the device (BLAS SGEMM semantics).

    Parameters
    ----------
    A, B : array_like or DeviceArray
        2-D arrays (any real dtype, computed in float32). ``op(A)`` is ``A`` or ``A.T``
        (``trans_a``), ``M x K``; ``op(B)`` is ``K x N``.
    C : array_like or DeviceArray or None, default=None
        An ``M x N`` array. As in BLAS it is not read when ``beta == 0``, and ``A``, ``B``
        are not read when ``alpha == 0``.
    alpha, beta : float, default=1.0 and 0.0
        Finite real scalars.
    trans_a, trans_b : bool, default=False
        Use ``A.T`` / ``B.T`` in place of ``A`` / ``B``.
    variant : str, default="auto"
        ``"auto"`` (the faster one on this device, see :func:`default_variant`),
        ``"tile8x4"``, ``"tile8x4-tex"``, ``"tile4x4"``, ``"simple"`` or ``"tile8x4-ubo"``
        (see the package's docstring). Under a device profile the variant adapts to the
        device's limits (:func:`effective_variant`).
    device : Device or None, default=None
        The Device to use; None: the arguments' device, else the thread's default device.
    split : int or None, default=None
        K slices asked for (passes summed by blending); None: :func:`auto_split`. The engine
        raises it to what the device's loop cap needs (:func:`min_split`) and caps it at one
        slice per K step; :func:`work` gives the passes drawn.

    Returns
    -------
    numpy.ndarray or DeviceArray
        A new float32 ``M x N`` numpy array, or a new DeviceArray when any of A, B, C is one
        (products then chain on the device without readback).

    Raises
    ------
    ValueError
        Inner dimensions that differ, a C of another shape, an unknown variant, non-finite
        alpha or beta, ``split < 1``, arrays that are not 2-D or empty, or a product whose
        staged operands or result exceed one texture of the device (naming A, B or both).
    TypeError
        Operands that are not real numeric arrays, flags that are not bools.

    Notes
    -----
    NaN and Inf in ``A`` or ``B`` are not checked: they propagate into the result as in BLAS
    (a NaN or Inf in an operand row/column makes the dependent elements of C non-finite).

    Sizes are checked from the shapes before anything is converted, staged or allocated
    (:func:`check_fits`): a product whose staged operands or result exceed one texture of the
    device is refused at once with a ValueError naming A, B or both.

    Accuracy
    --------
    With u = 2^-24, float32's unit roundoff: each element of op(A) op(B) is one float32
    sum of its K products, taken in K order inside a pass (``c += a b``; the K slices of a
    split call, and the uniform-block variants' chunks, are added by blending, which only
    regroups the same sum); the epilogue then forms ``alpha p + beta c``. Against C64, the
    same expression in float64 from the caller's values (float64 inputs are rounded to
    float32 first: one more u per factor), elementwise::

        |C - C64| <= (K + 5) u (|alpha| |op(A)| @ |op(B)| + |beta| |C|)
                     + (2K + 4) 2^-126 (1 + |alpha| + |beta|)

    The second term is underflow: a GPU may flush products and partial sums below 2^-126
    (1.18e-38, float32's smallest normal number) to 0; the bound holds for inputs with no
    nonzero magnitude below 2^-126 (such inputs may be read as 0). Where a product, a partial
    sum or ``alpha p`` overflows float32 (3.4e38) the element is +-inf or NaN, exactly as
    float32 arithmetic gives, never a finite wrong number; finite float64 inputs beyond
    float32's range become +-inf on conversion. Random data typically err by about
    sqrt(K) u relative. ``tests/algorithms/test_algorithm_guards.py`` checks the bound at
    K = 300,000 (the loop cap cutting the simple kernel into passes) and at values near 1e-38
    and 1e38.

    Host operands of a large product (numpy A, B and C where given, from
    ``SgemmTuning.host_min_work`` multiply-adds on) are pipelined by row blocks of C:
    B is uploaded and staged once, and each block's upload of A's rows and readback of its
    rows of C overlap the product of the neighbouring blocks. The blocks only cut the rows:
    each element is the same sum of K products, and the bound above holds unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.random((64, 48)), rng.random((48, 32))
    >>> C = sg.sgemm(A, B)
    >>> C.shape, C.dtype
    ((64, 32), dtype('float32'))
    >>> np.allclose(C, A @ B, rtol=1e-5)
    True
    >>> dev = sg.Device()
    >>> a = dev.array(np.eye(3))                            # device in, device out
    >>> sg.sgemm(a, a, alpha=2.0).get()
    array([[2., 0., 0.],
           [0., 2., 0.],
           [0., 0., 2.]], dtype=float32)
    """
    V.choice(variant, "variant", ("auto", *VARIANTS))
    alpha = V.real(alpha, "alpha")
    beta = V.real(beta, "beta")
    trans_a = _flag(trans_a, "trans_a")
    trans_b = _flag(trans_b, "trans_b")
    if split is not None:
        split = V.integer(split, "split", lo=1)
    sa, sb = _shape(A), _shape(B)
    if sa is not None and sb is not None and (sa[0] if trans_a else sa[1]) == \
            (sb[1] if trans_b else sb[0]):
        # sizes first, from the shapes alone: nothing is converted, staged or allocated
        # for a product the device cannot hold
        M_, K_ = (sa[1], sa[0]) if trans_a else sa
        N_ = sb[0] if trans_b else sb[1]
        dev_ = V.pick_device(device, [x for x in (A, B, C) if isinstance(x, DeviceArray)])
        check_fits(dev_, effective_variant(default_variant(dev_) if variant == "auto"
                                           else variant, dev_), M_, N_, K_)
    A = _operand(A, "A")
    B = _operand(B, "B")
    if C is not None:
        C = _operand(C, "C")
    M, K = (A.shape[1], A.shape[0]) if trans_a else A.shape
    K2, N = (B.shape[1], B.shape[0]) if trans_b else B.shape
    if K != K2:
        raise ValueError(f"inner dimensions differ: op(A) is {M}x{K}, op(B) is {K2}x{N}")
    if C is not None and tuple(C.shape) != (M, N):
        raise ValueError(f"C must have shape {(M, N)} (op(A) @ op(B)), got {tuple(C.shape)}")
    dev = V.pick_device(device, [A, B, C])
    dev.report("api:sgemm")      # an entry point: its own host work, reported
    v = effective_variant(default_variant(dev) if variant == "auto" else variant, dev)
    as_device = any(isinstance(x, DeviceArray) for x in (A, B, C))

    has_p = alpha != 0.0
    has_c = C is not None and beta != 0.0
    if not as_device and has_p:
        # host operands of a large product: row blocks of C, their transfers overlapping the
        # product (host.py; the device's SgemmTuning)
        nb = host.host_blocks(dev, v, M, N, K)
        if nb > 1:
            return host.pipelined(dev, v, A, B, C if has_c else None, alpha, beta, trans_a,
                                  trans_b, M, N, K, split, nb)
    with dev.scope() as s:
        Cd = None
        if has_c:
            Cd = C if isinstance(C, DeviceArray) else s.array(C, name="C")
        out = dev.empty((M, N))
        try:
            draw_product(dev, s, v, out, A, B, Cd, alpha, beta, trans_a, trans_b, M, N, K,
                     has_p, has_c, split)
        except BaseException:
            out.release()
            raise
    if as_device:
        return out
    try:
        return out.get()
    finally:
        out.release()
