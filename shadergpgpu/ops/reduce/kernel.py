"""ReductionKernel: a reduction from expressions, with CuPy's conventions.

The class parses its parameters and expressions, writes the GLSL of its first and next levels
(whole array, or along an axis) and runs a call through a cached chain
(:mod:`.kernel_chains`).
"""
from __future__ import annotations

import numpy as np

from ...engine.arrays import DeviceArray
from ...engine.kernels import In, Kernel, declare
from ...engine.layout import Layout
from ..tuning import ReduceTuning
from .kernel_chains import Plain
from .levels import DEFAULT_FANIN, check_fanin, axis_passes, fanin_for, level_sizes, passes
from .params import (AlwaysScalar, check_names, float_literal, identity_text,
                     parse_params, scalar_operand, vec4_safe, host_operand)
from ...engine.validation import pick_device


class ReductionKernel:
    """A reduction from expressions, with CuPy's ``ReductionKernel`` conventions.

    Parameters
    ----------
    in_params : str
        The inputs as ``"type name"`` pairs, e.g. ``"float32 x, float32 y"``. At a call an
        array argument is read element by element (any layout; all arrays of one call have
        one shape), a scalar argument becomes a uniform. Types: float32, float64 (converted
        to float32), int*/uint*/bool (values must be exact in float32, ``|v| <= 2**24``);
        every value is a GLSL ``float``.
    out_params : str
        The one float32 output, e.g. ``"float32 z"``.
    map_expr : str
        GLSL expression of the in-params per element (``_i``: its row-major flat index).
    reduce_expr : str
        GLSL expression of ``a`` and ``b`` (associative and commutative).
    post_map_expr : str, default=""
        Statement(s) setting the output from ``a``; empty: ``"z = a"``.
    identity : float or str
        The value of an empty reduction (``0`` for sums, ``-inf`` for a max ...); required.
        A string is read as a number (CuPy passes C source text).
    name : str or None, default=None
        Shown in errors and kernel names (None: ``"reduction_kernel"``).

    A call, ``rk(x, y, ..., axis=None, device=None, fanin=None)``, reduces the whole array to
    one value (``axis=None``) or the columns / the rows of a matrix (``axis=0`` / ``axis=1``);
    ``device`` picks the Device (default: the arguments', else the thread's default device),
    ``fanin`` the elements one fragment of a level combines (at least 2).

    Returns
    -------
    A call returns numpy results for numpy inputs (a float32 scalar, or a 1-D array) and a new
    DeviceArray (shape ``(1,)`` or ``(n,)``) when any input is a DeviceArray.

    Raises
    ------
    ValueError
        At construction: no input, not exactly one float32 output, an output named as an
        input, no identity, or a name in an expression that is not a parameter (or ``_i``,
        ``a``, ``b`` where allowed). At a call: arrays of different shapes, a bad axis or
        fan-in, values float32 cannot hold.
    TypeError
        A complex, object or string argument.

    Accuracy
    --------
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

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> sum_sq = sg.ReductionKernel("float32 x", "float32 y", "x * x", "a + b", "y = a",
    ...                             identity=0.0, name="sum_sq")
    >>> float(sum_sq(np.arange(4.0)))                       # 0 + 1 + 4 + 9
    14.0
    >>> biggest = sg.ReductionKernel("float32 x", "float32 y", "x", "max(a, b)", "",
    ...                              identity="-1e38", name="biggest")
    >>> biggest(np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]]), axis=1)   # per row
    array([5., 7.], dtype=float32)
    """

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr="",
                 identity=None, name=None, *, _library: bool = False):
        self.name = str(name) if name is not None else "reduction_kernel"
        self.in_params = parse_params(in_params, "in_params")
        if not self.in_params:
            raise ValueError("in_params: a reduction needs at least one input parameter")
        outs = parse_params(out_params, "out_params")
        if len(outs) != 1 or outs[0][0] not in ("float32", "float"):
            raise ValueError(f"out_params must declare one float32 output, got {out_params!r}")
        self.out_name = outs[0][1]
        if self.out_name in {n for _, n in self.in_params}:
            raise ValueError(f"out_params: {self.out_name!r} is also an input parameter")
        if identity is None:
            raise ValueError(f"{self.name}: identity is required (the value of an empty "
                             "reduction: 0 for a sum, -inf for a max ...)")
        if isinstance(identity, str):   # CuPy passes the identity as C source text: "0"
            identity = identity_text(self.name, identity)
        self.identity = scalar_operand(identity, "identity") if not isinstance(identity, float) \
            else float(identity)
        names = {n for _, n in self.in_params}
        check_names(map_expr, "map_expr", names | {"_i"})
        check_names(reduce_expr, "reduce_expr", names | {"a", "b"})
        post = post_map_expr.strip() if isinstance(post_map_expr, str) else post_map_expr
        if post == "":
            post = f"{self.out_name} = a"
        check_names(post, "post_map_expr", names | {"a", self.out_name})
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post
        self._make = declare if _library else Kernel
        self._kernels: dict = {}
        # whether the expressions compile on vec4 (four lanes at once): known for the
        # library's kernels, found out by a first compile for a user's (key -> bool)
        self._vec4_default = bool(_library)
        self._vec4: dict = {}
        if not (vec4_safe(map_expr) and vec4_safe(reduce_expr)):
            self._vec4 = AlwaysScalar()
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
                f"float sg_identity() {{ return {float_literal(self.identity)}; }}\n"
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
        if len(args) != len(self.in_params):
            raise TypeError(f"{self.name} takes {len(self.in_params)} argument(s) "
                            f"({', '.join(n for _, n in self.in_params)}), got {len(args)}")
        dev = pick_device(device, args)
        dev.report("api:reduce")     # an entry point: its own host work, reported
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
                scalars[p] = scalar_operand(a, shown)
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
            key = ("sg.reduce", self, tuple(order), mode, lays, fanin, dev.tuning(ReduceTuning))
            chain = dev.resource(key, lambda: Plain(self, dev, order, mode, lays, fanin))
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
        fanin = check_fanin(fanin)
        shape = tuple(shape)
        if axis is None or len(shape) == 1:
            return passes(int(np.prod(shape)), fanin, packed) if packed else \
                len(level_sizes(int(np.prod(shape)), fanin))
        return axis_passes(shape[int(axis) % 2], fanin)
