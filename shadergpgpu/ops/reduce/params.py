"""Checking what a ReductionKernel is given: parameter lists, expressions, identities, operands.

Parameter texts (``"float32 x, float32 y"``) and GLSL expressions are checked against the names
they may use; identities given as C text (``"-INFINITY"``) become numbers; numpy operands are
converted to float32 under the library's rule (:func:`host_operand`), scalars checked, and
inputs of the sums and arg-reductions validated (:func:`as_device`).
"""
from __future__ import annotations

import numbers
import re

import numpy as np

from ...engine.arrays import DeviceArray
from ...engine.validation import device_values


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


def parse_params(text, what: str) -> list[tuple[str, str]]:
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


def check_names(expr: str, what: str, allowed: set) -> None:
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


def vec4_safe(expr: str) -> bool:
    """Whether applying ``expr`` to vec4 operands means the same, lane by lane (no functions
    that fold a vector, no constructors or conversions (``float(v)`` takes one lane), no
    swizzles); otherwise the lane loop runs."""
    return _VEC_CHANGES_MEANING.search(expr) is None


class AlwaysScalar(dict):
    def get(self, key, default=None):
        return False

    def __setitem__(self, key, value):
        pass


def float_literal(v: float) -> str:
    """A GLSL expression of exactly float32 ``v`` (infinities included)."""
    bits = int(np.array([v], np.float32).view(np.uint32)[0])
    return f"uintBitsToFloat(0x{bits:08X}u)"


def host_operand(x, name: str) -> np.ndarray:
    """A numpy operand as float32 under the library's conversion rule
    (:func:`shadergpgpu.engine.validation.device_values`)."""
    return device_values(x, name)


def scalar_operand(v, name: str) -> float:
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


def identity_text(kname: str, text: str) -> float:
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


def as_device(dev, arr, name: str, check_nan: bool):
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
