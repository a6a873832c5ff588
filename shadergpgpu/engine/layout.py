"""Layouts: how a logical 2-D float32 matrix lies in an RGBA32F texture.

Pure shape math; nothing here touches OpenGL.

A layout first arranges the matrix as a *texel grid*:

* ``order="row"``: grid row ``gi`` is matrix row ``gi``; ``order="col"``: grid row ``gi`` is
  matrix column ``gi`` (the texture holds the transpose, so neighbouring fragments that walk
  down a column read neighbouring texels).
* ``packed=True``: four consecutive elements along the grid row share one RGBA texel
  (zero-padded at the end of the row); ``packed=False``: one element per texel, in ``.r``.

So for a row-major packed matrix ``A``, grid texel ``(gi, gj)`` holds ``A[gi, 4*gj:4*gj+4]``;
for a column-major packed matrix it holds ``A[4*gj:4*gj+4, gi]``.

The grid is then placed in the texture. If it fits within ``max_size`` on both axes it is stored
as is (grid column = texture x, grid row = texture y). Otherwise it *wraps*: the grid is read
row by row as one long run of texels and laid into a texture ``max_size`` texels wide. Shaders
never do this math themselves: :func:`glsl_input` and :func:`glsl_output` emit the accessors
(``NAME_texel(gi, gj)``, ``NAME_at(r, c)``, ``NAME_grid()``, ``NAME_pos(lane)`` ...). Sizes
reach the shader as uniforms, so one compiled program serves every size of a layout *kind*
(packed or not, row or column order, wrapped or not).

In debug mode (:mod:`shadergpgpu.engine.sanitizer`) the accessors that read are emitted with a
*guard*: an index out of range is recorded (``sg_debug_hit``) and clamped. Without debug the
accessors' text is exactly the plain one (no guard, no define), so programs are unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .errors import TooLargeError
from .limits import ceil_div as _ceil_div

DEFAULT_MAX_SIZE = 16384

# What a guarded accessor records (debug mode): code = 1 + 4 * input number + kind, with the
# two indices of the bad access (see :func:`debug_guard`).
GUARD_ELEMENT, GUARD_FLAT, GUARD_TEXEL, GUARD_VEC4 = 0, 1, 2, 3


def debug_guard(check: int | None, kind: int, a: str, b: str, bounds) -> str:
    """GLSL lines that check an accessor's indices (debug mode), or "" when ``check`` is None.

    ``check``: the input's number; ``kind``: ``GUARD_*``; ``a``, ``b``: the two indices shown
    in the report (``b`` may be ``"0"``); ``bounds``: (variable, exclusive upper bound) pairs.
    An index outside ``[0, bound)`` is recorded once per fragment (the first) and clamped, so
    the read itself stays inside the array."""
    if check is None:
        return ""
    test = " || ".join(f"{v} < 0 || {v} >= {hi}" for v, hi in bounds)
    clamps = "".join(f"        {v} = clamp({v}, 0, ({hi}) - 1);\n" for v, hi in bounds)
    return (f"    if ({test}) {{\n"
            f"        sg_debug_hit({1 + 4 * int(check) + kind}, {a}, {b});\n{clamps}    }}\n")


@dataclass(frozen=True)
class Layout:
    """Placement of a ``rows x cols`` float32 matrix in an RGBA32F texture."""

    rows: int
    cols: int
    packed: bool = True
    order: str = "row"
    max_size: int = DEFAULT_MAX_SIZE
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.order not in ("row", "col"):
            raise ValueError(f"order must be 'row' or 'col', got {self.order!r}")
        for name in ("rows", "cols", "max_size"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        object.__setattr__(self, "rows", int(self.rows))
        object.__setattr__(self, "cols", int(self.cols))
        object.__setattr__(self, "packed", bool(self.packed))
        if self.tex_h > self.max_size:
            raise TooLargeError(
                f"a {self.rows}x{self.cols} matrix ({self.n_texels} texels) does not fit in one "
                f"{self.max_size}x{self.max_size} texture even when wrapped")
        object.__setattr__(self, "_hash", hash((self.rows, self.cols, self.packed, self.order,
                                                self.max_size)))

    def __hash__(self):
        return self._hash

    @classmethod
    def wrapped_vector(cls, n: int, wrap: int, max_size: int = DEFAULT_MAX_SIZE) -> "Layout":
        """A packed 1 x ``n`` vector wrapped at about ``wrap`` texels per texture row: one
        texel high render targets shade poorly on GPUs (half-empty pixel quads). Wider than
        ``wrap`` where ``wrap`` rows would not hold it (a texture is at most as high as the
        layout's ``max_size``), never wider than ``max_size``."""
        texels = _ceil_div(int(n), 4)
        w = max(int(wrap), _ceil_div(texels, int(wrap)))
        return cls(1, int(n), True, "row", min(w, int(max_size)))

    # ---- the texel grid -------------------------------------------------------------------
    @cached_property
    def pack(self) -> int:
        """Elements per texel: 4 when packed, 1 when not."""
        return 4 if self.packed else 1

    @cached_property
    def major(self) -> int:
        """Logical extent along grid rows (rows for row order, cols for column order)."""
        return self.rows if self.order == "row" else self.cols

    @cached_property
    def minor(self) -> int:
        """Logical extent along a grid row (the packed axis)."""
        return self.cols if self.order == "row" else self.rows

    @cached_property
    def grid_h(self) -> int:
        return self.major

    @cached_property
    def grid_w(self) -> int:
        return _ceil_div(self.minor, self.pack)

    @cached_property
    def n_texels(self) -> int:
        return self.grid_h * self.grid_w

    # ---- the texture ----------------------------------------------------------------------
    @cached_property
    def wrapped(self) -> bool:
        return self.grid_w > self.max_size or self.grid_h > self.max_size

    @cached_property
    def tex_w(self) -> int:
        return min(self.max_size, self.n_texels) if self.wrapped else self.grid_w

    @cached_property
    def tex_h(self) -> int:
        return _ceil_div(self.n_texels, self.tex_w) if self.wrapped else self.grid_h

    @cached_property
    def bytes_match(self) -> bool:
        """Whether a C-ordered float32 (rows, cols) matrix's bytes are the texture's texels as
        they are (packed, row order, no padded lane, no padded texel at the end of a wrapped
        texture): uploads and readbacks then need no repacking copy."""
        return self.packed and self.order == "row" and self.cols % 4 == 0 and \
            self.tex_w * self.tex_h == self.n_texels

    @cached_property
    def tex_size(self) -> tuple[int, int]:
        """(width, height) of the texture."""
        return (self.tex_w, self.tex_h)

    @cached_property
    def nbytes(self) -> int:
        return self.tex_w * self.tex_h * 16

    def texel_of(self, r: int, c: int) -> tuple[int, int, int]:
        """Texture (x, y, component) that holds logical element (r, c)."""
        i, j = (r, c) if self.order == "row" else (c, r)
        gj, comp = divmod(j, self.pack)
        if self.wrapped:
            t = i * self.grid_w + gj
            return (t % self.tex_w, t // self.tex_w, comp)
        return (gj, i, comp)

    # ---- host-side packing -----------------------------------------------------------------
    def pack_array(self, a: np.ndarray) -> np.ndarray:
        """Logical (rows, cols) array -> (tex_h, tex_w, 4) float32 texture image."""
        a = np.asarray(a, dtype=np.float32)
        if a.shape != (self.rows, self.cols):
            raise ValueError(f"array of shape {a.shape} does not match layout "
                             f"{self.rows}x{self.cols}")
        if self.order == "col":
            a = a.T
        gh, gw, p = self.grid_h, self.grid_w, self.pack
        grid = np.zeros((gh, gw, 4), dtype=np.float32)
        if p == 4:
            flat = grid.reshape(gh, gw * 4)
            flat[:, : self.minor] = a
        else:
            grid[:, :, 0] = a
        if not self.wrapped:
            return grid
        out = np.zeros((self.tex_h * self.tex_w, 4), dtype=np.float32)
        out[: self.n_texels] = grid.reshape(-1, 4)
        return out.reshape(self.tex_h, self.tex_w, 4)

    def unpack_array(self, data: np.ndarray) -> np.ndarray:
        """(tex_h, tex_w, 4) texture image -> logical (rows, cols) float32 array."""
        data = np.asarray(data, dtype=np.float32).reshape(self.tex_h, self.tex_w, 4)
        gh, gw = self.grid_h, self.grid_w
        grid = data.reshape(-1, 4)[: self.n_texels].reshape(gh, gw, 4) if self.wrapped else data
        if self.pack == 4:
            a = grid.reshape(gh, gw * 4)[:, : self.minor]
        else:
            a = grid[:, :, 0]
        if self.order == "col":
            a = a.T
        return np.ascontiguousarray(a)

    # ---- GLSL accessors --------------------------------------------------------------------
    @cached_property
    def kind(self) -> tuple:
        """What a compiled kernel depends on: sizes are uniforms, so only the layout's kind."""
        return ("texture", self.packed, self.order, self.wrapped)

    @cached_property
    def shape_uniform(self) -> tuple:
        """Value of the ``sg_NAME_shape`` uniform: (rows, cols, grid_w, tex_w)."""
        return (self.rows, self.cols, self.grid_w, self.tex_w)

    def glsl_input(self, name: str, check: int | None = None) -> str:
        """Declarations and accessors for reading this layout (see :func:`glsl_input`)."""
        return glsl_input(self.kind, name, check)

    def glsl_output(self, name: str, location: int, check: bool = False) -> str:
        """Declaration of output ``name`` and its position helpers (see :func:`glsl_output`)."""
        return glsl_output(self.kind, name, location, check)


def _glsl_shape(kind: tuple, name: str) -> str:
    """The shape uniform of array ``name`` and its macros (sizes are uniforms, not constants).

    ``NAME_ROWS``, ``NAME_COLS`` (logical shape), ``NAME_GRID_W``, ``NAME_GRID_H`` (texel grid),
    ``NAME_TEX_W`` (texture width), ``NAME_N_TEXELS`` (texels in the grid), ``NAME_MINOR``
    (logical extent along a grid row: the packed axis).
    """
    order = kind[2]
    major, minor = ("ROWS", "COLS") if order == "row" else ("COLS", "ROWS")
    return (f"uniform ivec4 sg_{name}_shape;\n"
            f"#define {name}_ROWS sg_{name}_shape.x\n"
            f"#define {name}_COLS sg_{name}_shape.y\n"
            f"#define {name}_GRID_W sg_{name}_shape.z\n"
            f"#define {name}_TEX_W sg_{name}_shape.w\n"
            f"#define {name}_GRID_H {name}_{major}\n"
            f"#define {name}_MINOR {name}_{minor}\n"
            f"#define {name}_N_TEXELS ({name}_GRID_H * {name}_GRID_W)\n")


def _guards(check: int | None, name: str) -> tuple[str, str, str]:
    """Guards of the texel (grid), element and flat accessors of input ``name`` (debug mode)."""
    return (debug_guard(check, GUARD_TEXEL, "gi", "gj",
                        (("gi", f"{name}_GRID_H"), ("gj", f"{name}_GRID_W"))),
            debug_guard(check, GUARD_ELEMENT, "r", "c",
                        (("r", f"{name}_ROWS"), ("c", f"{name}_COLS"))),
            debug_guard(check, GUARD_FLAT, "i", "0", (("i", f"{name}_ROWS * {name}_COLS"),)))


def glsl_input(kind: tuple, name: str, check: int | None = None) -> str:
    """Declarations and accessors for reading an input of layout ``kind`` named ``name``.

    The sampler is ``sg_NAME`` (so a define may use the input's name). Emitted:
      ``ivec2 NAME_coord(int gi, int gj)``  texture coordinate of grid texel (gi, gj)
      ``vec4  NAME_texel(int gi, int gj)``  grid texel (gi, gj) (depends on the layout: a kernel
                                             that reads it declares the layout it needs)
      ``float NAME_at(int r, int c)``       logical element (r, c) (any layout)
      ``float NAME_get(int i)``             logical element i in row-major flat order
      ``ivec2 NAME_grid_of(int t)``         grid (gi, gj) of the t-th texel, row by row
      ``ivec4 NAME_flat(int gi, int gj)``   row-major flat index of each lane of a grid texel,
                                             -1 for padding lanes
      ``NAME_LANES``                        elements per texel along a grid row (4 packed, 1
                                             unpacked)
    plus the shape macros of :func:`_glsl_shape`. ``check`` (debug mode: the input's number)
    guards ``NAME_coord`` (so ``NAME_texel``), ``NAME_at`` and ``NAME_get`` (:func:`debug_guard`).
    """
    if kind[0] == "buffer":
        return _glsl_buffer_input(name, check)
    _, packed, order, wrapped = kind
    if wrapped:
        coord = (f"    int t = gi * {name}_GRID_W + gj;\n"
                 f"    return ivec2(t % {name}_TEX_W, t / {name}_TEX_W);\n")
    else:
        coord = "    return ivec2(gj, gi);\n"
    i, j = ("r", "c") if order == "row" else ("c", "r")
    if packed:
        at = f"    return {name}_texel({i}, {j} >> 2)[{j} & 3];\n"
        lanes = "ivec4(0, 1, 2, 3)"
        pack = 4
    else:
        at = f"    return {name}_texel({i}, {j}).r;\n"
        lanes = "ivec4(0, 1 << 30, 1 << 30, 1 << 30)"
        pack = 1
    g_coord, g_at, g_get = _guards(check, name)
    return (f"uniform sampler2D sg_{name};\n" + _glsl_shape(kind, name) +
            f"#define {name}_LANES {pack}\n" +
            f"ivec2 {name}_coord(int gi, int gj) {{\n{g_coord}{coord}}}\n"
            f"vec4 {name}_texel(int gi, int gj) {{\n"
            f"    return texelFetch(sg_{name}, {name}_coord(gi, gj), 0);\n}}\n"
            f"float {name}_at(int r, int c) {{\n{g_at}{at}}}\n"
            f"float {name}_get(int i) {{\n{g_get}"
            f"    return {name}_at(i / {name}_COLS, i % {name}_COLS);\n}}\n"
            f"ivec2 {name}_grid_of(int t) {{\n"
            f"    return ivec2(t / {name}_GRID_W, t % {name}_GRID_W);\n}}\n"
            f"ivec4 {name}_flat(int gi, int gj) {{\n"
            f"    ivec4 {j} = gj * {pack} + {lanes};\n"
            f"    ivec4 {i} = ivec4(gi);\n"
            f"    ivec4 keep = ivec4(lessThan({j}, ivec4({name}_MINOR)));\n"
            f"    return (r * {name}_COLS + c) * keep + (keep - 1);\n}}\n")


def glsl_output(kind: tuple, name: str, location: int, check: bool = False) -> str:
    """Declaration of output ``name`` (layout ``kind``) at ``location`` and its accessors.

    Emitted:
      ``out vec4 NAME``                 the texel this fragment writes
      ``ivec2 NAME_grid()``             grid (gi, gj) of the texel being written
      ``bool  NAME_inside()``           false for wrap padding past the last texel
      ``ivec2 NAME_pos(int lane)``      logical (row, column) of lane 0..3 of that texel
      ``bool  NAME_live(int lane)``     the lane holds an element of the array (not padding)
      ``bvec4 NAME_lanes()``            NAME_live of the four lanes
      ``int   NAME_index(int lane)``    row-major flat index of the lane's element
    so no kernel does lane or padding arithmetic by hand. ``check`` (debug mode's check pass):
    ``NAME`` is a plain global instead of a render target (the pass writes only its record).
    """
    _, packed, order, wrapped = kind
    if wrapped:
        grid = (f"    int t = int(gl_FragCoord.y) * {name}_TEX_W + int(gl_FragCoord.x);\n"
                f"    return ivec2(t / {name}_GRID_W, t % {name}_GRID_W);\n")
        inside = (f"    return int(gl_FragCoord.y) * {name}_TEX_W + int(gl_FragCoord.x)"
                  f" < {name}_N_TEXELS;\n")
    else:
        grid = "    return ivec2(int(gl_FragCoord.y), int(gl_FragCoord.x));\n"
        inside = "    return true;\n"
    minor = "g.y * 4 + lane" if packed else "g.y"
    pos = "ivec2(g.x, m)" if order == "row" else "ivec2(m, g.x)"
    lane_ok = "" if packed else " && lane == 0"
    decl = f"vec4 {name};\n" if check else f"layout(location = {location}) out vec4 {name};\n"
    return (decl + _glsl_shape(kind, name) +
            f"ivec2 {name}_grid() {{\n{grid}}}\n"
            f"bool {name}_inside() {{\n{inside}}}\n"
            f"ivec2 {name}_pos(int lane) {{\n"
            f"    ivec2 g = {name}_grid();\n"
            f"    int m = {minor};\n"
            f"    return {pos};\n}}\n"
            f"bool {name}_live(int lane) {{\n"
            f"    ivec2 g = {name}_grid();\n"
            f"    return {name}_inside(){lane_ok} && {minor} < {name}_MINOR;\n}}\n"
            f"bvec4 {name}_lanes() {{\n"
            f"    return bvec4({name}_live(0), {name}_live(1), {name}_live(2), {name}_live(3));\n}}\n"
            f"int {name}_index(int lane) {{\n"
            f"    ivec2 p = {name}_pos(lane);\n"
            f"    return p.x * {name}_COLS + p.y;\n}}\n")


def _glsl_buffer_input(name: str, check: int | None = None) -> str:
    """Accessors for an input in a linear buffer (``samplerBuffer sg_NAME``), packed row-major.

    Emitted: ``NAME_index(gi, gj)`` (buffer texel index), ``NAME_texel``, ``NAME_at``,
    ``NAME_get`` and the shape macros (guarded in debug mode, as for textures).
    """
    g_index, g_at, g_get = _guards(check, name)
    return (f"uniform samplerBuffer sg_{name};\n" + _glsl_shape(("buffer", True, "row", False), name) +
            f"#define {name}_LANES 4\n" +
            f"int {name}_index(int gi, int gj) {{\n{g_index}"
            f"    return gi * {name}_GRID_W + gj;\n}}\n"
            f"vec4 {name}_texel(int gi, int gj) {{\n"
            f"    return texelFetch(sg_{name}, {name}_index(gi, gj));\n}}\n"
            f"float {name}_at(int r, int c) {{\n{g_at}"
            f"    return {name}_texel(r, c >> 2)[c & 3];\n}}\n"
            f"float {name}_get(int i) {{\n{g_get}"
            f"    return {name}_at(i / {name}_COLS, i % {name}_COLS);\n}}\n")


@dataclass(frozen=True)
class BufferLayout:
    """A ``rows x cols`` float32 matrix packed row-major in a linear buffer of RGBA32F texels.

    Texel ``t = gi * grid_w + gj`` holds ``M[gi, 4*gj:4*gj+4]`` (the row's end zero-padded):
    the texel order of a packed row-major :class:`Layout`, wrapped or not, so a texture of
    :meth:`texture_layout` read back in memory order fills the buffer. Shaders read it through
    ``samplerBuffer NAME`` (a texture buffer object, see :mod:`shadergpgpu.engine.glraw`).
    """

    rows: int
    cols: int

    def __post_init__(self):
        for name in ("rows", "cols"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        object.__setattr__(self, "rows", int(self.rows))
        object.__setattr__(self, "cols", int(self.cols))

    @property
    def grid_w(self) -> int:
        return _ceil_div(self.cols, 4)

    @property
    def grid_h(self) -> int:
        return self.rows

    @property
    def n_texels(self) -> int:
        return self.grid_h * self.grid_w

    @property
    def nbytes(self) -> int:
        return self.n_texels * 16

    def index_of(self, r: int, c: int) -> tuple[int, int]:
        """(texel index, component) that holds element (r, c)."""
        gj, comp = divmod(c, 4)
        return (r * self.grid_w + gj, comp)

    def texture_layout(self, max_size: int = DEFAULT_MAX_SIZE) -> Layout:
        """The 2-D texture layout whose texels, in memory order, are this buffer's texels."""
        return Layout(self.rows, self.cols, packed=True, order="row", max_size=max_size)

    def pack_array(self, a: np.ndarray) -> np.ndarray:
        """Logical (rows, cols) array -> (n_texels, 4) float32 buffer contents."""
        a = np.asarray(a, dtype=np.float32)
        if a.shape != (self.rows, self.cols):
            raise ValueError(f"array of shape {a.shape} does not match buffer layout "
                             f"{self.rows}x{self.cols}")
        out = np.zeros((self.rows, self.grid_w * 4), dtype=np.float32)
        out[:, : self.cols] = a
        return out.reshape(-1, 4)

    packed = True
    order = "row"
    kind = ("buffer", True, "row", False)

    @property
    def shape_uniform(self) -> tuple:
        return (self.rows, self.cols, self.grid_w, 0)

    def glsl_input(self, name: str, check: int | None = None) -> str:
        return _glsl_buffer_input(name, check)


def layout_for(shape, packed: bool = True, order: str = "row",
               max_size: int = DEFAULT_MAX_SIZE) -> Layout:
    """Layout for a numpy shape: 1-D arrays of length n are stored as a 1 x n row.

    Parameters
    ----------
    shape : tuple of int
        A 1-D or 2-D shape.
    packed : bool, default=True
        Four values per texel (False: one per texel).
    order : {"row", "col"}, default="row"
        Whether a texel holds consecutive values of a row or of a column.
    max_size : int, default=DEFAULT_MAX_SIZE
        The texture size past which the layout wraps.

    Returns
    -------
    Layout

    Raises
    ------
    ValueError
        A shape of more than 2 dimensions.

    Examples
    --------
    >>> import shadergpgpu as sg
    >>> layout = sg.layout_for((3, 10))                 # 3 rows of ceil(10 / 4) texels
    >>> layout.n_texels, layout.grid_w
    (9, 3)
    """
    shape = tuple(int(s) for s in shape)
    if len(shape) == 1:
        rows, cols = 1, shape[0]
    elif len(shape) == 2:
        rows, cols = shape
    else:
        raise ValueError(f"device arrays are 1-D or 2-D, got shape {shape}")
    if rows < 1 or cols < 1:
        raise ValueError(f"cannot place an empty array of shape {shape} on the device")
    return Layout(rows, cols, packed=packed, order=order, max_size=max_size)
