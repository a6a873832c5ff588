"""The recursive method's passes: one line filter (:func:`_line_pass`) and the two schedules.

Recursive method
----------------
The kernel is approximated by two complex-conjugate pole pairs (4th order, the Deriche form),

    h(m) = 2 Re(alpha_0 p_0^|m| + alpha_1 p_1^|m|),   p_k = exp(-(b_k + i w_k) / sigma),

with Deriche's (b_k, w_k) (rounded to float32, the values the recursion multiplies by) and the
residues alpha_k fitted by least squares to the sampled, truncated and normalised kernel that
scipy uses, under the constraint that the DC gain is 1 (:func:`recursive_coefficients`; the
unconstrained fit lost 0.6e-4 .. 1.6e-4 per axis, so 1000 came back as 999.8). Along a line the
causal sums ``w_k(n) = p_k w_k(n-1) + x(n)`` and anticausal sums
``v_k(n) = p_k v_k(n+1) + x(n)`` both read only the input, and
``y = 2 Re sum_k alpha_k (w_k + v_k) - h0 x``, h0 (about h(0)) set so that the float32
coefficients have a DC gain of 1. The border enters as the
exact initial states w(-1), v(N) (closed forms for reflect, nearest and zero; see
``shaders/algorithms/blur/carry.frag``), so no warm-up region is needed and nothing depends on
sigma.

A fragment cannot walk a whole row, so each line is cut into blocks (a scan over blocks):

1. ``reduce``: one fragment per level-1 block (C1 texels) writes the block's zero-start states
   (8 values per lane through the 8 render targets, or in two passes of 4 on a device with 4;
   a single packed lane keeps them in 2);
2. ``combine`` (0 or more): coarser levels, G blocks at a time, until at most ``top`` blocks
   remain per line;
3. ``carry``: the incoming states of each top-level block, border included;
4. ``down`` (as many as ``combine``): incoming states of the finer blocks;
5. ``apply``: one fragment per 8 texels writes them through the 8 render targets, so the
   result lies in 8 planes (texel t of a line in plane t mod 8; 4 of each on a device with 4
   render targets). It first carries its block's incoming states over the rest of the block:
   the texels before its own through the causal recursion, those after through the
   anticausal one (backward from the block's end), both as ``s = p s + x`` from zero, in one
   loop of the same length in every fragment (neighbouring fragments sit at different places
   of their blocks; a walk that depended on the place made a GPU run both walks for each).

The state after a block is an affine function of the state before it; the levels combine these
maps, so the number of passes depends on the image size (logarithmically), never on sigma.
The default tiling (C1 = 16 texels, G = 8, at most 16 top blocks) is the fastest on a GPU:
the apply pass is bound by texture fetches, so a short walk beats fewer summary bytes.

Schedules (the two of the source): ``"hv"`` filters the rows then the columns (the vertical
passes read the horizontal planes directly) and ends with one interleave pass; ``"vtvt"``
filters the columns, transposes, filters the columns again and transposes back (each
transpose also gathers the planes). Grayscale images use the packed layout (4 pixels per
texel): the vertical passes run four columns per fragment as the four lanes of a texel, the
horizontal pass of "hv" steps through the four pixels of each texel.

The kernel tables are read from :mod:`.kernels` at call time (``kernels.APPLY`` ...), so that
a variant swapped in there takes effect.
"""
from __future__ import annotations

from ...engine.arrays import DeviceArray
from ...engine.errors import TooLargeError
from . import kernels
from .coefficients import iir_uniforms
from .kernels import c1_define, summary_names
from .options import BORDER_CODE
from .work_arrays import like, release, tag_coefficients
from .tiling import line_config


def _tex(dev, w: int, h: int) -> DeviceArray:
    """A scratch array of h x w texels (wrapped into the texture size where it is larger)."""
    try:
        return dev.empty((h, 4 * w), packed=True, order="row")
    except TooLargeError:
        raise TooLargeError(f"a {w}x{h} texel work array does not fit a "
                            f"{dev.max_texture_size}x{dev.max_texture_size} texture even "
                            "wrapped; the image is too large for this blur") from None


def _line_pass(dev, src, *, axis, seq, nlines, npos, nsteps, sigma, border, tiling, label,
               planes_wp=0, which=0):
    """Filter every line of ``src`` along one axis; returns the output planes (8, or 4 on a
    device with four render targets).

    src : a DeviceArray (lines are its grid columns for axis 1, grid rows for axis 0) or, with
        ``planes_wp`` > 0, the column planes of a previous axis-0 apply pass (lines in
        plane-major order, planes_wp texel columns each).
    which : 0 if ``sigma`` is the blur's sigma_y, 1 if sigma_x (for a recipe's sigma change).
    """
    tag_coefficients(dev, (which, nsteps))
    cfg = line_config(seq, tiling, dev.max_outputs, dev.loop_cap)
    til, npl = cfg.tiling, cfg.npl
    source = "planes" if planes_wp else "image"
    uni = dict(iir_uniforms(sigma, nsteps), NSTEPS=nsteps, NPOS=npos)
    src_uni = dict(uni, WP=int(planes_wp)) if planes_wp else uni
    levels = til.levels(npos)
    inputs = {f"P{k}": src[k] for k in range(len(src))} if planes_wp else {"X": src}
    ax = {"AXIS": axis}
    spt = 4 if seq else 1

    def sset(prefix, arrs, part=0):
        keep = set(summary_names(prefix, seq, part))
        return {n: a for n, a in zip(summary_names(prefix, seq), arrs) if n in keep}

    def summaries(table, key, outs, **kw):
        for part in cfg.parts:
            dev.run(table[key(part)], sset("OUT", outs, part), **kw)

    with dev.scope() as sc:  # summaries and incoming states: released however this ends
        def summary(nb):
            return [sc.track(_tex(dev, nlines, nb) if axis == 1 else _tex(dev, nb, nlines))
                    for _ in summary_names("", seq)]

        sums = [summary(levels[0])]
        c1k = dict(ax, C1K=c1_define(til.c1))
        with dev.phase(f"{label}.reduce"):
            summaries(kernels.REDUCE, lambda p: (source, seq, npl if planes_wp else 8, p), sums[0],
                      inputs=dict(inputs), uniforms=dict(src_uni, C1=til.c1), defines=c1k)
        for lvl in range(1, len(levels)):
            sums.append(summary(levels[lvl]))
            u = dict(uni, G=til.g, NB_CHILD=levels[lvl - 1],
                     CSTEPS=til.c1 * spt * til.g ** (lvl - 1))
            with dev.phase(f"{label}.combine"):
                summaries(kernels.COMBINE, lambda p: (seq, p), sums[lvl],
                          inputs=sset("S", sums[lvl - 1]), uniforms=u, defines=ax)
        top = len(levels) - 1
        inc = summary(levels[top])
        u = dict(src_uni, NB=levels[top], CSTEPS=til.c1 * spt * til.g ** top)
        with dev.phase(f"{label}.carry"):
            summaries(kernels.CARRY, lambda p: (source, seq, npl if planes_wp else 8, p), inc,
                      inputs=dict(inputs, **sset("S", sums[top])), uniforms=u,
                      defines=dict(ax, BORDER=BORDER_CODE[border]))
        for lvl in range(top - 1, -1, -1):
            finer = summary(levels[lvl])
            u = dict(uni, G=til.g, NB_CHILD=levels[lvl], CSTEPS=til.c1 * spt * til.g ** lvl)
            with dev.phase(f"{label}.down"):
                summaries(kernels.DOWN, lambda p: (seq, p), finer,
                          inputs=dict(sset("I", inc), **sset("S", sums[lvl])), uniforms=u,
                          defines=ax)
            release(dev, inc)
            inc = finer
        for sm in sums:
            release(dev, sm)
        nfb = -(-npos // npl)
        out = [sc.track(_tex(dev, nlines, nfb) if axis == 1 else _tex(dev, nfb, nlines))
               for _ in range(npl)]
        with dev.phase(f"{label}.apply"):
            dev.run(kernels.APPLY[(source, seq, npl)], out, inputs=dict(inputs, **sset("I", inc)),
                    uniforms=dict(src_uni, C1=til.c1), defines=c1k)
        for a in out:
            sc.keep(a)
    tag_coefficients(dev, None)
    return out


def _planes(planes) -> dict:
    return {f"P{k}": p for k, p in enumerate(planes)}


def recursive_hv(dev, x, gray, sy, sx, border, tiling):
    h, w = x.shape[0], x.shape[1]
    wt = x.layout.grid_w  # texels per row
    planes_h = _line_pass(dev, x, axis=0, seq=gray, nlines=h, npos=wt,
                          nsteps=w if gray else wt, sigma=sx, border=border, tiling=tiling,
                          label="H", which=1)
    wp = planes_h[0].layout.grid_w
    try:
        planes_v = _line_pass(dev, planes_h, axis=1, seq=False, nlines=len(planes_h) * wp,
                              npos=h, nsteps=h, sigma=sy, border=border, tiling=tiling,
                              label="V", planes_wp=wp)
    finally:
        release(dev, planes_h)
    out = like(dev, x, gray)
    try:
        with dev.phase("interleave"):
            dev.run(kernels.INTERLEAVE[len(planes_v)], out, inputs=_planes(planes_v),
                    uniforms={"WP": wp})
    except BaseException:
        release(dev, [out])
        raise
    finally:
        release(dev, planes_v)
    return out


def _transpose(dev, planes, src_shape, gray, label):
    h, w = src_shape[0], src_shape[1]
    shape_t = (w, h) if gray else (w, h, src_shape[2])
    out = dev.empty(shape_t) if gray else dev.empty_image(shape_t)
    try:
        with dev.phase(label):
            dev.run(kernels.TRANSPOSE[len(planes)], out, inputs=_planes(planes),
                    defines={"GRAY": int(gray)})
    except BaseException:
        release(dev, [out])
        raise
    return out


def recursive_vtvt(dev, x, gray, sy, sx, border, tiling):
    h = x.shape[0]
    p1 = _line_pass(dev, x, axis=1, seq=False, nlines=x.layout.grid_w, npos=h, nsteps=h,
                    sigma=sy, border=border, tiling=tiling, label="V1")
    try:
        t = _transpose(dev, p1, x.shape, gray, "T1")
    finally:
        release(dev, p1)
    try:
        p2 = _line_pass(dev, t, axis=1, seq=False, nlines=t.layout.grid_w, npos=t.shape[0],
                        nsteps=t.shape[0], sigma=sx, border=border, tiling=tiling, label="V2",
                        which=1)
        shape_t = t.shape
    finally:
        release(dev, [t])
    try:
        return _transpose(dev, p2, shape_t, gray, "T2")
    finally:
        release(dev, p2)
