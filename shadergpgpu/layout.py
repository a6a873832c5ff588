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
never do this math themselves: :meth:`Layout.glsl_input` and :meth:`Layout.glsl_output` emit
the accessors (``NAME_texel(gi, gj)``, ``NAME_at(r, c)``, ``NAME_grid()`` ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import TooLargeError
from .limits import ceil_div as _ceil_div

DEFAULT_MAX_SIZE = 16384


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

    # ---- the texel grid -------------------------------------------------------------------
    @property
    def pack(self) -> int:
        """Elements per texel: 4 when packed, 1 when not."""
        return 4 if self.packed else 1

    @property
    def major(self) -> int:
        """Logical extent along grid rows (rows for row order, cols for column order)."""
        return self.rows if self.order == "row" else self.cols

    @property
    def minor(self) -> int:
        """Logical extent along a grid row (the packed axis)."""
        return self.cols if self.order == "row" else self.rows

    @property
    def grid_h(self) -> int:
        return self.major

    @property
    def grid_w(self) -> int:
        return _ceil_div(self.minor, self.pack)

    @property
    def n_texels(self) -> int:
        return self.grid_h * self.grid_w

    # ---- the texture ----------------------------------------------------------------------
    @property
    def wrapped(self) -> bool:
        return self.grid_w > self.max_size or self.grid_h > self.max_size

    @property
    def tex_w(self) -> int:
        return min(self.max_size, self.n_texels) if self.wrapped else self.grid_w

    @property
    def tex_h(self) -> int:
        return _ceil_div(self.n_texels, self.tex_w) if self.wrapped else self.grid_h

    @property
    def tex_size(self) -> tuple[int, int]:
        """(width, height) of the texture."""
        return (self.tex_w, self.tex_h)

    @property
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
    def _glsl_constants(self, name: str) -> str:
        return (f"const int {name}_ROWS = {self.rows};\n"
                f"const int {name}_COLS = {self.cols};\n"
                f"const int {name}_GRID_W = {self.grid_w};\n"
                f"const int {name}_GRID_H = {self.grid_h};\n"
                f"const int {name}_TEX_W = {self.tex_w};\n")

    def glsl_input(self, name: str) -> str:
        """Declarations and accessors for reading this layout through ``sampler2D name``.

        Emitted functions:
          ``ivec2 NAME_coord(int gi, int gj)``  texture coordinate of grid texel (gi, gj)
          ``vec4  NAME_texel(int gi, int gj)``  grid texel (gi, gj)
          ``float NAME_at(int r, int c)``       logical element (r, c)
          ``float NAME_get(int i)``             logical element i in row-major flat order
        """
        if self.wrapped:
            coord = (f"    int t = gi * {self.grid_w} + gj;\n"
                     f"    return ivec2(t % {self.tex_w}, t / {self.tex_w});\n")
        else:
            coord = "    return ivec2(gj, gi);\n"
        i, j = ("r", "c") if self.order == "row" else ("c", "r")
        if self.pack == 4:
            at = f"    return {name}_texel({i}, {j} >> 2)[{j} & 3];\n"
        else:
            at = f"    return {name}_texel({i}, {j}).r;\n"
        return (f"uniform sampler2D {name};\n" + self._glsl_constants(name) +
                f"ivec2 {name}_coord(int gi, int gj) {{\n{coord}}}\n"
                f"vec4 {name}_texel(int gi, int gj) {{\n"
                f"    return texelFetch({name}, {name}_coord(gi, gj), 0);\n}}\n"
                f"float {name}_at(int r, int c) {{\n{at}}}\n"
                f"float {name}_get(int i) {{\n"
                f"    return {name}_at(i / {self.cols}, i % {self.cols});\n}}\n"
                + self.glsl_linear(name))

    def glsl_linear(self, name: str) -> str:
        """Accessors for walking the texel grid as one run (reductions over every element).

        Emitted:
          ``const int NAME_N_TEXELS``            texels in the grid (wrap padding excluded)
          ``ivec2 NAME_grid_of(int t)``          grid (gi, gj) of the t-th texel, row by row
          ``ivec4 NAME_flat(int gi, int gj)``    row-major flat logical index of each of the
                                                 texel's 4 components; -1 for padding lanes
        """
        i, j = ("r", "c") if self.order == "row" else ("c", "r")
        lanes = "ivec4(0, 1, 2, 3)" if self.pack == 4 else "ivec4(0, 1 << 30, 1 << 30, 1 << 30)"
        return (f"const int {name}_N_TEXELS = {self.n_texels};\n"
                f"ivec2 {name}_grid_of(int t) {{\n"
                f"    return ivec2(t / {self.grid_w}, t % {self.grid_w});\n}}\n"
                f"ivec4 {name}_flat(int gi, int gj) {{\n"
                f"    ivec4 {j} = gj * {self.pack} + {lanes};\n"
                f"    ivec4 {i} = ivec4(gi);\n"
                f"    bvec4 ok = lessThan({j}, ivec4({self.minor}));\n"
                f"    ivec4 keep = ivec4(ok);\n"
                f"    return (r * {self.cols} + c) * keep + (keep - 1);\n}}\n")

    def glsl_output(self, name: str, location: int) -> str:
        """Declaration of output ``name`` at ``location`` and its position helpers.

        Emitted:
          ``out vec4 NAME``                      the texel this fragment writes
          ``ivec2 NAME_grid()``                  grid (gi, gj) of the texel being written
          ``bool  NAME_inside()``                false for wrap padding past the last texel
        """
        if self.wrapped:
            grid = (f"    int t = int(gl_FragCoord.y) * {self.tex_w} + int(gl_FragCoord.x);\n"
                    f"    return ivec2(t / {self.grid_w}, t % {self.grid_w});\n")
            inside = (f"    return int(gl_FragCoord.y) * {self.tex_w} + int(gl_FragCoord.x)"
                      f" < {self.n_texels};\n")
        else:
            grid = "    return ivec2(int(gl_FragCoord.y), int(gl_FragCoord.x));\n"
            inside = "    return true;\n"
        return (f"layout(location = {location}) out vec4 {name};\n" +
                self._glsl_constants(name) +
                f"ivec2 {name}_grid() {{\n{grid}}}\n"
                f"bool {name}_inside() {{\n{inside}}}\n")


@dataclass(frozen=True)
class BufferLayout:
    """A ``rows x cols`` float32 matrix packed row-major in a linear buffer of RGBA32F texels.

    Texel ``t = gi * grid_w + gj`` holds ``M[gi, 4*gj:4*gj+4]`` (the row's end zero-padded):
    the texel order of a packed row-major :class:`Layout`, wrapped or not, so a texture of
    :meth:`texture_layout` read back in memory order fills the buffer. Shaders read it through
    ``samplerBuffer NAME`` (a texture buffer object, see :mod:`shadergpgpu.glraw`).
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

    def glsl_input(self, name: str) -> str:
        """Declarations and accessors for reading this layout through ``samplerBuffer name``.

        Emitted functions:
          ``int   NAME_index(int gi, int gj)``  buffer texel index of grid texel (gi, gj)
          ``vec4  NAME_texel(int gi, int gj)``  grid texel (gi, gj): M[gi, 4gj .. 4gj+3]
          ``float NAME_at(int r, int c)``       logical element (r, c)
          ``float NAME_get(int i)``             logical element i in row-major flat order
        """
        return (f"uniform samplerBuffer {name};\n"
                f"const int {name}_ROWS = {self.rows};\n"
                f"const int {name}_COLS = {self.cols};\n"
                f"const int {name}_GRID_W = {self.grid_w};\n"
                f"const int {name}_GRID_H = {self.grid_h};\n"
                f"int {name}_index(int gi, int gj) {{\n"
                f"    return gi * {self.grid_w} + gj;\n}}\n"
                f"vec4 {name}_texel(int gi, int gj) {{\n"
                f"    return texelFetch({name}, {name}_index(gi, gj));\n}}\n"
                f"float {name}_at(int r, int c) {{\n"
                f"    return {name}_texel(r, c >> 2)[c & 3];\n}}\n"
                f"float {name}_get(int i) {{\n"
                f"    return {name}_at(i / {self.cols}, i % {self.cols});\n}}\n")


def layout_for(shape, packed: bool = True, order: str = "row",
               max_size: int = DEFAULT_MAX_SIZE) -> Layout:
    """Layout for a numpy shape: 1-D arrays of length n are stored as a 1 x n row."""
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
