"""What a fit makes and runs, from the shapes alone (:func:`fit_geometry`): the layouts of every
device array, whether the distances are cached (:func:`use_cache`), the tiled or pair sweep,
its chunks and the loop-cap cuts; a fit the device cannot hold is refused before anything is
converted or allocated."""
from __future__ import annotations

import math
from types import SimpleNamespace

from ...engine.errors import LoopBudgetError, TooLargeError
from ...engine.layout import Layout
from ...engine.limits import ceil_div
from .chunking import sweep_chunks
from .kernels import DISTANCES, ROW_SUMS, SOURCES, sweep_source, update_kernel
from .sweeps import sweep_passes
from .tiles import blocked_shape, tile_parts, tile_points, tile_s_lane
from .tuning import SammonTuning



def use_cache(dev, cache, n: int, d: int, layout: str) -> bool:
    """Whether a fit keeps the N x N source distances (``cache``: the estimator's parameter):
    "auto" when they take at most ``SammonTuning.cache_auto_bytes``, fit one texture and the
    DISTANCES kernel's loop fits the cap; True where they fit one texture (else ValueError)."""
    mx = dev.max_texture_size
    order = "col" if layout == "columns" else "row"
    try:
        Layout(n, n, True, "row", mx)
        fits = True
    except TooLargeError:
        fits = False
    if isinstance(cache, str) and cache == "auto":
        if not (4 * n * n <= dev.tuning(SammonTuning).cache_auto_bytes and fits):
            return False
        lays = {"X": Layout(n, d, True, order, mx), "OUT": Layout(n, n, True, "row", mx)}
        loop = DISTANCES.trips(lays, {}, {"SOURCE": SOURCES[layout]})[0]
        return dev.loop_cap is None or loop <= dev.loop_cap
    if cache and not fits:
        raise ValueError(f"cache=True: the {n} x {n} distance matrix does not fit the "
                         f"{mx}-texel texture limit")
    return bool(cache)


def fit_geometry(dev, n: int, d: int, m: int, est) -> SimpleNamespace:
    """What a fit of N = ``n`` points of ``d`` coordinates into ``m`` on ``dev`` makes and
    runs, from the shapes alone: layouts of every device array, the distance cache, the sweep
    (tiled or the pair kernel) and its chunks, the passes the device's loop cap cuts them into.
    :class:`SammonRun` sets up from it, and :meth:`Sammon.fit` calls it before anything is
    converted or allocated, so a fit the device cannot hold is refused at once: ValueError
    naming X (too large for the texture limit), LoopBudgetError (a ValueError: a kernel's
    loop cannot fit the device's loop cap, with the kernel's hint)."""
    mx = dev.max_texture_size
    if dev.max_outputs < 3:
        raise ValueError(f"Sammon writes 3 render targets per pass; this device (profile "
                         f"{dev.profile.name!r}) has {dev.max_outputs}")
    g = SimpleNamespace()
    g.order = order = "row" if est.layout == "rows" else "col"
    w = min(max(1, math.isqrt(n - 1) + 1), mx)

    def layout(what, rows, cols, packed=True, order="row", size=mx):
        try:
            return Layout(rows, cols, packed, order, size)
        except TooLargeError:
            texels = rows * (ceil_div(cols, 4) if packed else cols)
            raise ValueError(
                f"X: {n} samples x {d} features do not fit this device: the {what} "
                f"({rows} x {cols}: {texels} texels) exceed one texture of {mx} x {mx} = "
                f"{mx * mx} texels (the device's max_texture_size); use fewer samples"
                + ("" if what.startswith("positions") else " or features")) from None

    g.x_layout = layout("source points", n, d, order=order)
    # positions, direction and stress terms: one texel per point, near-square wrap
    g.pos_layout = layout("positions", n, m, size=w)
    g.vec_layout = layout("positions' stress terms", n, 1, size=w)
    g.cached = use_cache(dev, est.cache, n, d, est.layout)
    # How the pair kernels (UPDATE, and DISTANCES for row-major X) fetch what they share. Sizes are
    # shape uniforms, so Y_texel(j, 0) divides by Y_TEX_W per pair, and a CPU renderer runs
    # vector integer division lane by lane. The fetch variants spare it: y_j's texel stepped
    # along the sweep, the pair terms in m components and two blocks a loop step (Y_STEP,
    # Y_DIMS), and for DISTANCES a texel's four lanes from one block fetch (SHARED); on
    # llvmpipe each of them makes the pass faster, together as fast as sizes compiled in as
    # constants. The same texels and sums in the same order: the same bits. GPUs run them
    # too (the per-pair accessors divide the texel index by the shape uniform Y_TEX_W, and
    # per lane by the row length); benchmarks/diag/sammon_versus.py --variants times both
    # ways there.
    g.tuning = t = dev.tuning(SammonTuning)
    g.fetch_variants = t.fetch_variants
    g.tile_jb = t.tile_jb
    g.tile_unroll = t.tile_unroll
    g.tile_s_lane = tile_s_lane(m, t)
    g.k_pts = tile_points(dev.max_outputs, g.tile_s_lane, t)
    pt = ceil_div(ceil_div(d, 4), g.tile_unroll) * g.tile_unroll
    g.tile_il = t.tile_interleave and g.tile_jb % g.k_pts == 0 and g.tile_jb * pt <= mx
    g.tiled = t.tile_rows and est.layout == "rows" and not g.cached
    if g.tiled:
        # the blocked source holds a point's texels in one texture row: past 4 x mx
        # coordinates (or a texture it overflows) the pair kernel sweeps instead
        try:
            rows, b, pt = blocked_shape(n, d, mx, g.tile_unroll,
                                        g.tile_jb if g.tile_il else 1)
            Layout(rows, b * 4 * pt, True, "row", mx)
        except ValueError:
            g.tiled = g.tile_il = False
    g.source = source = sweep_source(est.layout, g.cached, g.tiled)
    g.chunks = sweep_chunks(n, d, source, est.split, g.tile_jb, t)
    if g.cached:
        layout("cached source distances", n, n)
    if g.tiled:
        g.n_part = tile_parts(n, g.k_pts, g.chunks, g.tile_jb, t)
        g.tile_layout = layout("tiles' partial sums", ceil_div(n, g.k_pts), 4 * g.n_part)
        layout("squared norms", 1, n)
    kern = update_kernel(source, dev.max_outputs, g.tile_jb, g.tile_s_lane, g.k_pts)
    try:
        g.split = sweep_passes(kern, n, d, source, g.chunks, dev.loop_cap,
                               float_blend=dev.float_blending, unroll=g.tile_unroll, tuning=t)
        if g.cached:
            lays = {"X": g.x_layout, "OUT": Layout(n, n, True, "row", mx)}
            DISTANCES.slices(lays, {}, DISTANCES.resolve_defines({"SOURCE": SOURCES[est.layout]}),
                        dev.loop_cap)
        else:
            sweep_passes(ROW_SUMS[est.layout], n, d, est.layout,
                         sweep_chunks(n, d, est.layout, 1, tuning=t), dev.loop_cap,
                         float_blend=dev.float_blending)
    except LoopBudgetError as e:
        raise LoopBudgetError(f"X ({n} samples x {d} features): {e}") from None
    return g

