"""Kernels declared once: source, inputs, outputs, typed uniforms, defines and loop work.

A :class:`Kernel` is a fragment shader plus everything the engine must know to run it safely::

    SAXPY = Kernel("engine/saxpy.frag",
                   inputs={"X": In(like="OUT"), "Y": In(like="OUT")},
                   uniforms={"alpha": "float"})
    SAXPY(y, X=x, Y=x, alpha=2.0)          # or dev.run(SAXPY, y, inputs=..., uniforms=...)

* **Source**: a file (relative to the package's ``shaders/``, to ``root=``, to the device's
  ``shader_root``, or absolute) or inline GLSL (``source=``). The engine generates every
  declaration: the samplers and accessors of the inputs, the outputs and their lane accessors
  (:mod:`shadergpgpu.engine.layout`), the declared uniforms, the loop range. A shader file that
  declares a uniform itself is refused: every uniform is declared, typed and checked.
* **Inputs** are element-addressed by default (``X_at``, ``X_get``: any layout reads right).
  A kernel that reads raw texels (``X_texel``, ``X_coord``) must declare which layout it
  expects (``In(like="OUT")``, ``In(packed=True, order="row")``, ``In(buffer=True)``): a call
  whose arrays do not match fails before any GL work instead of returning wrong numbers.
* **Uniforms** are typed (``float``, ``int``, ``bool``, ``vec2..4``, ``ivec2..4``) and required
  unless given a default (``("float", 1.0)``).
* **Defines** are declared with defaults (compile-time variants, e.g. a tile height); a call may
  override only declared names. Sizes are never defines: shapes reach the shader as uniforms,
  so one program serves every size of a layout kind.
* **Loop work**: ``loop=`` states the loop iterations one fragment runs (a function of the
  call's :class:`Args`); ``split=`` names a range the kernel loops over (``for (int k =
  k_begin; k < k_end; ++k)``), which the engine cuts across several passes, summed by blending,
  when one pass would run more iterations than the device's loop cap. A kernel over the cap
  that cannot be split is refused with :class:`LoopBudgetError`.
"""
from __future__ import annotations

import numbers
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .errors import LoopBudgetError
from .limits import ceil_div

_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_UNIFORM_DECL = re.compile(r"^\s*uniform\s+\w+\s+(\w+)", re.M)
UNIFORM_TYPES = {"float": (float, 1), "int": (int, 1), "bool": (bool, 1),
                 "vec2": (float, 2), "vec3": (float, 3), "vec4": (float, 4),
                 "ivec2": (int, 2), "ivec3": (int, 3), "ivec4": (int, 4)}
MAX_OUTPUTS = 8


@dataclass(frozen=True)
class In:
    """What a kernel requires of one input's layout.

    like : name of an output (or input) whose layout this input must equal (same shape, packing
        and order: the kernel reads both at the same grid texel).
    packed, order : required packing / order (None: any).
    buffer : True for a linear buffer (``samplerBuffer``), "either" to accept both kinds.
    block : True for a uniform-block window (a :class:`~shadergpgpu.engine.blocks.BlockArray`,
        read as ``X_vec4(i)``; see :mod:`shadergpgpu.engine.blocks`).
    """

    like: str | None = None
    packed: bool | None = None
    order: str | None = None
    buffer: bool | str = False
    block: bool = False

    @property
    def texel_safe(self) -> bool:
        """Whether the declaration pins down the texel grid the kernel reads."""
        return self.like is not None or self.packed is not None


@dataclass(frozen=True)
class Split:
    """A loop range the engine may cut across passes.

    The kernel loops ``for (int k = NAME_begin; k < NAME_end; ++k)``; ``length(args)`` is the
    whole range, ``cost`` the loop iterations one step of it runs (nested loops count together),
    ``extra`` iterations outside the range (``cost`` and ``extra`` may also be functions of the
    call's :class:`Args`, for inner loops whose length depends on the data), ``align`` the step
    the cut points are multiples of.
    The passes after the first add into the outputs by blending (``combine="add"``) or keep the
    larger / smaller value (``"max"``/``"min"``).
    """

    name: str
    length: Callable
    cost: int | Callable = 1
    extra: int | Callable = 0
    align: int = 1
    combine: str = "add"


class Args:
    """What ``loop=`` and ``Split.length`` see of a call: ``args.X`` is input/output X's layout
    (``.rows``, ``.cols`` ...), ``args.uniforms`` and ``args.defines`` the values given."""

    def __init__(self, layouts: dict, uniforms: dict, defines: dict):
        self.__dict__.update(layouts)
        self.uniforms = uniforms
        self.defines = defines


def _check_name(name, what: str) -> str:
    if not isinstance(name, str) or not _IDENT.match(name) or name.startswith(("sg_", "gl_")):
        raise ValueError(f"{what} name {name!r} is not a valid GLSL identifier "
                         "(names starting with sg_ or gl_ are reserved)")
    return name


def check_uniform(kernel_name: str, name: str, gtype: str, value):
    """Validate ``value`` for a uniform of GLSL type ``gtype``; returns what moderngl takes."""
    base, n = UNIFORM_TYPES[gtype]
    vals = value if n > 1 else (value,)
    if n > 1:
        try:
            vals = tuple(value)
        except TypeError:
            raise TypeError(f"{kernel_name}: uniform {name!r} is a {gtype}: expected "
                            f"{n} numbers, got {value!r}") from None
        if len(vals) != n:
            raise ValueError(f"{kernel_name}: uniform {name!r} is a {gtype}: expected {n} "
                             f"numbers, got {len(vals)}")
    out = []
    for v in vals:
        if isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real):
            raise TypeError(f"{kernel_name}: uniform {name!r} ({gtype}) got complex {v!r}")
        if base is bool:
            if not isinstance(v, (bool, numbers.Integral)):
                raise TypeError(f"{kernel_name}: uniform {name!r} is a bool, got {v!r}")
            out.append(bool(v))
        elif base is int:
            if isinstance(v, numbers.Integral):
                out.append(int(v))
            elif isinstance(v, numbers.Real) and float(v).is_integer():
                out.append(int(v))
            else:
                raise TypeError(f"{kernel_name}: uniform {name!r} is an {gtype}, got {v!r}")
            if not -2**31 <= out[-1] < 2**31:
                raise ValueError(f"{kernel_name}: uniform {name!r} = {v} does not fit in a "
                                 "32-bit int")
        else:
            if not isinstance(v, numbers.Real):
                raise TypeError(f"{kernel_name}: uniform {name!r} is a {gtype}, got {v!r}")
            out.append(float(v))
    return tuple(out) if n > 1 else out[0]


class Kernel:
    """A fragment-shader kernel declared once (see the module docstring).

    Parameters
    ----------
    file : shader file (relative to ``root``, to the device's ``shader_root`` or the package's
        ``shaders/``; or absolute). Give either ``file`` or ``source``.
    source : inline GLSL (the body: ``void main() { ... }`` and helpers).
    inputs : names (a tuple: element access, any layout) or a dict name -> :class:`In`.
    outputs : names (default ``("OUT",)``) or a count n (``OUT0 .. OUTn-1``); 1..8.
    uniforms : dict name -> GLSL type, or (type, default).
    defines : dict name -> default value of a compile-time define a call may override.
    loop : function(:class:`Args`) -> loop iterations per fragment (checked against the cap).
    split : a :class:`Split` range the engine may cut across passes.
    root : folder that relative ``file`` names (and includes) are looked up in first.
    name : shown in errors (default: the file name, or "inline kernel").
    hint : what the user can change when the loop budget refuses a call.
    work : function(:class:`Args`) -> dict with the work of ONE fragment: ``flops``,
        ``fetches`` (texel fetches), optionally ``bytes`` written (default 16 per output)
        and ``buffer_fetches`` (the part of ``fetches`` that reads buffer textures). The
        engine keeps it and never calls it: a listener that prices the calls it observes
        (:meth:`Device.observe <shadergpgpu.engine.device.Device.observe>`) may read it from
        each call's kernel.
    """

    def __init__(self, file: str | Path | None = None, *, source: str | None = None,
                 inputs=(), outputs=("OUT",), uniforms: dict | None = None,
                 defines: dict | None = None, loop: Callable | None = None,
                 split: Split | None = None, root: str | Path | None = None,
                 name: str | None = None, hint: str = "", work: Callable | None = None):
        if (file is None) == (source is None):
            raise ValueError("give a Kernel either a shader file or source=, not both")
        self.file = None if file is None else str(file)
        self.source = source
        self.root = None if root is None else Path(root)
        self.name = name or (Path(self.file).as_posix() if self.file else "inline kernel")
        if isinstance(inputs, dict):
            self.inputs = {_check_name(k, "input"): (v if isinstance(v, In) else In(**v))
                           for k, v in inputs.items()}
        else:
            self.inputs = {_check_name(k, "input"): In() for k in inputs}
        if isinstance(outputs, int):
            if not 1 <= outputs <= MAX_OUTPUTS:
                raise ValueError(f"{self.name}: 1 to {MAX_OUTPUTS} outputs, got {outputs}")
            outputs = tuple(f"OUT{k}" for k in range(outputs))
        self.outputs = tuple(_check_name(o, "output") for o in outputs)
        if not 1 <= len(self.outputs) <= MAX_OUTPUTS:
            raise ValueError(f"{self.name}: 1 to {MAX_OUTPUTS} outputs, got {len(self.outputs)}")
        self.uniforms: dict[str, tuple] = {}
        for k, v in (uniforms or {}).items():
            t, default = (v, None) if isinstance(v, str) else (v[0], v[1])
            if t not in UNIFORM_TYPES:
                raise ValueError(f"{self.name}: uniform {k!r} has unknown type {t!r}; one of "
                                 + ", ".join(UNIFORM_TYPES))
            if default is not None:
                default = check_uniform(self.name, k, t, default)
            self.uniforms[_check_name(k, "uniform")] = (t, default)
        self.split = split
        if split is not None:
            _check_name(split.name, "split")
            if split.combine not in ("add", "max", "min"):
                raise ValueError(f"{self.name}: split combine must be add, max or min")
        self.defines = {}
        for k, v in (defines or {}).items():
            self.defines[_check_name(k, "define")] = _define_value(self.name, k, v)
        names = list(self.inputs) + list(self.outputs) + list(self.uniforms)
        if split is not None:
            names += [f"{split.name}_begin", f"{split.name}_end"]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"{self.name}: a name is used twice among inputs, outputs and "
                             f"uniforms: {sorted(dup)}")
        for k, spec in self.inputs.items():
            if spec.like is not None and spec.like not in self.outputs and \
                    spec.like not in self.inputs:
                raise ValueError(f"{self.name}: input {k!r} is declared like {spec.like!r}, "
                                 "which is no input or output of the kernel")
        self.loop = loop
        self.hint = hint
        self.work = work
        self._checked = False

    # ---- declaration checks against the source --------------------------------------------
    def check_source(self, text: str) -> None:
        """Refuse a source that declares its own uniforms or reads undeclared texel layouts."""
        if self._checked:
            return
        own = [u for u in _UNIFORM_DECL.findall(text)]
        if own:
            raise ValueError(f"{self.name}: the shader declares uniform(s) {own}; declare them "
                             "in the Kernel's uniforms= instead (the engine generates the "
                             "declarations and checks every call)")
        for k, spec in self.inputs.items():
            if not spec.texel_safe and not spec.buffer and \
                    re.search(rf"\b{k}_(texel|coord)\s*\(", text):
                raise ValueError(
                    f"{self.name}: the shader reads input {k!r} by texel ({k}_texel/{k}_coord) "
                    f"but declares no layout for it: declare In(like=...) or In(packed=..., "
                    f"order=...), or read it by element ({k}_at / {k}_get)")
        self._checked = True

    # ---- a call -----------------------------------------------------------------------------
    def check_call(self, inputs: dict, outputs: dict, uniforms: dict, defines: dict | None,
                   partial: bool = False):
        """Validate one call; returns (uniform values, defines). Raises before any GL work."""
        name = self.name
        unknown = set(inputs) - set(self.inputs)
        if unknown:
            raise ValueError(f"{name}: unknown input(s) {sorted(unknown)}; the kernel takes "
                             f"{sorted(self.inputs) or 'none'}")
        missing = set(self.inputs) - set(inputs)
        if missing:
            raise ValueError(f"{name}: missing input(s) {sorted(missing)}")
        if set(outputs) != set(self.outputs):
            raise ValueError(f"{name}: the kernel writes {list(self.outputs)}, got outputs "
                             f"{list(outputs)}")
        for k, spec in self.inputs.items():
            a = inputs[k]
            lay = getattr(a, "layout", None)
            if lay is None:
                raise TypeError(f"{name}: input {k!r} must be a device array, got "
                                f"{type(a).__name__}")
            if getattr(a, "released", False):
                raise ValueError(f"{name}: input {k!r} has been released")
            is_block = lay.kind[0] == "block"
            if bool(spec.block) != is_block:
                raise ValueError(f"{name}: input {k!r} must be "
                                 + ("a BlockArray (uniform block)" if spec.block else
                                    "a texture or buffer array, got a BlockArray"))
            if is_block:
                continue
            is_buf = lay.kind[0] == "buffer"
            if spec.buffer is True and not is_buf:
                raise ValueError(f"{name}: input {k!r} must be a BufferArray")
            if spec.buffer is False and is_buf:
                raise ValueError(f"{name}: input {k!r} must be a texture array, got a "
                                 "BufferArray")
            if spec.packed is not None and lay.packed != spec.packed:
                raise ValueError(f"{name}: input {k!r} must be "
                                 f"{'packed' if spec.packed else 'unpacked'}")
            if spec.order is not None and lay.order != spec.order:
                raise ValueError(f"{name}: input {k!r} must be in {spec.order} order, got "
                                 f"{lay.order}")
            if spec.like is not None:
                ref = outputs.get(spec.like, inputs.get(spec.like))
                rl = ref.layout
                if (lay.rows, lay.cols, lay.packed, lay.order, lay.kind) != \
                        (rl.rows, rl.cols, rl.packed, rl.order, rl.kind):
                    raise ValueError(
                        f"{name}: input {k!r} must have the layout of {spec.like!r} (the kernel "
                        f"reads them texel by texel): {_describe(lay)} vs {_describe(rl)}")
        vals = {}
        for k, v in uniforms.items():
            if k not in self.uniforms:
                raise ValueError(f"{name}: unknown uniform {k!r}; the kernel takes "
                                 f"{sorted(self.uniforms) or 'none'}")
            vals[k] = check_uniform(name, k, self.uniforms[k][0], v)
        for k, (t, default) in self.uniforms.items():
            if k not in vals:
                if default is not None:
                    vals[k] = default
                elif not partial:
                    raise ValueError(f"{name}: missing uniform {k!r} ({t})")
        return vals, self.resolve_defines(defines)

    def resolve_defines(self, defines: dict | None) -> dict:
        d = dict(self.defines)
        for k, v in (defines or {}).items():
            if k not in self.defines:
                raise ValueError(f"{self.name}: unknown define {k!r}; declared: "
                                 f"{sorted(self.defines) or 'none'}")
            d[k] = _define_value(self.name, k, v)
        return d

    def trips(self, layouts: dict, uniforms: dict, defines: dict) -> tuple[int, int]:
        """(loop iterations per fragment of one unsplit pass, split range length or 0)."""
        args = Args(layouts, uniforms, defines)
        n = int(self.loop(args)) if self.loop is not None else 0
        if self.split is None:
            return n, 0
        length = int(self.split.length(args))
        cost, extra = self.split_cost(args)
        return max(n, length * cost + extra), length

    def split_cost(self, args) -> tuple[int, int]:
        """(cost, extra) of the split for this call: ints, or functions of :class:`Args`."""
        s = self.split
        cost = int(s.cost(args)) if callable(s.cost) else int(s.cost)
        extra = int(s.extra(args)) if callable(s.extra) else int(s.extra)
        return max(1, cost), max(0, extra)

    def slices(self, layouts: dict, uniforms: dict, defines: dict, cap: int | None,
               at_least: int = 1) -> list[tuple[int, int]]:
        """The split range cut into passes that respect ``cap``; [] when the kernel has no
        split. Raises :class:`LoopBudgetError` when no cut can respect the cap."""
        total, length = self.trips(layouts, uniforms, defines)
        s = self.split
        if s is None:
            if cap is not None and total > cap:
                raise LoopBudgetError(self._over(total, cap))
            return []
        if length <= 0:
            return [(0, 0)]
        n = max(1, int(at_least))
        cost, extra = self.split_cost(Args(layouts, uniforms, defines))
        if cap is not None:
            room = cap - extra
            if room < cost * s.align:
                raise LoopBudgetError(self._over(total, cap))
            n = max(n, ceil_div(length * cost, room))
        units = ceil_div(length, s.align)
        if cap is not None:  # parts of equal size can round up past the cap: bound the part
            n = max(n, ceil_div(units, (cap - extra) // (cost * s.align)))
        n = min(n, units)
        per = ceil_div(units, n)
        cuts = []
        lo = 0
        while lo < length:
            hi = min(length, lo + per * s.align)
            cuts.append((lo, hi))
            lo = hi
        if cap is not None and max((hi - lo) * cost + extra for lo, hi in cuts) > cap:
            raise LoopBudgetError(self._over(total, cap))
        return cuts

    def _over(self, total: int, cap: int) -> str:
        msg = (f"{self.name}: one fragment would run {total:,} loop iterations, more than this "
               f"device's loop cap of {cap:,} (Mesa llvmpipe silently stops longer loops)")
        return msg + (f"; {self.hint}" if self.hint else "")

    # ---- convenience: call with the device taken from the arrays -------------------------------
    def _route(self, named: dict):
        inputs, uniforms = {}, {}
        for k, v in named.items():
            (inputs if k in self.inputs else uniforms)[k] = v
        return inputs, uniforms

    def __call__(self, outputs, *, blend=False, rect=None, defines=None, slices=None, **named):
        """Run one (or, when split, several) passes: ``K(out, X=x, alpha=2.0)``."""
        inputs, uniforms = self._route(named)
        dev = _device_of(outputs)
        return dev.run(self, outputs, inputs=inputs, uniforms=uniforms, defines=defines,
                       blend=blend, rect=rect, slices=slices)

    def prepare(self, outputs, *, blend=False, rect=None, defines=None, **named):
        """A reusable :class:`~shadergpgpu.engine.passes.Pass` for tight loops."""
        inputs, uniforms = self._route(named)
        return _device_of(outputs).prepare(self, outputs, inputs=inputs, uniforms=uniforms,
                                           defines=defines, blend=blend, rect=rect)

    def __repr__(self):
        return (f"Kernel({self.name!r}, inputs={list(self.inputs)}, outputs="
                f"{list(self.outputs)}, uniforms={list(self.uniforms)})")


def _define_value(kname, k, v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, numbers.Integral):
        return int(v)
    if isinstance(v, numbers.Real):
        return float(v)
    raise TypeError(f"{kname}: define {k!r} must be a number, got {v!r}")


def _describe(lay) -> str:
    if lay.kind[0] == "buffer":
        return f"buffer {lay.rows}x{lay.cols}"
    return (f"{lay.rows}x{lay.cols} {'packed' if lay.packed else 'unpacked'} "
            f"{lay.order}-order")


def _device_of(outputs):
    if isinstance(outputs, dict):
        first = next(iter(outputs.values()))
    elif isinstance(outputs, (list, tuple)):
        first = outputs[0]
    else:
        first = outputs
    dev = getattr(first, "device", None)
    if dev is None:
        raise TypeError("outputs must be device arrays")
    return dev


def uniform_declarations(kernel: Kernel) -> str:
    """GLSL declarations of the kernel's uniforms and split range."""
    lines = [f"uniform {t} {k};" for k, (t, _) in kernel.uniforms.items()]
    if kernel.split is not None:
        n = kernel.split.name
        lines += [f"uniform int {n}_begin;", f"uniform int {n}_end;"]
    return "\n".join(lines)


@dataclass
class _Registry:
    """Kernels declared by the library, by name (for exports and the ES compile check)."""

    kernels: dict = field(default_factory=dict)


REGISTRY = _Registry()


def declare(*args, **kwargs) -> Kernel:
    """Declare a library kernel (a :class:`Kernel` recorded in the registry)."""
    k = Kernel(*args, **kwargs)
    REGISTRY.kernels[k.name] = k
    return k
