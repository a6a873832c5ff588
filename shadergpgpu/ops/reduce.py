"""Reductions on the device: one engine for sum, dot, norm, arg-min / arg-max and user kernels.

Every reduction is a chain of render passes (:class:`Chain`). In each level one output texel
gathers ``fanin`` texels (or elements) of the level below, ``t = f + k * stride`` for output
``f``, so at every step neighbouring fragments read neighbouring texels; the last level writes
the result. A vector of ``n`` packed values (``ceil(n / 4)`` texels) takes
``max(1, ceil(log_fanin(ceil(n / 4))))`` passes; see :func:`passes` and the pass plans
``reduce/sum``, ``reduce/argbest``, ``reduce/kernel``, ``reduce/dot``, ``reduce/norm``.

* :class:`ReductionKernel` builds a reduction from expressions with CuPy's conventions::

      >>> import numpy as np, shadergpgpu as sg
      >>> from shadergpgpu.ops.reduce import ReductionKernel
      >>> l2 = ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = sqrt(a)",
      ...                      identity=0.0, name="l2norm")
      >>> l2(np.arange(4.0))                          # numpy in -> numpy out: sqrt(14)
      >>> l2(np.ones((3, 5)), axis=1)                 # per row: [2.236, 2.236, 2.236]

  Array parameters are read by element from textures of any layout; scalar parameters become
  uniforms. :data:`SUM`, :func:`dot` and :func:`norm` are instances of it, and
  :class:`SumReduction` (a prepared chain the algorithms reuse) runs :data:`SUM`'s kernels.
* Arg-min / arg-max (:class:`ArgReduction`) use the same chain with value and index textures
  (structure of arrays) and select-style code. Values are compared by their ordered bit
  patterns, never by float comparisons (which flush subnormals to zero on GPUs and llvmpipe):
  subnormals count, ``-0.0 == +0.0``, the first NaN wins, and ties go to the lower index, so
  the result equals :func:`numpy.argmin` / :func:`numpy.argmax` exactly; the value returned
  is the winner's stored bits. Indices travel as float32, exact up to
  2**24; longer inputs are refused. The first level may be a caller's kernel whose
  ``candidates()`` computes the values on the fly (SMO's working-set selection does this): build
  it with :func:`arg_kernels`.

Numerical contract (``u = 2**-24``, float32's unit roundoff; ``gamma(K) = K u / (1 - K u)``;
``F`` the fan-in; the bounds are against the exact sum of the float32 inputs):

* **Sums** (:func:`total`, :func:`sum`, :data:`SUM`, :class:`SumReduction`, and every
  ReductionKernel whose ``reduce_expr`` is ``a + b``). Each level adds, per lane, up to ``F``
  partial results one after the other onto the identity (``0 + x`` is exact, ``F - 1``
  roundings); the last whole-array level then folds the four lanes as ``(x + y) + (z + w)``
  (2 roundings). So a term meets at most ``K = L (F - 1) + 2`` roundings, ``L`` the passes
  (``len(level_sizes(T, F))`` over the ``T`` texels of the input's layout: ``ceil(n / 4)`` for
  a packed vector, ``n`` unpacked), and ``|s - sum(x)| <= gamma(K) * sum(|x|) + ftz``. Along
  an axis of length ``m`` (no lane fold): ``K = axis_passes(m, F) * (F - 1)``. Example:
  ``n = 300,000`` packed, ``F = 16``: ``L = 5``, ``K = 77``, ``gamma(K) = 4.6e-6``.
  :func:`rounding_depth` gives ``K``, :func:`error_bound` the bound.
* **dot** (``x * y`` mapped, one more rounding): ``K = L (F - 1) + 3`` (also when the driver
  fuses the multiply-add), bound ``gamma(K) * sum(|x y|) + ftz``.
* **norm**: ``s = sum(x * x)`` as ``dot``, then ``sqrt`` (GLSL allows it a few ulp):
  ``|r - ||x||| <= (gamma(K) / 2 + 10 u) ||x|| + sqrt(ftz)``.
* **ftz**, subnormals: GPUs and llvmpipe flush subnormal operands and results of float
  arithmetic to zero (sign kept or not). Each subnormal input read as 0 and each subnormal
  partial sum flushed loses less than ``2**-126``, so ``ftz = (1 + gamma(K)) * 2n * 2**-126``
  for a sum of ``n`` terms (for ``dot`` add ``2**-126 * sum(|x| + |y|)``: a subnormal factor
  loses its whole product). Example: the sum of ``[1e-45, 1e-40]`` is ``0.0`` (numpy:
  ``1.0e-40``); elements under ``2**-63 ~ 1.1e-19`` in magnitude have subnormal squares, which
  ``norm`` drops. Seen on llvmpipe and on an H100 (NVIDIA driver); on hardware that keeps
  subnormals the term is not needed, but it is the documented limit.
* **Overflow**: a partial sum beyond float32's range becomes ``+-inf`` and stays non-finite
  (``inf + -inf`` is NaN), so a finite result always satisfies the bound and an all-positive
  (all-negative) input whose sum exceeds ``3.4e38`` gives ``+inf`` (``-inf``), as numpy's
  float32 sum does. Where huge terms of both signs cancel, the device's tree and numpy's
  pairwise order may overflow at different points: NaN here where numpy gives inf, say.
  ``norm`` overflows to inf once ``sum(x * x)`` exceeds ``3.4e38`` (``||x|| > 1.8e19``; no
  rescaling), as numpy's float32 ``norm`` does. inf and NaN inputs propagate (IEEE).
* **Other ReductionKernels**: the expressions run in GLSL float32 arithmetic; ``min`` / ``max``
  select exactly among normal numbers but flush subnormals and are undefined for NaN in GLSL:
  use :func:`argmin` / :func:`argmax` (below) for an exact selection.
* **argmin / argmax**: exact, no bound (values ranked by their ordered bits; see
  :func:`argmin`).

Inputs: float64 arrays are converted to float32 (the device computes in float32); integer and
boolean arrays are accepted when every value is exactly representable (``|v| <= 2**24``);
complex, object and string arrays are refused.

    >>> from shadergpgpu.ops import reduce
    >>> dev = sg.Device()
    >>> x = dev.array(np.arange(10.0))
    >>> reduce.total(dev, x)                      # 45.0
    >>> reduce.argmax(dev, x)                     # (9.0, 9)
    >>> reduce.argmin(dev, x, mask=np.arange(10) > 3)   # (4.0, 4)
"""
from __future__ import annotations

import numbers
import re

import numpy as np

from ..engine.arrays import DeviceArray
from ..engine.errors import ShaderCompileError
from ..engine.kernels import In, Kernel, declare
from ..engine.layout import Layout
from ..engine.validation import device_values
from ..engine.limits import ceil_div
from ..engine.plans import PassPlan, register_plan

#: Indices are exact in float32 up to here (exclusive); longer arg-reductions are refused.
MAX_INDEX = 2 ** 24
#: First levels over row-order sources compare keys only (each lane meets its candidates in
#: increasing index order); False forces the full (key, index) comparison everywhere.
SCAN_STRICT = True
#: Texels gathered per fragment and pass. Chosen by measurement (benchmarks/svm.py, fan-in
#: sweep): on the H200 and on llvmpipe 16..32 are within a few percent of the best, and 16 keeps
#: the pass count low for the vector lengths the trainers use.
DEFAULT_FANIN = 16
MAX_FANIN = 4096
#: float32's unit roundoff (round to nearest): ``fl(a + b) = (a + b)(1 + d)``, ``|d| <= U``
U = 2.0 ** -24
#: the smallest normal float32; smaller (subnormal) operands and results of float arithmetic
#: are flushed to zero on GPUs and llvmpipe
TINY = 2.0 ** -126


def level_sizes(n_texels: int, fanin: int = DEFAULT_FANIN) -> list[tuple[int, int]]:
    """[(source texels, output texels)] per pass, until one texel is left."""
    if n_texels < 1:
        raise ValueError(f"n_texels must be positive, got {n_texels}")
    if fanin < 2:
        raise ValueError(f"fanin must be at least 2, got {fanin}")
    out, n = [], int(n_texels)
    while True:
        m = ceil_div(n, fanin)
        out.append((n, m))
        if m == 1:
            return out
        n = m


def passes(n: int, fanin: int = DEFAULT_FANIN, packed: bool = True) -> int:
    """Passes one whole-array reduction takes over a vector of ``n`` elements."""
    return len(level_sizes(ceil_div(int(n), 4 if packed else 1), fanin))


def axis_passes(length: int, fanin: int = DEFAULT_FANIN) -> int:
    """Passes of a reduction along an axis of ``length`` elements (``axis=0`` or ``1``)."""
    return len(level_sizes(int(length), fanin))


def rounding_depth(texels: int | None = None, fanin: int = DEFAULT_FANIN,
                   length: int | None = None, mapped: bool = False) -> int:
    """``K``: the most float32 roundings one term of an ``a + b`` reduction goes through.

    Whole array over ``texels`` texels of the input's layout: ``L (F - 1) + 2`` with
    ``L = len(level_sizes(texels, F))`` (each level adds up to ``F`` values per lane one after
    the other onto the identity, the last level folds the four lanes in two steps). Along an
    axis of ``length`` elements: ``axis_passes(length, F) * (F - 1)``. ``mapped``: the map
    rounds once more (``x * y`` of :data:`DOT` and :data:`NORM`): ``+ 1``.
    """
    fanin = _check_fanin(fanin)
    if (texels is None) == (length is None):
        raise ValueError("give texels (a whole-array reduction) or length (along an axis)")
    if length is not None:
        k = axis_passes(length, fanin) * (fanin - 1)
    else:
        k = len(level_sizes(int(texels), fanin)) * (fanin - 1) + 2
    return k + int(bool(mapped))


def gamma(k: int) -> float:
    """``k u / (1 - k u)``, ``u = 2**-24``: the relative error bound of ``k`` roundings."""
    return k * U / (1.0 - k * U)


def error_bound(abs_sum: float, n: int, k: int) -> float:
    """The bound ``gamma(k) * abs_sum + (1 + gamma(k)) * 2 n * 2**-126`` on ``|s - exact|`` for
    a float32 ``a + b`` reduction of ``n`` terms whose magnitudes add to ``abs_sum``, each
    through at most ``k`` roundings (:func:`rounding_depth`); the second term allows for
    subnormal inputs and partial sums flushed to zero."""
    g = gamma(k)
    return g * float(abs_sum) + (1.0 + g) * 2.0 * int(n) * TINY


def default_fanin(loop_cap: int | None = None) -> int:
    """:data:`DEFAULT_FANIN`, lowered to fit a loop cap (a level runs up to 5 loop iterations
    per texel gathered, plus 4): the fan-in calls and pass plans use when none is given."""
    if loop_cap is None:
        return DEFAULT_FANIN
    return max(2, min(DEFAULT_FANIN, (int(loop_cap) - 4) // 5))


def _kernel_phases(n, fanin=None, packed=True, axis=None, length=None, loop_cap=None):
    fanin = fanin or default_fanin(loop_cap)
    if axis is None:
        return {"reduce": passes(n, fanin, packed)}
    return {"reduce": axis_passes(length, fanin)}


_FORMULA = ("max(1, ceil(log_F(ceil(n / 4))))  (F = fan-in, packed vector of n values; "
            "default F = 16, lowered to (loop_cap - 4) // 5 under a smaller loop cap)")
for _name, _notes in (
        ("reduce/sum", "one gather pass per level; the last level also adds the four lanes"),
        ("reduce/argbest", "arg-min or arg-max, values and indices written by the same pass "
                           "(two targets); the mask is applied in the first level")):
    register_plan(PassPlan(
        name=_name, formula=_FORMULA,
        phases=lambda n, fanin=None, packed=True, loop_cap=None: {
            "reduce": passes(n, fanin or default_fanin(loop_cap), packed)},
        notes=_notes, params=("n", "fanin", "packed", "loop_cap")))
for _name, _notes in (
        ("reduce/kernel", "a ReductionKernel: the map is applied in the first level, the "
                          "post-map in the last"),
        ("reduce/dot", "dot(x, y): ReductionKernel x * y, a + b"),
        ("reduce/norm", "norm(x): ReductionKernel x * x, a + b, sqrt in the last level")):
    register_plan(PassPlan(
        name=_name,
        formula=_FORMULA + "; along an axis of length L: ceil(log_F(L)) (at least 1)",
        phases=_kernel_phases, notes=_notes,
        params=("n", "fanin", "packed", "axis", "length", "loop_cap")))


#: texels per texture row of the partial-result vectors (one-texel-high render targets shade
#: poorly on GPUs; see ``ops.rbf.VECTOR_WRAP``)
LEVEL_WRAP = 128


def _vector_layout(dev, texels: int) -> Layout:
    """A packed 1 x (4 * texels) vector, one RGBA texel per partial result, wrapped at
    :data:`LEVEL_WRAP` texels per texture row."""
    return Layout.wrapped_vector(4 * int(texels), LEVEL_WRAP, dev.max_texture_size)


def result_array(dev, slots: int = 1) -> DeviceArray:
    """A small packed vector of ``slots`` texels that reductions write their results into."""
    return dev.alloc(_vector_layout(dev, slots), (4 * int(slots),))


def _slot_rect(res: DeviceArray, slot: int, width: int = 1) -> tuple:
    x, y, _ = res.layout.texel_of(0, 4 * int(slot))
    x2, y2, _ = res.layout.texel_of(0, 4 * (int(slot) + width - 1))
    if y2 != y:
        raise ValueError("result slots of one reduction must lie in one texture row")
    return (x, y, width, 1)


def _check_fanin(fanin) -> int:
    if fanin is None:
        return DEFAULT_FANIN
    if not isinstance(fanin, (int, np.integer)) or isinstance(fanin, bool) or fanin < 2:
        raise ValueError(f"fanin must be an integer >= 2, got {fanin!r}")
    if fanin > MAX_FANIN:
        raise ValueError(f"fanin must be at most {MAX_FANIN}, got {fanin}")
    return int(fanin)


def fanin_for(dev, fanin=None) -> int:
    """The fan-in a call uses: ``fanin`` (checked), else :data:`DEFAULT_FANIN` lowered to fit
    the device's loop cap (a level runs up to 5 loop iterations per texel gathered, plus 4)."""
    if fanin is not None:
        return _check_fanin(fanin)
    return default_fanin(getattr(dev, "loop_cap", None))


def _dummy(dev) -> DeviceArray:
    """A 1-texel array bound where a kernel declares an input that this call does not read."""
    # kept by the device itself: a cached chain bound to an evictable resource would be left
    # pointing at a released array when the resource cache drops it
    return dev.placeholder()


class Placeholder:
    """Stands in for an input array until a chain is bound to one of this layout."""

    def __init__(self, layout):
        self.layout = layout
        self.released = False

    def bind(self, unit):
        raise ValueError("this reduction has no input bound yet; call bind(array) first")


_Placeholder = Placeholder


# ---- the chain ----------------------------------------------------------------------------------
class Chain:
    """Prepared passes of one reduction and the intermediate textures they own.

    ``levels(first, nxt, ...)`` builds the passes: the first level runs ``first`` over the
    caller's inputs, every further level runs ``nxt`` over the previous level's outputs; each
    is a dict ``{False: kernel, True: final kernel}`` (the final level writes the result).
    """

    def __init__(self, dev):
        self.device = dev
        self.passes = []
        self._owned: list[DeviceArray] = []

    def _build(self, levels, first, nxt, inputs, result, rect_of, uniforms, defines,
               out_names, next_inputs, out_layout):
        dev = self.device
        kern, ins = first, dict(inputs)
        try:
            for level, (n, m) in enumerate(levels):
                final = m == 1
                k = kern[final]
                if final:
                    outs = {k.outputs[0]: result}
                    rect, sl = rect_of()
                else:
                    lay = out_layout(m)
                    outs = {name: dev.alloc(lay) for name in out_names}
                    self._owned += list(outs.values())
                    rect, sl = None, 0
                u = dict(uniforms(level), stride=m, slot=sl, n_src=n)
                u = {key: v for key, v in u.items() if key in k.uniforms}
                d = {key: v for key, v in defines(level, final).items() if key in k.defines}
                extra = {key: a for key, a in ins.items() if key in k.inputs}
                self.passes.append(dev.prepare(k, outs, inputs=extra, uniforms=u, defines=d,
                                               rect=rect))
                if not final:
                    kern, ins = nxt, next_inputs(outs)
        except BaseException:
            self.release()
            raise

    def run(self) -> None:
        for p in self.passes:
            p.run()

    def refresh(self) -> None:
        """Re-resolve every pass's framebuffer. A chain kept between calls does this first:
        the device's framebuffer cache is bounded and may have released the ones it held."""
        for p in self.passes:
            p.bind()

    def release(self) -> None:
        for a in self._owned:
            a.release()
        self._owned.clear()
        self.passes = []

    @property
    def n_passes(self) -> int:
        return len(self.passes)


_Chain = Chain


# ---- ReductionKernel ----------------------------------------------------------------------------
_IN_TYPES = {"float32": "float", "float64": "float", "float": "float", "float16": "float",
             "int32": "float", "int64": "float", "int16": "float", "int8": "float",
             "uint8": "float", "uint16": "float", "uint32": "float", "int": "float",
             "bool": "float"}
_GLSL_NAMES = set("""
abs sign floor ceil trunc round roundEven fract mod modf min max clamp mix step smoothstep
sqrt inversesqrt pow exp exp2 log log2 sin cos tan asin acos atan sinh cosh tanh asinh acosh
atanh radians degrees isnan isinf fma float int uint bool floatBitsToInt floatBitsToUint
intBitsToFloat uintBitsToFloat true false vec2 vec3 vec4 ivec2 ivec3 ivec4 bvec2 bvec3 bvec4
length distance dot
""".split())
_GLSL_RESERVED = set("""
attribute const uniform varying layout centroid flat smooth noperspective break continue do for
while switch case default if else in out inout true false invariant discard return struct
void float int uint bool lowp mediump highp precision sampler2D samplerBuffer main a b
""".split()) | _GLSL_NAMES
_IDENT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)")
_NAME = re.compile(r"[A-Za-z_]\w*\Z")


def _parse_params(text, what: str) -> list[tuple[str, str]]:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string like 'float32 x, float32 y'")
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        toks = part.split()
        if len(toks) != 2:
            raise ValueError(f"{what}: expected 'type name' entries, got {part!r}")
        t, n = toks
        if t not in _IN_TYPES:
            raise ValueError(f"{what}: unknown type {t!r} in {part!r}; one of "
                             f"{', '.join(sorted(_IN_TYPES))}")
        if not _NAME.match(n) or n.startswith(("sg_", "gl_", "_")) or n in _GLSL_RESERVED \
                or "__" in n:
            raise ValueError(f"{what}: {n!r} cannot be a parameter name (a GLSL identifier "
                             "that is no keyword, no built-in function, not 'a' or 'b', not "
                             "starting with '_', 'sg_' or 'gl_')")
        out.append((t, n))
    if len({n for _, n in out}) != len(out):
        raise ValueError(f"{what}: a parameter name is used twice in {text!r}")
    return out


def _check_names(expr: str, what: str, allowed: set) -> None:
    if not isinstance(expr, str):
        raise TypeError(f"{what} must be a string, got {type(expr).__name__}")
    if any(c in expr for c in ";{}#\n") and what != "post_map_expr":
        raise ValueError(f"{what} {expr!r} must be one expression (no ';', braces, '#' or "
                         "newlines)")
    if "#" in expr or "{" in expr or "}" in expr:
        raise ValueError(f"{what} {expr!r} must not contain '#' or braces")
    unknown = sorted({m for m in _IDENT.findall(expr)} - allowed - _GLSL_NAMES)
    if unknown:
        raise ValueError(f"{what} {expr!r} uses unknown name(s) {unknown}; it may use "
                         f"{sorted(allowed)} and GLSL built-in functions")


_VEC_CHANGES_MEANING = re.compile(
    r"\b(length|distance|dot|float|int|uint|bool|any|all|[iub]?vec[234])\b|\.\s*[A-Za-z_]")


def _vec4_safe(expr: str) -> bool:
    """Whether applying ``expr`` to vec4 operands means the same, lane by lane (no functions
    that fold a vector, no constructors or conversions (``float(v)`` takes one lane), no
    swizzles); otherwise the lane loop runs."""
    return _VEC_CHANGES_MEANING.search(expr) is None


class _AlwaysScalar(dict):
    def get(self, key, default=None):
        return False

    def __setitem__(self, key, value):
        pass


def _float_literal(v: float) -> str:
    """A GLSL expression of exactly float32 ``v`` (infinities included)."""
    bits = int(np.array([v], np.float32).view(np.uint32)[0])
    return f"uintBitsToFloat(0x{bits:08X}u)"


def host_operand(x, name: str) -> np.ndarray:
    """A numpy operand as float32 under the library's conversion rule
    (:func:`shadergpgpu.engine.validation.device_values`)."""
    return device_values(x, name)


def _scalar(v, name: str) -> float:
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    if isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real):
        raise TypeError(f"{name}: complex scalars are not supported, got {v!r}")
    if not isinstance(v, numbers.Real):
        raise TypeError(f"{name}: expected an array or a real number, got "
                        f"{type(v).__name__}")
    if isinstance(v, numbers.Integral) and abs(int(v)) > 2 ** 24:
        raise ValueError(f"{name}: integer {v} is beyond 2**24 and not exact in float32")
    return float(v)


_INFINITIES = {"infinity": float("inf"), "inf": float("inf"), "huge_valf": float("inf"),
               "huge_val": float("inf"), "cudart_inf_f": float("inf")}


def _identity_text(kname: str, text: str) -> float:
    """A CuPy-style identity given as C source text (``"0"``, ``"-1.5f"``, ``"-INFINITY"``)."""
    t = text.strip()
    sign = -1.0 if t.startswith("-") else 1.0
    body = t.lstrip("+-").strip()
    if body.lower() in _INFINITIES:
        return sign * _INFINITIES[body.lower()]
    if body[-1:] in ("f", "F") and not body.lower().startswith("0x"):
        body = body[:-1]
    try:
        return sign * float(body)
    except ValueError:
        raise ValueError(f"{kname}: identity {text!r} is not a number (CuPy-style identities "
                         "are C literals such as '0', '1.0f' or '-INFINITY')") from None


class ReductionKernel:
    """A reduction from expressions, with CuPy's ``ReductionKernel`` conventions.

    Parameters
    ----------
    in_params : ``"float32 x, float32 y"``; at a call an array argument is read element by
        element (any layout; all arrays of one call have one shape), a scalar argument becomes a
        uniform. Types: float32, float64 (converted to float32), int*/uint*/bool (values must
        be exact in float32, ``|v| <= 2**24``); every value is a GLSL ``float``.
    out_params : ``"float32 z"`` (one float32 output).
    map_expr : GLSL expression of the in-params per element (``_i``: its row-major flat index).
    reduce_expr : GLSL expression of ``a`` and ``b`` (associative and commutative).
    post_map_expr : statement(s) setting the output from ``a`` (default ``"z = a"``).
    identity : the value of an empty reduction (``0`` for sums, ``-inf`` for a max ...).
    name : shown in errors and kernel names.

    Call: ``rk(x, y, ..., axis=None, device=None, fanin=None)``. ``axis=None`` reduces the whole
    array to one value; ``axis=0`` / ``axis=1`` reduce the columns / the rows of a matrix.
    numpy inputs give numpy results (a float32 scalar, or a 1-D array); any DeviceArray input
    gives a DeviceArray (shape ``(1,)`` or ``(n,)``).

    Numbers: everything is GLSL float32 arithmetic (subnormal operands and results flushed to
    zero on GPUs and llvmpipe). The reduction order: per lane, each level combines up to
    ``fanin`` partial results one after the other onto the identity; a whole-array reduction's
    last level combines the four lanes as ``(x . y) . (z . w)``. For ``reduce_expr = "a + b"``
    each mapped term meets at most ``K = L (F - 1) + 2`` roundings (``L`` passes; along an axis
    ``axis_passes(m, F) (F - 1)``), so ``|s - sum(m)| <= gamma(K) * sum(|m|) +
    (1 + gamma(K)) * 2n * 2**-126`` over the mapped values ``m`` as computed (a map that rounds,
    like ``x * y``, adds one to ``K`` relative to the exact map); see :func:`rounding_depth`,
    :func:`error_bound` and the module's numerical contract. ``min`` / ``max`` reductions
    select exactly among normal numbers, but flush subnormals and are undefined for NaN in
    GLSL; :func:`argmin` / :func:`argmax` select exactly.
    """

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr="",
                 identity=None, name=None, *, _library: bool = False):
        self.name = str(name) if name is not None else "reduction_kernel"
        self.in_params = _parse_params(in_params, "in_params")
        if not self.in_params:
            raise ValueError("in_params: a reduction needs at least one input parameter")
        outs = _parse_params(out_params, "out_params")
        if len(outs) != 1 or outs[0][0] not in ("float32", "float"):
            raise ValueError(f"out_params must declare one float32 output, got {out_params!r}")
        self.out_name = outs[0][1]
        if self.out_name in {n for _, n in self.in_params}:
            raise ValueError(f"out_params: {self.out_name!r} is also an input parameter")
        if identity is None:
            raise ValueError(f"{self.name}: identity is required (the value of an empty "
                             "reduction: 0 for a sum, -inf for a max ...)")
        if isinstance(identity, str):   # CuPy passes the identity as C source text: "0"
            identity = _identity_text(self.name, identity)
        self.identity = _scalar(identity, "identity") if not isinstance(identity, float) \
            else float(identity)
        names = {n for _, n in self.in_params}
        _check_names(map_expr, "map_expr", names | {"_i"})
        _check_names(reduce_expr, "reduce_expr", names | {"a", "b"})
        post = post_map_expr.strip() if isinstance(post_map_expr, str) else post_map_expr
        if post == "":
            post = f"{self.out_name} = a"
        _check_names(post, "post_map_expr", names | {"a", self.out_name})
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post
        self._make = declare if _library else Kernel
        self._kernels: dict = {}
        # whether the expressions compile on vec4 (four lanes at once): known for the
        # library's kernels, found out by a first compile for a user's (key -> bool)
        self._vec4_default = bool(_library)
        self._vec4: dict = {}
        if not (_vec4_safe(map_expr) and _vec4_safe(reduce_expr)):
            self._vec4 = _AlwaysScalar()
        if _library:
            # the library's variants are declared at import (one array, whole array or axis)
            arrays = tuple(n for _, n in self.in_params)
            for packed in (True, False):
                self.kernels(arrays, (packed,) + (True,) * (len(arrays) - 1))
            for axis in (0, 1):
                self.kernels(arrays, axis)

    def __repr__(self):
        return (f"ReductionKernel({self.name!r}, map={self.map_expr!r}, "
                f"reduce={self.reduce_expr!r}, post={self.post_map_expr!r})")

    # ---- GLSL --------------------------------------------------------------------------------
    def _common(self, scalars) -> str:
        # VEC4: the whole-array levels also apply the expressions to four lanes at once (vec4
        # overloads); kernels whose expressions do not compile so fall back to lane by lane
        return (f"float sg_reduce(float a, float b) {{ return float({self.reduce_expr}); }}\n"
                f"#if VEC4\nvec4 sg_reduce4(vec4 a, vec4 b) {{ return vec4({self.reduce_expr}); "
                f"}}\n#endif\n"
                f"float sg_identity() {{ return {_float_literal(self.identity)}; }}\n"
                f"float sg_post(float a) {{\n    float {self.out_name} = 0.0;\n"
                f"    {self.post_map_expr};\n    return {self.out_name};\n}}\n")

    def _map_fn(self, arrays, vec4: bool = False) -> str:
        args = ", ".join(f"float {n}" for n in arrays)
        text = (f"float sg_map({args}{', ' if args else ''}int _i) "
                f"{{ return float({self.map_expr}); }}\n")
        if vec4:
            args = ", ".join(f"vec4 {n}" for n in arrays)
            text += (f"#if VEC4\nvec4 sg_map4({args}, ivec4 _i) {{ return vec4({self.map_expr}); "
                     f"}}\n#endif\n")
        return text

    def _flat_first(self, arrays, same) -> str:
        x = arrays[0]
        reads = [f"            vec4 v_{x} = {x}_texel(q.x, q.y);"]
        for n, s in zip(arrays[1:], same[1:]):
            if s:
                reads.append(f"            vec4 v_{n} = {n}_texel(q.x, q.y);")
            else:
                reads.append(f"            vec4 v_{n} = vec4({n}_get(g.x), {n}_get(g.y), "
                             f"{n}_get(g.z), {n}_get(g.w));")
        call = ", ".join([f"v_{n}[l]" for n in arrays] + ["fl[l]"])
        call4 = ", ".join([f"v_{n}" for n in arrays] + ["fl"])
        return (self._map_fn(arrays, True) + f"""
void main() {{
#if FINAL
    int f = OUT_grid().y - slot;
#else
    int f = OUT_grid().y;
#endif
    vec4 acc = vec4(sg_identity());
    for (int k = 0; k < FANIN; ++k) {{
        int t = f + k * stride;
        if (t < n_src) {{
            ivec2 q = {x}_grid_of(t);
            ivec4 fl = {x}_flat(q.x, q.y);
            ivec4 g = max(fl, ivec4(0));
{chr(10).join(reads)}
#if VEC4
            acc = sg_reduce4(acc, mix(vec4(sg_identity()), sg_map4({call4}),
                                      greaterThanEqual(fl, ivec4(0))));
#else
            for (int l = 0; l < 4; ++l) {{
                if (fl[l] >= 0) acc[l] = sg_reduce(acc[l], sg_map({call}));
            }}
#endif
        }}
    }}
#if FINAL
    OUT = vec4(sg_post(sg_reduce(sg_reduce(acc.x, acc.y), sg_reduce(acc.z, acc.w))),
               0.0, 0.0, 0.0);
#else
    OUT = acc;
#endif
}}
""")

    _FLAT_NEXT = """
void main() {
#if FINAL
    int f = OUT_grid().y - slot;
#else
    int f = OUT_grid().y;
#endif
    vec4 acc = vec4(sg_identity());
    for (int k = 0; k < FANIN; ++k) {
        int t = f + k * stride;
        if (t < n_src) {
            ivec2 q = V_grid_of(t);
            vec4 v = V_texel(q.x, q.y);
#if VEC4
            acc = sg_reduce4(acc, v);
#else
            for (int l = 0; l < 4; ++l) acc[l] = sg_reduce(acc[l], v[l]);
#endif
        }
    }
#if FINAL
    OUT = vec4(sg_post(sg_reduce(sg_reduce(acc.x, acc.y), sg_reduce(acc.z, acc.w))),
               0.0, 0.0, 0.0);
#else
    OUT = acc;
#endif
}
"""

    @staticmethod
    def _axis_main(term: str) -> str:
        return f"""
void main() {{
    vec4 res = vec4(0.0);
    for (int l = 0; l < 4; ++l) {{
        if (!OUT_live(l)) continue;
        ivec2 p = OUT_pos(l);
#if FINAL
        int o = p.y;
        int f = 0;
#else
        int o = p.x;
        int f = p.y;
#endif
        float acc = sg_identity();
        for (int k = 0; k < FANIN; ++k) {{
            int j = f + k * stride;
            if (j < n_src) {{
#if AXIS == 1
                int r = o;
                int c = j;
#else
                int r = j;
                int c = o;
#endif
                acc = sg_reduce(acc, {term});
            }}
        }}
#if FINAL
        res[l] = sg_post(acc);
#else
        res[l] = acc;
#endif
    }}
    OUT = res;
}}
"""

    def kernels(self, arrays: tuple, mode) -> tuple[Kernel, Kernel]:
        """(first-level kernel, next-level kernel) for the array params ``arrays`` (the others
        are uniforms). ``mode``: a tuple of same-layout flags (whole array; ``mode[0]``: the
        first array is packed) or an axis 0/1."""
        key = (tuple(arrays), mode)
        ks = self._kernels.get(key)
        if ks is not None:
            return ks
        scalars = [n for _, n in self.in_params if n not in arrays]
        uni = {n: "float" for n in scalars}
        uni.update(stride="int", slot="int", n_src="int")
        common = self._common(scalars)
        tag = "flat" if isinstance(mode, tuple) else f"axis{mode}"
        label = f"{self.name}[{','.join(arrays)}|{tag}{'' if tag != 'flat' else mode}]"
        loop = lambda a: 5 * a.defines["FANIN"] + 4  # noqa: E731
        hint = "use a smaller fanin"
        if isinstance(mode, tuple):
            fdefs = {"FANIN": DEFAULT_FANIN, "FINAL": 0, "VEC4": int(self._vec4_default)}
            packed = mode[0]
            ins = {arrays[0]: In(packed=packed)}
            for n, s in zip(arrays[1:], mode[1:]):
                ins[n] = In(like=arrays[0]) if s else In()
            first = self._make(source=common + self._flat_first(arrays, mode), inputs=ins,
                               uniforms=uni, defines=dict(fdefs), loop=loop, hint=hint,
                               name=label + "/first")
            nxt = self._make(source=common + self._FLAT_NEXT,
                             inputs={"V": In(packed=True, order="row")}, uniforms=uni,
                             defines=dict(fdefs), loop=loop,
                             hint=hint, name=label + "/next")
        else:
            x = arrays[0]
            term = "sg_map(" + ", ".join([f"{n}_at(r, c)" for n in arrays] +
                                         [f"r * {x}_COLS + c"]) + ")"
            defs = {"FANIN": DEFAULT_FANIN, "FINAL": 0, "AXIS": int(mode), "VEC4": 0}
            first = self._make(source=common + self._map_fn(arrays) + self._axis_main(term),
                               inputs=tuple(arrays), uniforms=uni, defines=defs, loop=loop,
                               hint=hint, name=label + "/first")
            nxt = self._make(source=common + self._axis_main("V_at(o, j)"), inputs=("V",),
                             uniforms=uni, defines=dict(defs, AXIS=1), loop=loop,
                             hint=hint, name=label + "/next")
        self._kernels[key] = (first, nxt)
        return first, nxt

    # ---- calls ---------------------------------------------------------------------------------
    def __call__(self, *args, axis=None, device=None, fanin=None):
        from ..engine.validation import pick_device
        if len(args) != len(self.in_params):
            raise TypeError(f"{self.name} takes {len(self.in_params)} argument(s) "
                            f"({', '.join(n for _, n in self.in_params)}), got {len(args)}")
        dev = pick_device(device, args)
        host = not any(isinstance(a, DeviceArray) for a in args)
        out = self.run_device(dev, args, axis=axis, fanin=fanin)
        if not host:
            return out
        try:
            r = out.get()
        finally:
            out.release()
        nd = next((np.ndim(a) for a in args if np.ndim(a) > 0), 1)
        return np.float32(r[0]) if axis is None or nd == 1 else r

    def run_device(self, dev, args, axis=None, fanin=None, names=None) -> DeviceArray:
        """Run on ``dev``; returns a new DeviceArray ((1,) for ``axis=None``, else (n,))."""
        fanin = fanin_for(dev, fanin)
        names = names or [n for _, n in self.in_params]
        arrays, scalars, shape, ref = {}, {}, None, None
        for (_, p), a, shown in zip(self.in_params, args, names):
            if isinstance(a, DeviceArray):
                if a.released:
                    raise ValueError(f"{shown} has been released")
                if a.device is not dev:
                    raise ValueError(f"{shown} lives on another device")
                if a.ndim not in (1, 2):
                    raise ValueError(f"{shown}: images (H, W, C) are not supported; reduce a "
                                     "1-D or 2-D array")
                arrays[p] = a
                ref = ref or a
            elif isinstance(a, (np.ndarray, list, tuple)) or hasattr(a, "__array__"):
                arrays[p] = host_operand(a, shown)
            else:
                scalars[p] = _scalar(a, shown)
            if p in arrays:
                s = tuple(arrays[p].shape)
                if shape is None:
                    shape, first_name = s, shown
                elif s != shape:
                    raise ValueError(f"{shown} has shape {s}, {first_name} has shape {shape}: "
                                     "the arrays of one reduction must have the same shape")
        if not arrays:
            raise ValueError(f"{self.name}: at least one argument must be an array")
        if axis is not None:
            if isinstance(axis, bool) or axis not in (0, 1, -1, -2):
                raise ValueError(f"axis must be None, 0 or 1, got {axis!r}")
            axis = int(axis) % 2
            if len(shape) != 2:
                if axis == 0:
                    axis = None
                else:
                    raise ValueError(f"axis=1 needs a 2-D array, got shape {shape}")
        uploaded = []
        try:
            for p, a in list(arrays.items()):
                if not isinstance(a, DeviceArray):
                    lay = ref.layout if ref is not None else None
                    arrays[p] = dev.array(a, packed=lay.packed if lay else True,
                                          order=lay.order if lay else "row", name=p)
                    uploaded.append(arrays[p])
                    ref = ref or arrays[p]
            order = [n for _, n in self.in_params if n in arrays]
            first_lay = arrays[order[0]].layout
            if axis is None:
                mode = (first_lay.packed,) + tuple(arrays[n].layout == first_lay
                                                  for n in order[1:])
                rows = cols = None
            else:
                mode = axis
                rows, cols = first_lay.rows, first_lay.cols
            lays = tuple(arrays[n].layout for n in order)
            key = ("sg.reduce", self, tuple(order), mode, lays, fanin)
            chain = dev.resource(key, lambda: _Plain(self, dev, order, mode, lays, fanin))
            if axis is None:
                out = dev.alloc(Layout(1, 1, True, "row", dev.max_texture_size), (1,))
            else:
                n_out = rows if axis == 1 else cols
                out = dev.alloc(Layout(1, n_out, True, "row", dev.max_texture_size), (n_out,))
            try:
                chain.run(arrays, scalars, out)
            except BaseException:
                out.release()
                raise
            return out
        finally:
            for a in uploaded:
                a.release()

    def passes(self, shape, axis=None, fanin=None, packed=True) -> int:
        """Passes one call over arrays of ``shape`` draws."""
        fanin = _check_fanin(fanin)
        shape = tuple(shape)
        if axis is None or len(shape) == 1:
            return passes(int(np.prod(shape)), fanin, packed) if packed else \
                len(level_sizes(int(np.prod(shape)), fanin))
        return axis_passes(shape[int(axis) % 2], fanin)


def _compile_error(rk, e):
    return ShaderCompileError(
        f"{rk.name}: GLSL rejected the reduction's expressions (map_expr {rk.map_expr!r}, "
        f"reduce_expr {rk.reduce_expr!r}, post_map_expr {rk.post_map_expr!r}):\n{e}")


class _Plain:
    """A cached chain of one ReductionKernel variant; inputs and result bound per call."""

    def __init__(self, rk, dev, order, mode, lays, fanin):
        self.rk, self.order = rk, order
        first, nxt = rk.kernels(tuple(order), mode)
        self.idle = {n: Placeholder(lay) for n, lay in zip(order, lays)}
        lay0 = lays[0]
        if isinstance(mode, tuple):
            self.scratch = dev.alloc(Layout(1, 1, True, "row", dev.max_texture_size), (1,))
            vkey = (tuple(order), mode)
            known = rk._vec4.get(vkey)
            for vec4 in ((True, False) if known is None else (known,)):
                try:
                    self.chain = FlatChain(dev, first, nxt, self.idle, lay0.n_texels,
                                           self.scratch, 0, fanin, rk, vec4)
                except ShaderCompileError:
                    if vec4 and known is None:
                        continue        # the expressions need the lane-by-lane form
                    self.scratch.release()
                    raise
                rk._vec4[vkey] = vec4
                break
        else:
            n_out = lay0.rows if mode == 1 else lay0.cols
            length = lay0.cols if mode == 1 else lay0.rows
            self.scratch = dev.alloc(Layout(1, n_out, True, "row", dev.max_texture_size))
            self.chain = AxisChain(dev, first, nxt, self.idle, n_out, length, self.scratch,
                                   fanin, rk)

    def run(self, arrays, scalars, out):
        ch = self.chain
        ps = ch.passes
        try:
            ch.refresh()
            ps[-1].bind(OUT=out)
            ps[0].bind(**{n: arrays[n] for n in self.order})
            scal = {k: v for k, v in scalars.items()}
            for p in ps:
                u = {k: v for k, v in scal.items() if k in p.kernel.uniforms}
                if u:
                    p.set(**u)
            ch.run()
        finally:  # keep no caller's array bound while cached
            ps[0].bind(**self.idle)
            ps[-1].bind(OUT=self.scratch)

    def release(self):
        self.chain.release()
        self.scratch.release()


def _prepare_guard(rk, build):
    try:
        return build()
    except ShaderCompileError as e:
        raise _compile_error(rk, e) from None


class FlatChain(Chain):
    """A whole-array reduction (first, next kernels of a ReductionKernel) into ``result``'s
    texel ``slot`` (component x)."""

    def __init__(self, dev, first, nxt, inputs, n_texels, result, slot, fanin, rk,
                 vec4: bool = True):
        super().__init__(dev)
        self.result, self.slot, self.fanin = result, int(slot), fanin

        def build():
            # the final level also folds the four lanes and applies the post-map (FINAL)
            self._build(level_sizes(n_texels, fanin), {False: first, True: first},
                        {False: nxt, True: nxt}, inputs, result,
                        lambda: (_slot_rect(result, slot), int(slot)),
                        lambda level: {},
                        lambda level, final: {"FANIN": fanin, "FINAL": int(final),
                                              "VEC4": int(vec4)},
                        ("OUT",), lambda outs: {"V": outs["OUT"]},
                        lambda m: _vector_layout(dev, m))
        _prepare_guard(rk, build)


class AxisChain(Chain):
    """A reduction along one axis: ``n_out`` results, each over ``length`` elements."""

    def __init__(self, dev, first, nxt, inputs, n_out, length, result, fanin, rk):
        super().__init__(dev)
        self.result, self.fanin = result, fanin
        mx = dev.max_texture_size

        def build():
            self._build(level_sizes(length, fanin), {False: first, True: first},
                        {False: nxt, True: nxt}, inputs, result, lambda: (None, 0),
                        lambda level: {},
                        lambda level, final: {"FANIN": fanin, "FINAL": int(final)},
                        ("OUT",), lambda outs: {"V": outs["OUT"]},
                        lambda m: Layout(n_out, m, True, "row", mx))
        _prepare_guard(rk, build)


# ---- sums ---------------------------------------------------------------------------------------
#: sum of all elements (the reduction :func:`total` and :class:`SumReduction` run)
SUM = ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", identity=0.0,
                      name="reduce/sum", _library=True)
#: dot product and Euclidean norm
DOT = ReductionKernel("float32 x, float32 y", "float32 z", "x * y", "a + b", "z = a",
                      identity=0.0, name="reduce/dot", _library=True)
NORM = ReductionKernel("float32 x", "float32 z", "x * x", "a + b", "z = sqrt(a)",
                       identity=0.0, name="reduce/norm", _library=True)

class SumReduction(FlatChain):
    """Sum of every logical element of arrays of one layout, into ``result`` texel ``slot``.

    ``run()`` issues the passes; ``bind(arr)`` points the chain at another array of the same
    layout. The sum is in ``result``'s texel ``slot``, component x. The passes are
    :data:`SUM`'s kernels (the ReductionKernel engine), with :func:`total_device`'s error bound.
    """

    def __init__(self, dev, layout: Layout, result: DeviceArray | None = None, slot: int = 0,
                 fanin: int | None = None, source: DeviceArray | None = None):
        fanin = fanin_for(dev, fanin)
        own = None
        if result is None:
            own = result = dev.alloc(Layout(1, 1, True, "row", dev.max_texture_size), (1,))
        self.layout = layout
        first, nxt = SUM.kernels(("x",), (layout.packed,))
        src = source if source is not None else Placeholder(layout)
        super().__init__(dev, first, nxt, {"x": src}, layout.n_texels, result, slot, fanin,
                         rk=SUM)
        if own is not None:
            self._owned.append(own)

    def bind(self, arr: DeviceArray) -> "SumReduction":
        self.passes[0].bind(x=arr)
        return self


def _as_device(dev, arr, name: str, check_nan: bool):
    """(DeviceArray, uploaded_here) for a numpy or device input."""
    if isinstance(arr, DeviceArray):
        if arr.released:
            raise ValueError(f"{name} has been released")
        if arr.device is not dev:
            raise ValueError(f"{name} lives on another device")
        if arr.ndim == 3:
            raise ValueError(f"{name}: images (H, W, C) are not supported; reduce a 1-D or "
                             "2-D array")
        return arr, False
    a = host_operand(arr, name)
    if check_nan and np.isnan(a).any():
        raise ValueError(f"{name} contains NaN")
    return dev.array(a, name=name), True


def total_device(dev, arr, fanin: int | None = None) -> DeviceArray:
    """Sum of all logical elements of ``arr`` (padding excluded) as a (1,) DeviceArray.

    ``arr`` is a DeviceArray of any layout (packed or not, row or column order, wrapped) or a
    1-D / 2-D numpy array (uploaded packed). The caller owns (and may release) the result.

    Error: ``|s - sum(x)| <= gamma(K) * sum(|x|) + (1 + gamma(K)) * 2n * 2**-126`` with
    ``K = L (F - 1) + 2``, ``L`` the passes over the layout's texels (:func:`rounding_depth`,
    :func:`error_bound`; ``n = 300,000`` packed at ``F = 16``: ``K = 77``); the second term is
    subnormals flushed to zero. A partial sum beyond float32's range makes the result +-inf
    (NaN where infinities of both signs meet); a finite result always meets the bound. See the
    module's numerical contract.
    """
    if not isinstance(arr, DeviceArray):
        arr = host_operand(arr, "arr")
    return SUM.run_device(dev, (arr,), fanin=fanin, names=("arr",))


def total(dev, arr, fanin: int | None = None) -> float:
    """Sum of all logical elements of ``arr`` as a Python float (one 1-texel readback); error
    bound and overflow: :func:`total_device`."""
    out = total_device(dev, arr, fanin)
    try:
        return float(out.get()[0])
    finally:
        out.release()


def sum(x, axis=None, device=None, fanin=None):  # noqa: A001 (numpy's name)
    """``x.sum(axis)`` on the device (numpy in -> numpy out, device in -> device out).

    Error: ``gamma(K) * sum(|x|) + (1 + gamma(K)) * 2n * 2**-126`` per result (``n`` its terms),
    ``K = L (F - 1) + 2`` for ``axis=None`` (``L`` passes over the texels) and
    ``K = axis_passes(m, F) * (F - 1)`` along an axis of length ``m``; overflow gives +-inf (or
    NaN), never a finite result outside the bound. See the module's numerical contract.
    """
    return SUM(x, axis=axis, device=device, fanin=fanin)


def dot(x, y, device=None, fanin=None):
    """Dot product of two arrays of one shape (flattened), float32 on the device.

    Error: ``|d - sum(x y)| <= gamma(K) * sum(|x y|) + (1 + gamma(K)) * 2n * 2**-126
    + 2**-126 * sum(|x| + |y|)`` with ``K = L (F - 1) + 3`` (one rounding more than a sum, for
    the product; a fused multiply-add only removes roundings); the last two terms are
    subnormal products and factors flushed to zero. Overflowing products or partial sums give
    +-inf (or NaN). See the module's numerical contract.
    """
    return DOT(x, y, device=device, fanin=fanin)


def norm(x, axis=None, device=None, fanin=None):
    """Euclidean (Frobenius) norm of ``x`` (or of its columns / rows with ``axis=0 / 1``).

    Error: ``|r - ||x||| <= (gamma(K) / 2 + 10 u) ||x|| + sqrt((1 + gamma(K)) * 2n) * 2**-63``,
    ``K`` as for :func:`dot` (``L (F - 1) + 3``; along an axis ``axis_passes(m, F) (F - 1) + 1``),
    ``10 u`` for GLSL's ``sqrt``. Not rescaled: squares below ``2**-126`` are flushed (elements
    under ``1.1e-19`` count as 0) and ``sum(x * x)`` beyond ``3.4e38`` (``||x|| > 1.8e19``)
    gives inf, as numpy's float32 ``norm`` overflows too.
    """
    return NORM(x, axis=axis, device=device, fanin=fanin)


# ---- arg-min / arg-max ---------------------------------------------------------------------------
_ARG_UNIFORMS = {"stride": "int", "slot": "int", "n_src": "int"}
_ARG_DEFINES = {"FANIN": DEFAULT_FANIN, "MODE_MAX": 0, "SCAN_STRICT": 0, "PAYLOAD": 0,
                "MASKED": 0, "FETCH_BATCH": 0}
#: texels an arg level fetches before comparing them (0: 4 where the fan-in allows, else 1)
ARG_FETCH_BATCH = 0


def arg_kernels(file: str, inputs: dict, uniforms: dict | None = None, name: str = None,
                dual: bool = False, defines: dict | None = None, root=None,
                loop=None) -> dict:
    """The kernels of one arg-reduction level: ``{False: kernel writing VAL, IDX (DUAL: and
    VAL2, IDX2), True: final kernel writing RES}``, declared from ``file`` (which defines
    ``SRC_TEX_W`` and ``candidates(t, p, v, idx)`` and includes
    ``ops/reduce/argbest_core.glsl``: a level walks its source texels ``t`` with their texture
    coordinates ``p`` stepped along without divisions; with ``TEXEL_INDEX`` the indices are
    texel numbers turned into flat indices once per output texel). Every one also takes the
    payload input ``P0`` (read by element; bound to a dummy array without a payload).
    ``loop``: the loop iterations of one fragment (default ``FANIN``), for a ``candidates()``
    that loops itself. Candidates are ranked by ``arg_keys()`` (ordered bits), see
    :class:`ArgReduction`."""
    ins = dict(inputs)
    ins["P0"] = In()
    uni = dict(_ARG_UNIFORMS, **(uniforms or {}))
    base = dict(_ARG_DEFINES, **(defines or {}), DUAL=int(dual))
    outs = ("VAL", "IDX", "VAL2", "IDX2") if dual else ("VAL", "IDX")
    name = name or file
    loop = loop or (lambda a: a.defines["FANIN"])  # noqa: E731
    hint = "use a smaller fanin"
    return {False: declare(file, inputs=ins, outputs=outs, uniforms=uni,
                           defines=dict(base, FINAL=0), loop=loop, name=name, root=root,
                           hint=hint),
            True: declare(file, inputs=ins, outputs=("RES",), uniforms=uni,
                          defines=dict(base, FINAL=1), loop=loop, name=name + "/final",
                          root=root, hint=hint)}


ARG_NEXT = arg_kernels("ops/reduce/argbest.frag",
                       {"V": In(packed=True, order="row"), "I": In(like="V")},
                       name="reduce/argbest")
ARG_NEXT_DUAL = arg_kernels("ops/reduce/argbest.frag",
                            {"V": In(packed=True, order="row"), "I": In(like="V"),
                             "V2": In(like="V"), "I2": In(like="V")},
                            name="reduce/argbest_dual", dual=True)
ARG_FIRST = {(packed, masked): arg_kernels(
    "ops/reduce/argbest_first.frag",
    dict({"V": In(packed=packed)}, **({"M": In()} if masked else {})),
    defines={"MASKED": int(masked), "FAST": 0},
    name=f"reduce/argbest_first_{'packed' if packed else 'unpacked'}"
         f"{'_masked' if masked else ''}")
    for packed in (True, False) for masked in (False, True)}


def _all_live(layout) -> bool:
    """Whether a first arg level over ``layout`` may take its fast path: packed, row order, and
    no padding lanes before the last texel (one grid row, or rows a multiple of 4 long)."""
    return (isinstance(layout, Layout) and layout.packed and layout.order == "row" and
            (layout.grid_h == 1 or layout.minor % 4 == 0))


class ArgReduction(Chain):
    """Arg-min or arg-max as a chain of prepared passes.

    Exact: the candidate values ``candidates()`` produces are ranked by their ordered bits
    (``arg_keys`` in ``argbest_defs.glsl``: subnormals unflushed, ``-0.0 == +0.0``, the first
    NaN beats everything), ties by index, and the winner's value is carried as its bits, so
    the result is numpy's argmin / argmax of those candidate values (values a caller's
    ``candidates()`` computes are rounded, and flushed, by its own arithmetic).

    Parameters
    ----------
    mode : "min" or "max".
    first : the first level's kernels, from :func:`arg_kernels` (the shader defines
        ``candidates()`` and includes ``ops/reduce/argbest_core.glsl``).
    first_inputs : its inputs (``P0`` is added).
    n_src : texels the first level walks (``t`` in ``candidates(t, ...)``).
    result, slot : the winner is written as (value, index, payload, 0) into ``result``'s
        texel ``slot``; index is ``MAX_INDEX`` (as float) when nothing was eligible.
    payload : optional array; the final pass stores ``payload[index]`` (flat) in component z.
    first_uniforms, first_defines : the first kernel's own uniforms and define overrides.
    strict_scan : the first level's candidate indices grow with ``t`` in every lane (true
        for row-order sources), so it may compare values only (see ``SCAN_STRICT``).
    dual : ``first`` is a DUAL family: a second reduction (``candidates2()``) runs in the same
        passes (two more render targets); its winner goes to texel ``slot + 1``.
    """

    def __init__(self, dev, mode: str, first: dict, first_inputs: dict, n_src: int,
                 result: DeviceArray, slot: int = 0, payload: DeviceArray | None = None,
                 first_uniforms: dict | None = None, first_defines: dict | None = None,
                 fanin: int | None = None, dual: bool = False, strict_scan: bool = False):
        super().__init__(dev)
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        if not (isinstance(first, dict) and set(first) == {False, True}):
            raise TypeError("first must be the kernels of an arg-reduction level, from "
                            "arg_kernels(...)")
        fanin = fanin_for(dev, fanin)
        self.result, self.slot, self.fanin, self.mode = result, int(slot), fanin, mode
        p0 = payload if payload is not None else _dummy(dev)
        ins = dict(first_inputs, P0=p0)
        fu = dict(first_uniforms or {})
        fd = dict(first_defines or {})
        if "FAST" in first[False].defines and "FAST" not in fd:
            fd["FAST"] = int(_all_live(getattr(first_inputs.get("V"), "layout", None)))
        nxt = ARG_NEXT_DUAL if dual else ARG_NEXT

        def defines(level, final):
            d = dict(fd) if level == 0 else {}
            d.update(FANIN=fanin, MODE_MAX=int(mode == "max"), FETCH_BATCH=ARG_FETCH_BATCH,
                     SCAN_STRICT=int(bool(strict_scan and level == 0 and SCAN_STRICT)),
                     PAYLOAD=int(payload is not None))
            return d

        def next_inputs(outs):
            d = {"V": outs["VAL"], "I": outs["IDX"], "P0": p0}
            if dual:
                d.update(V2=outs["VAL2"], I2=outs["IDX2"])
            return d

        names = ("VAL", "IDX", "VAL2", "IDX2") if dual else ("VAL", "IDX")
        self._build(level_sizes(int(n_src), fanin), first, nxt, ins, result,
                    lambda: (_slot_rect(result, slot, 2 if dual else 1), int(slot)),
                    lambda level: fu if level == 0 else {}, defines, names, next_inputs,
                    lambda m: _vector_layout(dev, m))

    def bind_first(self, **arrays) -> "ArgReduction":
        """Swap the first level's inputs for arrays of the same layouts."""
        self.passes[0].bind(**arrays)
        return self


class _ArgPlain:
    """A cached ArgReduction whose inputs and result are bound per call."""

    def __init__(self, dev, mode, layout, mask_layout, fanin):
        self.scratch = dev.alloc(Layout(1, 2, True, "row", dev.max_texture_size), (2,))
        self.idle = {"V": Placeholder(layout)}
        if mask_layout is not None:
            self.idle["M"] = Placeholder(mask_layout)
        first = ARG_FIRST[(layout.packed, mask_layout is not None)]
        self.chain = ArgReduction(dev, mode, first, dict(self.idle), layout.n_texels,
                                  self.scratch, 0, fanin=fanin,
                                  strict_scan=layout.order == "row")

    def run(self, first, out):
        chain = self.chain
        try:
            chain.refresh()
            chain.passes[-1].bind(RES=out)
            chain.bind_first(**first)
            chain.run()
        finally:  # keep no caller's array bound while cached
            chain.passes[-1].bind(RES=self.scratch)
            chain.bind_first(**self.idle)

    def release(self):
        self.chain.release()
        self.scratch.release()


def _as_mask(dev, mask, a):
    """(mask DeviceArray, uploaded_here), validated like ``arr``, of ``a``'s shape."""
    if isinstance(mask, DeviceArray):
        m, _ = _as_device(dev, mask, "mask", check_nan=False)
        if m.shape != a.shape:
            raise ValueError(f"mask has shape {m.shape}, arr has shape {a.shape}")
        return m, False
    mk = np.asarray(mask)
    if mk.shape != a.shape:
        raise ValueError(f"mask has shape {mk.shape}, arr has shape {a.shape}")
    if mk.dtype.kind not in "biuf":
        raise TypeError(f"mask: expected a boolean or numeric array, got {mk.dtype}")
    if mk.dtype.kind == "f" and np.isnan(mk).any():
        raise ValueError("mask contains NaN")
    return dev.array((mk != 0).astype(np.float32), packed=a.layout.packed,
                     order=a.layout.order, name="mask"), True


def _arg_device(dev, arr, mask, mode: str, fanin, check_nan: bool):
    a, mine = _as_device(dev, arr, "arr", check_nan)
    m, mmine = None, False
    try:
        if a.size >= MAX_INDEX:
            raise ValueError(f"arr has {a.size} elements; arg-reductions carry indices as "
                             f"float32, exact only below 2**24 = {MAX_INDEX}")
        fanin = fanin_for(dev, fanin)
        if mask is not None:
            m, mmine = _as_mask(dev, mask, a)
        mlayout = None if m is None else m.layout
        key = ("sg.reduce", "arg", mode, a.layout, mlayout, fanin, SCAN_STRICT, ARG_FETCH_BATCH,
               LEVEL_WRAP)
        red = dev.resource(key, lambda: _ArgPlain(dev, mode, a.layout, mlayout, fanin))
        out = dev.alloc(Layout(1, 2, True, "row", dev.max_texture_size), (2,))
        try:
            red.run({"V": a} if m is None else {"V": a, "M": m}, out)
        except BaseException:
            out.release()
            raise
        return out
    finally:
        if mine:
            a.release()
        if mmine:
            m.release()


def argmin_device(dev, arr, mask=None, fanin: int | None = None) -> DeviceArray:
    """Arg-min on the device: a (2,) DeviceArray holding (value, index as float).

    ``mask`` (same shape, nonzero = eligible) restricts the candidates. When nothing is
    eligible the value is +inf and the index ``MAX_INDEX``. The first NaN among the eligible
    values wins (numpy's rule), so the value read back is NaN. The value is the winning
    element's exact bits (see :func:`argmin`).
    """
    return _arg_device(dev, arr, mask, "min", fanin, check_nan=False)


def argmax_device(dev, arr, mask=None, fanin: int | None = None) -> DeviceArray:
    """Arg-max on the device: a (2,) DeviceArray (value, index); see :func:`argmin_device`
    (nothing eligible: value -inf, index ``MAX_INDEX``)."""
    return _arg_device(dev, arr, mask, "max", fanin, check_nan=False)


def _arg_host(dev, arr, mask, mode, fanin):
    out = _arg_device(dev, arr, mask, mode, fanin, check_nan=False)
    try:
        v, i = (float(x) for x in out.get())
    finally:
        out.release()
    if i >= MAX_INDEX:
        raise ValueError("mask selects no element")
    return v, int(i)


def argmin(dev, arr, mask=None, fanin: int | None = None) -> tuple[float, int]:
    """(min value, flat index of its first occurrence) over the eligible elements of ``arr``.

    Equals ``(float(arr.flat[k]), k)`` with ``k = numpy.argmin(arr)`` (row-major flat index,
    ties to the lowest index) exactly, for every float32 input: values are ranked by their
    ordered bits, not by float comparisons (which flush subnormals on GPUs), so subnormals
    count, ``-0.0 == +0.0`` (the first of them wins), ``-inf`` / ``+inf`` are ordinary values,
    and a NaN beats everything: the first NaN's index is returned, with value NaN. The value is
    the selected element's stored bits (a subnormal or ``-0.0`` comes back as it is; no
    arithmetic touches it). Error bound: none, the result is exact (float64 inputs are first
    rounded to float32). ``mask``: same shape, nonzero = eligible; an all-zero mask raises
    ValueError.
    """
    return _arg_host(dev, arr, mask, "min", fanin)


def argmax(dev, arr, mask=None, fanin: int | None = None) -> tuple[float, int]:
    """(max value, flat index of its first occurrence): ``k = numpy.argmax(arr)`` exactly,
    the first NaN included; see :func:`argmin`."""
    return _arg_host(dev, arr, mask, "max", fanin)
