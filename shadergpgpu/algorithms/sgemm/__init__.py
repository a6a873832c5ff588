"""SGEMM with B read through the texture path: ``C = alpha op(A) op(B) + beta C``.

The structure follows the Adreno kernel of source 001 in fragment-shader form:

* **A** goes through the *plain buffer path*: a GL buffer read by the shader as a
  ``samplerBuffer`` with ``texelFetch`` (a texture buffer object, :mod:`shadergpgpu.engine.glraw`),
  packed row-major, one texel = 4 consecutive K of one row (:class:`~shadergpgpu.engine.layout.BufferLayout`).
* **B** goes through the *2-D texture path*: an RGBA32F texture, one texel = 4 columns.
* Each fragment computes an **8-row x 4-column micro-tile** (``vec4 c0..c7``) and writes it through
  **8 render targets**; a last pass (the epilogue) gathers the 8 targets into C and applies
  ``alpha`` and ``beta``. K can be split over several passes summed by additive blending (more
  fragments in flight for small outputs).

Variants (``variant=``):

``"auto"`` (default)
    The faster of the two 8x4 variants on the device (:func:`default_variant`).
``"tile8x4"``
    A through the buffer path, B through the texture path, 8x4 micro-tile, 8 render targets.
``"tile8x4-tex"``
    The same with A also through a 2-D texture.
``"tile4x4"``
    A 4x4 tile through 4 render targets (fewer outputs, more fragments), for comparison.
``"simple"``
    One output texel (1 x 4) per fragment, A through the buffer path; K slices (where needed)
    are summed into C by additive blending.
``"tile8x4-ubo"``
    The 8x4 micro-tile with A from a **uniform buffer** (:mod:`shadergpgpu.engine.blocks`):
    one draw covers one 8-row block of C, so every fragment of it reads the same A values
    (the constant cache serves them; a K-quad costs 4 texel fetches of B per 256 flops instead
    of 12, past the texel-fetch bound of the texture paths). A is staged into block windows
    (8 rows x one K chunk as vec4 quads, at most GL_MAX_UNIFORM_BLOCK_SIZE bytes: 2,048 K per
    chunk at 64 KiB); the host draws one rectangle per block row and K chunk (one prepared
    pass, :meth:`~shadergpgpu.engine.passes.Pass.sweep`, moving the window between draws),
    later chunks adding by blending (see below without float blending). Block row i's texels
    form a band x width rect of the 8 targets (a 2-D rect keeps pixel quads full), the rects
    tiling the targets about ``SgemmTuning.ubo_target_w`` texels wide (at n = 4096: 32 x 32
    rects in a 1024 x 512 target, the shape of one full-screen draw); the epilogue reads them
    back.
``"tile16x2-ubo"``, ``"tile32x1-ubo"``
    The same with **B transposed** (staged as op(B)^T, one texel = 4 K of one column of C) and
    a 16 x 2 (32 x 1) micro-tile per fragment in the same 8 targets: a K-quad costs 2 (1) texel
    fetches of B per 256 flops (the 8x4 tile: 4) for 16 (32) uniform vec4 reads of A (the
    8x4 tile: 8), trading texel fetches for constant-cache reads; windows hold 1,024 (512) K.
    ``"tile16x2-ubo"`` is the ``auto`` choice on a GPU with uniform blocks (see
    :func:`default_variant`; ``benchmarks/diag/sgemm_ubo.py`` times them against each other).

**Device profiles** (``Device(profile=...)``, :mod:`shadergpgpu.engine.profiles`): every variant
adapts to the device's limits instead of failing (:func:`effective_variant`): the micro-tile
shrinks to 4 rows where the device has fewer than 8 render targets (1 row, the simple kernel,
below 4; the transposed-B tiles halve their rows: 16x2 -> 8x2), A goes through the 2-D texture
path where there are no buffer textures (or, for the uniform-block variants, no uniform blocks:
GLSL 1.10; then the 8x4 tile), K slices are combined with ``accumulate="add"`` (ping-pong
passes where float32 blending is missing; the uniform-block variants draw each later K chunk
into fresh targets and add them with one pass per target)
and every loop stays within the profile's cap. :func:`work` and the registered pass plans take
the device (or its :class:`Limits`), so plan and pass counter agree under every profile.

Every kernel is declared once (``kernels.py``, :func:`~shadergpgpu.engine.kernels.declare`): sizes reach
the shaders as uniforms, so one program serves every shape of a layout kind. The K loop of the
product kernels is a :class:`~shadergpgpu.engine.kernels.Split` range: the engine cuts it over
blended passes so that one fragment never runs more loop iterations than the device's loop cap
(``dev.loop_cap``: Mesa llvmpipe silently stops longer loops); on GPUs :func:`auto_split` asks
for more K slices when the output is small (more fragments in flight).

Any shapes work: inputs are staged into zero-padded copies (M to a multiple of the tile rows, K
to a multiple of 4 * unroll) by a staging pass on the device (one texel fetch per output texel
where the input is packed row-major and not transposed, one per lane otherwise); a numpy input
is uploaded as it is first (its own bytes where they are the texels, no host copy) and used as
uploaded where it needs no padding or transposing. The kernels never branch on edges; the
padding never reaches the result. Arrays wider than the texture limit wrap (the layout accessors handle it).

Files:

* ``api.py``: :func:`sgemm` (argument checks, numpy or device operands, dispatch) and
  :func:`check_fits` (the size check from the shapes alone);
* ``variants.py``: :class:`Variant`, ``VARIANTS``, :class:`Limits`, :func:`default_variant`,
  :func:`effective_variant` (the variant adapted to a device's limits), the padding of M and K;
* ``kernels.py``: every declared kernel (staging, products, epilogues);
* ``ubo.py``: the uniform-block geometry (K chunks, windows, the targets' rects), as the
  device's :class:`SgemmTuning` sets it (``ubo_*``);
* ``staging.py``: op(X) zero-padded into textures, texture buffers or block windows;
* ``product.py``: the product and epilogue passes of one call;
* ``host.py``: numpy operands of a large product pipelined by row blocks of C (uploads and
  asynchronous readbacks overlapping the product), as the device's :class:`SgemmTuning`
  sets (``host_*``; ``ubo_quad_order``: the uniform-block variants' fragment order);
* ``tuning.py``: :class:`SgemmTuning`;
* ``splits.py``: K slices, :func:`auto_split`, :func:`min_split` (the pass plan of a call,
  ``work``, and the plans ``sgemm/<variant>`` are in :mod:`shadergpgpu.analysis.plans.sgemm`).
"""
from __future__ import annotations

# the names code outside the package uses
from .api import check_fits, sgemm  # noqa: F401
from .kernels import (COMBINE, COMBINE_UBO, SIMPLE, SIMPLE_WITH_C, STAGE, STAGE_BLOCK, TILE,
                      TILE_UBO, TILE_UBO_B_TRANSPOSED)  # noqa: F401
from .splits import auto_split, min_split
from .tuning import SgemmTuning
from .variants import (DEFAULT_VARIANT, VARIANTS, Limits, Variant, default_variant,
                       effective_variant)  # noqa: F401

__all__ = ["sgemm", "check_fits", "VARIANTS", "DEFAULT_VARIANT", "Variant", "default_variant",
           "effective_variant", "auto_split", "min_split", "Limits", "SgemmTuning", "STAGE",
           "STAGE_BLOCK", "SIMPLE", "SIMPLE_WITH_C", "TILE", "TILE_UBO", "COMBINE"]
