"""Elementwise kernels from a line of GLSL, with CuPy's argument conventions.

    >>> import numpy as np
    >>> from shadergpgpu.ops.elementwise import ElementwiseKernel
    >>> fma = ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z",
    ...                         "z = x * y + a", name="fma")
    >>> fma(np.arange(4.0), np.ones(4), 2.0)                    # numpy in -> numpy out
    array([2., 3., 4., 5.], dtype=float32)

Rules (see ``docs/ops.md``):

* **Parameters** are ``"type name"`` pairs separated by commas. Types: ``float16``,
  ``float32``, ``float64``, ``float`` (GLSL ``float``); ``int8``..``int64``, ``uint8``..
  ``uint32``, ``int`` (GLSL ``int``); ``bool``. Every array is stored as float32 on the device:
  an integer parameter reads ``int(value)`` (exact below 2**24), a bool one ``value != 0``.
* **Scalar or array is decided by what is passed**, as in CuPy: a Python number, a numpy
  scalar or a 0-d array becomes a uniform; a numpy array or a ``DeviceArray`` is an array.
  Each combination compiles its own program once (per layout kind).
* **Shapes**: arrays are 1-D or 2-D and broadcast by numpy's rules (``(3, 4)`` with ``(4,)``,
  ``(3, 1)``, ``(1, 4)`` or ``(1, 1)``); the output has the broadcast shape.
* **Outputs**: 1..8 (one render target each). Pass them after the inputs (``k(x, y, a, z)``)
  to write into existing arrays (device arrays: same layout; numpy arrays: filled in place),
  or leave them out to get new ones. ``i`` is the row-major flat index of the element.
* **Host or device**: if every array argument is a numpy array the result is numpy (uploaded,
  computed, downloaded); if any is a ``DeviceArray`` the result is a ``DeviceArray`` (with the
  packing and order of the first device input of the output's shape).
* **Input conversion**: float64 is rounded to float32 (finite values beyond float32's range are
  refused); integer arrays must lie within +-2**24 (exact in float32); complex, object and
  string arrays and empty arrays are refused; NaN and inf pass through unchanged.
"""
from __future__ import annotations

import numbers
import re

import numpy as np

from ..engine.arrays import DeviceArray
from ..engine.builtin import COPY
from ..engine.errors import ShaderCompileError
from ..engine.kernels import In, Kernel, MAX_OUTPUTS
from ..engine.validation import device_values, pick_device

__all__ = ["ElementwiseKernel", "host_array"]

#: Integers are exact in float32 below this magnitude.
_FLOAT_T = {"float16", "float32", "float64", "float", "double", "half", "single"}
_INT_T = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "int", "uint",
          "long", "short"}
_IDENT = re.compile(r"[A-Za-z_]\w*")
_GLSL_WORDS = set("""
attribute const uniform varying layout centroid flat smooth noperspective break continue do for
while switch case default if else in out inout float int void bool true false invariant discard
return mat2 mat3 mat4 mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 mat4x2 mat4x3 mat4x4 vec2 vec3
vec4 ivec2 ivec3 ivec4 bvec2 bvec3 bvec4 uint uvec2 uvec3 uvec4 lowp mediump highp precision
sampler2D struct gl_FragCoord gl_FrontFacing gl_PointCoord
""".split())
_TYPE_WORDS = {"float", "int", "uint", "bool", "vec2", "vec3", "vec4", "ivec2", "ivec3",
               "ivec4", "uvec2", "uvec3", "uvec4", "bvec2", "bvec3", "bvec4", "mat2", "mat3",
               "mat4", "const"}
_RESERVED = re.compile(r"(IN|OUT)\d+\Z|i\Z|sg_|gl_|main\Z")

def _parse_params(text: str, what: str) -> list[tuple[str, str]]:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a string like 'float32 x, float32 y', got "
                        f"{type(text).__name__}")
    out = []
    for part in [p.strip() for p in text.split(",")]:
        if not part:
            continue
        bits = part.split()
        if len(bits) != 2:
            raise ValueError(f"{what}: {part!r} is not 'type name' (e.g. 'float32 x'); raw "
                             "parameters and type placeholders are not supported")
        t, n = bits
        if t not in _FLOAT_T | _INT_T | {"bool"}:
            raise ValueError(f"{what}: unknown type {t!r} of {n!r}; use float32 (float16/"
                             "float64 are computed in float32), int32 (or another integer "
                             "type) or bool")
        if not _IDENT.fullmatch(n) or _RESERVED.match(n) or n in _GLSL_WORDS:
            raise ValueError(f"{what}: {n!r} cannot be a parameter name (not a GLSL "
                             "identifier, or reserved: i, INk, OUTk, sg_*, gl_*, keywords)")
        out.append((t, n))
    return out


def _glsl_type(t: str) -> str:
    return "float" if t in _FLOAT_T else "int" if t in _INT_T else "bool"


def _np_type(t: str):
    if t in _FLOAT_T:
        return np.float32
    if t == "bool":
        return np.bool_
    return np.int32 if not t.startswith("uint") else np.int64


def _strip_comments(s: str) -> str:
    s = re.sub(r"/\*.*?\*/", " ", s, flags=re.S)
    return re.sub(r"//[^\n]*", " ", s)


def _unknown_names(operation: str, known: set, preamble: str) -> list[str]:
    """Identifiers the operation uses that nothing declares (conservative: locals declared
    in the operation, functions, swizzles and names of the preamble are accepted)."""
    op = _strip_comments(operation)
    pre = set(_IDENT.findall(_strip_comments(preamble)))
    declared = set()
    types = _TYPE_WORDS | pre
    toks = [(m.group(), m.start(), m.end()) for m in _IDENT.finditer(op)]
    for k, (t, s, e) in enumerate(toks):
        if k and toks[k - 1][0] in types and op[toks[k - 1][2]:s].strip() == "":
            declared.add(t)
    # comma-separated declarations: "float a = 1.0, b = 2.0;"
    for stmt in re.findall(r"\b(?:float|int|uint|bool|vec[234]|ivec[234])\s+([^;]*)", op):
        depth = 0
        start = True
        for ch_m in re.finditer(r"[(),]|[A-Za-z_]\w*", stmt):
            g = ch_m.group()
            if g == "(":
                depth += 1
            elif g == ")":
                depth -= 1
            elif g == ",":
                start = depth == 0
            elif start:
                declared.add(g)
                start = False
    bad = []
    for t, s, e in toks:
        before = op[:s].rstrip()
        after = op[e:].lstrip()
        if before.endswith(".") or after.startswith("("):
            continue  # swizzle / member, or a function call
        if re.match(r"\d", op[s - 1:s] if s else ""):
            continue  # exponent of a literal such as 1e5 (the 'e5' part)
        if t in known or t in declared or t in pre or t in _GLSL_WORDS or t == "i":
            continue
        if re.fullmatch(r"[eE]\d*|[uUfF]", t):
            continue
        if t not in bad:
            bad.append(t)
    return bad


def host_array(x, name: str) -> np.ndarray:
    """A host argument as a float32 array (1-D or 2-D) under the library's conversion rule
    (:func:`shadergpgpu.engine.validation.device_values`)."""
    return device_values(x, name)


def _is_scalar(v) -> bool:
    if isinstance(v, DeviceArray):
        return False
    if isinstance(v, (numbers.Number, np.generic)):
        return True
    return isinstance(v, np.ndarray) and v.ndim == 0


def _shape2(shape) -> tuple[int, int]:
    return (1, shape[0]) if len(shape) == 1 else tuple(shape)


class ElementwiseKernel:
    """An elementwise operation over arrays, written as GLSL statements (CuPy's
    ``ElementwiseKernel``).

    Parameters
    ----------
    in_params : str
        The inputs, ``"type name"`` pairs separated by commas, e.g.
        ``"float32 x, float32 y, float32 a"``. Each call decides whether an input is an array
        or a scalar (a uniform) by what it passes.
    out_params : str
        The outputs in the same form, e.g. ``"float32 z"``: 1 to 8 (one render target each).
    operation : str
        GLSL statements run once per element, e.g. ``"z = x * y + a"`` (a final ``;`` is
        added when missing). ``i`` is the element's row-major flat index.
    name : str or None, default=None
        An identifier shown in errors and in the compiled kernel's name (None:
        ``"elementwise"``).
    preamble : str, default=""
        GLSL placed before ``main`` (helper functions, constants).

    Calling the kernel, ``k(*inputs, *outputs, device=None)``, takes the inputs in order,
    then optionally the outputs to write into (device arrays of the output's layout, or numpy
    arrays filled in place); ``device`` picks the Device (default: the arguments', else the
    thread's default device). See the module for the conversion and broadcasting rules.

    Returns
    -------
    A call returns numpy arrays when every array argument is a numpy array, else new (or the
    given) DeviceArrays; one output comes back alone, several as a tuple. Scalars only give
    0-d arrays.

    Raises
    ------
    ValueError
        At construction: a name that is not an identifier, no output or more than 8, a
        parameter named twice, an empty operation, a ``uniform`` declaration, or a name in
        the operation that is neither a parameter, ``i``, GLSL nor the preamble's. At a call:
        shapes that do not broadcast, released inputs, inputs of more than 2 dimensions,
        values that float32 cannot hold.
    TypeError
        A call with the wrong number of arguments; a preamble that is not a string.
    ShaderCompileError
        GLSL that does not compile, with the driver's log.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> axpy = sg.ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z",
    ...                             "z = a * x + y", name="axpy")
    >>> axpy(np.arange(4.0), np.ones(4), 2.0)               # numpy in, numpy out
    array([1., 3., 5., 7.], dtype=float32)
    >>> dev = sg.Device()
    >>> x = dev.array(np.arange(6.0).reshape(2, 3))
    >>> z = axpy(x, x, 0.5)                                 # device in, device out
    >>> z.get()
    array([[0. , 1.5, 3. ],
           [4.5, 6. , 7.5]], dtype=float32)
    """

    def __init__(self, in_params: str, out_params: str, operation: str, name: str | None = None,
                 preamble: str = ""):
        self.name = name or "elementwise"
        if not _IDENT.fullmatch(self.name):
            raise ValueError(f"name {self.name!r} must be an identifier")
        self.in_params = _parse_params(in_params, "in_params")
        self.out_params = _parse_params(out_params, "out_params")
        if not 1 <= len(self.out_params) <= MAX_OUTPUTS:
            raise ValueError(f"{self.name}: 1 to {MAX_OUTPUTS} outputs (render targets), got "
                             f"{len(self.out_params)}")
        names = [n for _, n in self.in_params + self.out_params]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"{self.name}: parameter name(s) used twice: {dup}")
        if not isinstance(operation, str) or not operation.strip():
            raise ValueError(f"{self.name}: operation must be non-empty GLSL, e.g. 'z = x + y'")
        if not isinstance(preamble, str):
            raise TypeError("preamble must be a string of GLSL")
        if re.search(r"\buniform\b", _strip_comments(operation + preamble)):
            raise ValueError(f"{self.name}: declare scalars as parameters, not as uniforms")
        bad = _unknown_names(operation, set(names), preamble)
        if bad:
            raise ValueError(f"{self.name}: unknown name(s) {bad} in operation {operation!r}; "
                             f"the parameters are {names} (and i, the flat index)")
        op = operation.strip()
        ends = _strip_comments(op).rstrip().endswith((";", "}"))
        self.operation = op if ends else op + ("\n;" if "//" in op else ";")
        self.preamble = preamble
        self._kernels: dict = {}
        # the direct path's view of the inputs: (type, name, computed as a float)
        self._specs = tuple((t, n, t in _FLOAT_T) for t, n in self.in_params)

    def __repr__(self):
        return (f"ElementwiseKernel({self.name!r}, in={[n for _, n in self.in_params]}, "
                f"out={[n for _, n in self.out_params]})")

    @property
    def nin(self) -> int:
        return len(self.in_params)

    @property
    def nout(self) -> int:
        return len(self.out_params)

    # ---- the generated kernels ------------------------------------------------------------
    def kernel(self, arrays: tuple, fast: bool) -> Kernel:
        """The engine kernel for one signature: ``arrays`` = which inputs are arrays;
        ``fast``: every array input has the output's layout (read by texel)."""
        key = (arrays, fast)
        k = self._kernels.get(key)
        if k is not None:
            return k
        # The operation becomes one function (its text appears once, so a compile error is
        # quoted once); main calls it for the four lanes of the texel, unrolled.
        ins, unis, params, reads, pre = {}, {}, [], [], []
        for (t, n), is_arr in zip(self.in_params, arrays):
            g = _glsl_type(t)
            if not is_arr:
                unis[n] = g          # a scalar: a uniform the operation reads directly
                continue
            src = f"IN{len(ins)}"
            ins[src] = In(like="OUT0") if fast else In()
            params.append(f"{g} {n}")
            if fast:
                pre.append(f"    vec4 sg_t{src} = {src}_texel(sg_g.x, sg_g.y);")
                reads.append((g, f"sg_t{src}.{{c}}"))
            else:
                reads.append((g, f"{src}_at(min(sg_p.x, {src}_ROWS - 1), "
                                 f"min(sg_p.y, {src}_COLS - 1))"))
        params.append("int i")
        params += [f"inout {_glsl_type(t)} {n}" for t, n in self.out_params]
        outs = [f"OUT{k}" for k in range(self.nout)]
        body = [self.preamble, f"void sg_op({', '.join(params)}) {{",
                "// ---- operation ----", self.operation, "// ----", "}",
                "void main() {", "    ivec2 sg_g = OUT0_grid();", "    bvec4 sg_live = OUT0_lanes();"]
        body += pre + [f"    vec4 sg_o{k} = vec4(0.0);" for k in range(self.nout)]
        for lane, c in enumerate("xyzw"):
            body.append("    {")
            if not fast:
                body.append(f"        ivec2 sg_p = OUT0_pos({lane});")
            body += [f"        {_glsl_type(t)} sg_r{k} = {_glsl_type(t)}(0);"
                     for k, (t, _) in enumerate(self.out_params)]
            args = [_cast(g, v.format(c=c)) for g, v in reads] + [f"OUT0_index({lane})"]
            args += [f"sg_r{k}" for k in range(self.nout)]
            body.append(f"        sg_op({', '.join(args)});")
            body += [f"        sg_o{k}.{c} = sg_live.{c} ? float(sg_r{k}) : 0.0;"
                     for k in range(self.nout)]
            body.append("    }")
        body += [f"    {o} = sg_o{k};" for k, o in enumerate(outs)] + ["}"]
        src = "\n".join(body)
        k = Kernel(source=src, inputs=ins, outputs=tuple(outs), uniforms=unis,
                   name=f"elementwise/{self.name}")
        self._kernels[key] = k
        return k

    # ---- a call ---------------------------------------------------------------------------
    def __call__(self, *args, device=None):
        if device is None:
            res = self._device_call(args)
            if res is not None:
                return res
        nin, nout = self.nin, self.nout
        if len(args) not in (nin, nin + nout):
            raise TypeError(f"{self.name}: takes {nin} inputs (and optionally {nout} outputs), "
                            f"got {len(args)} arguments")
        ins, outs = args[:nin], args[nin:]
        arrays = tuple(not _is_scalar(v) for v in ins)
        if nin and not any(arrays) and not outs:
            # scalars only: computed as one element, returned as 0-d arrays (as CuPy does)
            one = (np.asarray([ins[0]]),) + tuple(ins[1:])
            r = self(*one, device=device)
            return r.reshape(()) if nout == 1 else tuple(x.reshape(()) for x in r)
        shapes = []
        for (t, n), v, is_arr in zip(self.in_params, ins, arrays):
            if is_arr:
                if isinstance(v, DeviceArray):
                    if v.released:
                        raise ValueError(f"{self.name}: input {n!r} has been released")
                    if v.ndim not in (1, 2):
                        raise ValueError(f"{self.name}: input {n!r} must be 1-D or 2-D, got "
                                         f"shape {v.shape}")
                    shapes.append(v.shape)
                else:
                    shapes.append(np.shape(v))
            else:
                if isinstance(v, (complex, np.complexfloating)) or \
                        (isinstance(v, np.ndarray) and v.dtype.kind == "c"):
                    raise TypeError(f"{self.name}: scalar {n!r} is complex ({v!r})")
        for (t, n), v in zip(self.out_params, outs):
            if _is_scalar(v) or not isinstance(v, (DeviceArray, np.ndarray)):
                raise TypeError(f"{self.name}: output {n!r} must be a DeviceArray or numpy "
                                f"array, got {type(v).__name__}")
        if not shapes and outs:
            shapes.append(tuple(outs[0].shape))
        if not shapes:
            raise ValueError(f"{self.name}: at least one argument must be an array (the "
                             "output shape comes from the arrays)")
        try:
            shape = np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"{self.name}: shapes {shapes} do not broadcast together") from None
        if len(shape) not in (1, 2):
            raise ValueError(f"{self.name}: arrays are 1-D or 2-D, got broadcast shape {shape}")
        if 0 in shape:
            raise ValueError(f"{self.name}: empty arrays (shape {shape})")
        for (t, n), v in zip(self.out_params, outs):
            if tuple(v.shape) != tuple(shape):
                raise ValueError(f"{self.name}: output {n!r} has shape {v.shape}, the "
                                 f"operation's shape is {shape} (outputs do not broadcast)")
        dev = pick_device(device, list(ins) + list(outs))
        on_device = any(isinstance(v, DeviceArray) for v in list(ins) + list(outs))
        with dev.scope() as s:
            dins, uniforms = {}, {}
            for (t, n), v, is_arr in zip(self.in_params, ins, arrays):
                if is_arr:
                    if not isinstance(v, DeviceArray):
                        v = s.array(host_array(v, f"{self.name}: input {n!r}"), name=n)
                    dins[n] = v
                else:
                    uniforms[n] = _scalar(self.name, t, n, v)
            # output layout: the first device input of the output's shape, else packed row
            ref = next((v for v in list(outs) + list(dins.values())
                        if isinstance(v, DeviceArray) and tuple(v.shape) == tuple(shape)), None)
            lay = ref.layout if ref is not None else dev.layout(shape)
            targets, copies = [], []
            for k in range(nout):
                o = outs[k] if outs else None
                if isinstance(o, DeviceArray):
                    if o.layout != lay:
                        raise ValueError(f"{self.name}: output arrays must share one layout "
                                         f"(output {self.out_params[k][1]!r} differs from "
                                         f"{'the first output' if k else 'the inputs'})")
                    if any(o is v for v in dins.values()):
                        tmp = s.alloc(lay, shape)
                        copies.append((tmp, o))
                        targets.append(tmp)
                    else:
                        targets.append(o)
                elif o is None and on_device:
                    targets.append(dev.alloc(lay, shape))   # the caller's result
                else:
                    targets.append(s.alloc(lay, shape))     # downloaded at the end
            fast = all(v.layout == lay and tuple(v.shape) == tuple(shape)
                       for v in dins.values())
            kern = self.kernel(arrays, fast)
            named = {f"IN{j}": v for j, v in enumerate(dins.values())}
            try:
                dev.run(kern, targets, inputs=named, uniforms=uniforms)
            except ShaderCompileError as e:
                raise ShaderCompileError(
                    f"ElementwiseKernel {self.name!r}: the operation does not compile:\n"
                    f"    {self.operation}\n{e}") from None
            for tmp, o in copies:
                dev.run(COPY, o, inputs={"X": tmp})
            if on_device:
                res = []
                for o, t in zip(outs or [None] * nout, targets):
                    if isinstance(o, np.ndarray):  # a host output next to device inputs
                        np.copyto(o, t.get(), casting="unsafe")
                    res.append(t if o is None else o)
            else:
                res = []
                for k, t in enumerate(targets):
                    h = t.get().astype(_np_type(self.out_params[k][0]), copy=False)
                    if outs:
                        np.copyto(outs[k], h, casting="unsafe")
                        h = outs[k]
                    res.append(h)
        return res[0] if nout == 1 else tuple(res)


    def _device_call(self, args):
        """The common call at a small, known cost: every array argument a live DeviceArray of
        one layout and shape on one device, scalars as Python numbers, outputs of that layout
        (not also inputs) or none. None for anything else: the general path decides (and says
        what is wrong)."""
        specs = self._specs
        nin = len(specs)
        na = len(args)
        if na != nin and na != nin + len(self.out_params):
            return None
        first = None
        arrays = []
        uniforms, named = {}, {}
        for v, (t, n, is_float) in zip(args, specs):
            tv = type(v)
            if tv is DeviceArray:
                if first is None:
                    if v._released or len(v.shape) > 2:
                        return None
                    first = v
                elif v._released or v.device is not first.device or \
                        v.shape != first.shape or \
                        not (v.layout is first.layout or v.layout == first.layout):
                    return None
                named[_IN_NAMES[len(named)]] = v
                arrays.append(True)
            elif tv is float or tv is int:
                uniforms[n] = v if tv is float and is_float and -3.4e38 < v < 3.4e38 \
                    else _scalar(self.name, t, n, v)
                arrays.append(False)
            else:
                return None
        if first is None:
            return None
        outs = args[nin:]
        for o in outs:
            if type(o) is not DeviceArray or o._released or o.device is not first.device or \
                    o.shape != first.shape or \
                    not (o.layout is first.layout or o.layout == first.layout):
                return None
            for v in named.values():
                if o is v:
                    return None
        dev = first.device
        dev.report("call")               # the one-liner's own host work, reported
        targets = list(outs) if outs else [dev.alloc(first.layout, first.shape)
                                           for _ in range(len(self.out_params))]
        try:
            dev.run(self.kernel(tuple(arrays), True), targets, inputs=named, uniforms=uniforms)
        except ShaderCompileError as e:
            raise ShaderCompileError(
                f"ElementwiseKernel {self.name!r}: the operation does not compile:\n"
                f"    {self.operation}\n{e}") from None
        except BaseException:
            if not outs:
                for t in targets:
                    t.release()
            raise
        return targets[0] if len(targets) == 1 else tuple(targets)


_IN_NAMES = tuple(f"IN{j}" for j in range(64))


def _cast(g: str, v: str) -> str:
    if g == "float":
        return v
    if g == "int":
        return f"int({v})"
    return f"({v} != 0.0)"


def _scalar(kname: str, t: str, n: str, v):
    v = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
    if isinstance(v, complex):
        raise TypeError(f"{kname}: scalar {n!r} is complex ({v!r})")
    if not isinstance(v, numbers.Real):
        raise TypeError(f"{kname}: scalar {n!r} must be a real number, got {v!r}")
    g = _glsl_type(t)
    if g == "int":
        if isinstance(v, float) and not v.is_integer():
            raise TypeError(f"{kname}: scalar {n!r} is declared {t}, got {v!r}")
        v = int(v)
        if not -2 ** 31 <= v < 2 ** 31:
            raise ValueError(f"{kname}: scalar {n!r} = {v} does not fit in a 32-bit int")
        return v
    if g == "bool":
        return bool(v)
    v = float(v)
    if np.isfinite(v) and abs(v) > np.finfo(np.float32).max:
        raise ValueError(f"{kname}: scalar {n!r} = {v} is beyond float32's range")
    return v
