"""How a k-means problem's sizes map onto the kernels, and the size guard.

:func:`geometry` is pure shape math (no GL): the layouts of every device array, the cuts of the
assignment's loop over the centroids (each pass within the loop cap), the blocks of points of
the centroid update and the cuts of the status range. The fit, the size guard
(:func:`check_fits`) and the pass plan ``kmeans/lloyd`` (:mod:`shadergpgpu.analysis.plans.kmeans`)
all read it, so the plan counts what the fit runs.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...engine.errors import LoopBudgetError, TooLargeError
from ...engine.layout import Layout
from ...engine.limits import ceil_div
from ...ops import rbf as _rbf
from ...ops.reduce import MAX_INDEX
from .kernels import STATUS

#: point texels (four points each) one fragment of the centroid update's first level sums: the
#: update runs k x nb x ceil((d + 2) / 4) fragments, nb = ceil(ceil(n / 4) / BLOCK_TEXELS)
BLOCK_TEXELS = 64
#: a texture size no problem reaches: the plan counts passes, which wrapping does not change
_UNBOUNDED = 1 << 30


@dataclass(frozen=True)
class Geometry:
    """Sizes and layouts of one problem: ``n`` points, ``d`` features, ``k`` centroids."""

    n: int
    d: int
    k: int
    assign_cuts: tuple      # (c_lo, c_hi) of each assignment pass
    blk: int                # point texels per block of the update's first level
    nb: int                 # blocks
    data_col: Layout        # XC: the points in column order, packed
    data_row: Layout        # XR: the points in row order, packed
    vector: Layout          # labels and distances: one value per point
    centroids: Layout       # C (and STAT): k x d, row order, packed
    part: Layout | None     # PART: (k nb) x (d + 2) (None: assignment only, for predict)
    status: Layout          # one texel
    status_cuts: tuple      # the status range's passes


def vector_layout(n: int, max_size: int) -> Layout:
    """The layout :meth:`shadergpgpu.ops.rbf.RBFData.vector` gives ``n`` points."""
    if _rbf.VECTOR_WRAP is None:
        return Layout(1, n, True, "row", max_size)
    return Layout.wrapped_vector(n, _rbf.VECTOR_WRAP, max_size)


def geometry(n: int, d: int, k: int, loop_cap: int | None,
             max_size: int = _UNBOUNDED, update: bool = True) -> Geometry:
    """The geometry of a problem on a device with ``loop_cap`` and texture size ``max_size``
    (``update=False``: the assignment's arrays only, as ``predict`` uses them).

    Raises :class:`~shadergpgpu.engine.errors.TooLargeError` where an array does not fit the
    texture size (:func:`check_fits` turns it into an error naming the argument) and
    :class:`~shadergpgpu.engine.errors.LoopBudgetError` where no cut fits the loop cap.
    """
    n, d, k = int(n), int(d), int(k)
    d4, n4 = ceil_div(d, 4), ceil_div(n, 4)
    if loop_cap is None:
        per, blk = k, BLOCK_TEXELS
    else:
        per = loop_cap // (d4 + 1)
        if per < 1:
            raise LoopBudgetError(
                f"X: {d} features need {d4 + 1} loop iterations per centroid in one fragment, "
                f"more than this device's loop cap of {loop_cap}; use fewer features")
        # blocks no longer than the cap, and few enough that the second level fits it too
        blk = max(min(BLOCK_TEXELS, loop_cap), ceil_div(n4, loop_cap))
        if blk > loop_cap:
            raise LoopBudgetError(
                f"X: {n} samples need blocks of {blk} point texels in the centroid update, "
                f"more than this device's loop cap of {loop_cap}; use fewer samples")
    passes_a = ceil_div(k, per)
    per = ceil_div(k, passes_a)
    cuts = tuple((lo, min(lo + per, k)) for lo in range(0, k, per))
    nb = ceil_div(n4, blk)
    cen = Layout(k, d, True, "row", max_size)
    status = Layout(1, 4, True, "row", max_size)
    st_cuts = STATUS.slices({"STAT": cen, "OUT": status}, {}, {}, loop_cap)
    return Geometry(n=n, d=d, k=k, assign_cuts=cuts, blk=blk, nb=nb,
                    data_col=Layout(n, d, True, "col", max_size),
                    data_row=Layout(n, d, True, "row", max_size),
                    vector=vector_layout(n, max_size), centroids=cen,
                    part=Layout(k * nb, d + 2, True, "row", max_size) if update else None,
                    status=status,
                    status_cuts=tuple(st_cuts))


def check_fits(dev, n_samples: int, n_features: int, n_clusters: int,
               update: bool = True) -> Geometry:
    """The geometry of a problem on ``dev``, or, before anything is allocated, a ValueError
    naming the argument whose arrays exceed the device's texture size (``X`` for the points,
    ``n_clusters`` for the centroids and the update's partial sums) or whose loops no cut can
    fit in its loop cap (:class:`~shadergpgpu.engine.errors.LoopBudgetError`, naming ``X``)."""
    n, d, k = int(n_samples), int(n_features), int(n_clusters)
    if n >= MAX_INDEX:
        raise ValueError(f"X has {n} samples; at most {MAX_INDEX - 1} (labels and counts travel "
                         "as float32, exact below 2**24)")
    mx = dev.max_texture_size
    limit = (f"more than the {mx} x {mx} = {mx * mx} texels of one texture (the device's "
             f"max_texture_size {mx})")
    try:  # the points, in both orders, and the per-point vectors
        Layout(n, d, True, "col", mx)
        Layout(n, d, True, "row", mx)
        vector_layout(n, mx)
    except TooLargeError:
        raise ValueError(f"X: {n} samples x {d} features do not fit this device: the points "
                         f"take {n * ceil_div(d, 4)} texels, {limit}; use fewer samples or "
                         "features") from None
    try:  # the centroids (never more texels than the points: k <= n) and the partial sums
        # (k nb rows of d + 2 columns: more than the points where k > 4 blk, or where the two
        # columns add a texel to every row)
        return geometry(n, d, k, dev.loop_cap, mx, update)
    except TooLargeError:
        nb = ceil_div(ceil_div(n, 4), BLOCK_TEXELS)
        raise ValueError(
            f"n_clusters: {k} centroids need partial sums of {k} x about {nb} rows (blocks of "
            f"points) "
            f"x {d + 2} columns in the centroid update, {k * nb * ceil_div(d + 2, 4)} texels, "
            f"{limit}; use fewer clusters, or fewer samples or features (X)") from None
