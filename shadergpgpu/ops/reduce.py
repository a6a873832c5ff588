"""Reductions on the device: sum, arg-min and arg-max, as multi-pass gathers.

Every level is one render pass in which each output texel gathers ``fanin`` texels of the level
below (texel ``t = f + k * stride`` for output texel ``f``, so at every step neighbouring
fragments read neighbouring texels); the last level writes a single texel. A vector of ``n``
packed values (``ceil(n / 4)`` texels) takes ``ceil(log_fanin(ceil(n / 4)))`` passes (at least
one); see :func:`passes` and the registered pass plan ``reduce/sum`` / ``reduce/argbest``.

Arg-min / arg-max keep values and indices in separate textures (structure of arrays) and pick
with select-style code (``mix`` with a ``bvec``); ties go to the lower index, so the result
equals :func:`numpy.argmin` / :func:`numpy.argmax` exactly. Indices travel as float32, which
holds every integer up to 2**24 exactly; longer inputs are refused with a ValueError.

    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.ops import reduce
    >>> dev = sg.Device()
    >>> x = dev.array(np.arange(10.0))
    >>> reduce.total(dev, x)                      # 45.0
    >>> reduce.argmax(dev, x)                     # (9.0, 9)
    >>> reduce.argmin(dev, x, mask=np.arange(10) > 3)   # (4.0, 4)

The device-resident variants (:func:`total_device`, :func:`argmin_device`, :func:`argmax_device`)
return a small :class:`~shadergpgpu.engine.arrays.DeviceArray` so later passes can read the result
without a readback. :class:`ArgReduction` and :class:`SumReduction` are the reusable, prepared
pass chains the algorithms (SMO, Sammon) build on; an :class:`ArgReduction` accepts a custom
first-level shader whose ``candidates()`` computes the values on the fly (see
``shaders/reduce/argbest_core.glsl``).
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..engine.arrays import DeviceArray, as_float32
from ..engine.layout import Layout
from ..engine.limits import ceil_div
from ..engine.plans import PassPlan, register_plan

#: Indices are exact in float32 up to here (exclusive); longer arg-reductions are refused.
MAX_INDEX = 2 ** 24
#: First levels over row-order sources compare values only (each lane meets its candidates in
#: increasing index order); False forces the full (value, index) comparison everywhere.
SCAN_STRICT = True
#: Texels gathered per fragment and pass. Chosen by measurement (benchmarks/svm.py, fan-in
#: sweep): on the H200 and on llvmpipe 16..32 are within a few percent of the best, and 16 keeps
#: the pass count low for the vector lengths the trainers use.
DEFAULT_FANIN = 16


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
    """Passes one reduction takes over a vector of ``n`` elements."""
    return len(level_sizes(ceil_div(int(n), 4 if packed else 1), fanin))


for _name, _notes in (
        ("reduce/sum", "one gather pass per level; the last level also adds the four lanes"),
        ("reduce/argbest", "arg-min or arg-max, values and indices written by the same pass "
                           "(two targets); the mask is applied in the first level")):
    register_plan(PassPlan(
        name=_name,
        formula="max(1, ceil(log_F(ceil(n / 4))))  (F = fan-in, packed vector of n values)",
        phases=lambda n, fanin=DEFAULT_FANIN, packed=True: {"reduce": passes(n, fanin, packed)},
        notes=_notes,
        params=("n", "fanin", "packed")))


def _vector_layout(dev, texels: int) -> Layout:
    """A packed 1 x (4 * texels) row: one RGBA texel per partial result."""
    return Layout(1, 4 * int(texels), True, "row", dev.max_texture_size)


def result_array(dev, slots: int = 1) -> DeviceArray:
    """A small packed vector of ``slots`` texels that reductions write their results into."""
    return dev._new((4 * int(slots),), _vector_layout(dev, slots))


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
    if fanin > 4096:
        raise ValueError(f"fanin must be at most 4096, got {fanin}")
    return int(fanin)


class _Chain:
    """Prepared passes of one reduction and the intermediate textures they own."""

    def __init__(self, dev):
        self.device = dev
        self.passes = []
        self._owned: list[DeviceArray] = []

    def run(self) -> None:
        for p in self.passes:
            p.run()

    def release(self) -> None:
        for a in self._owned:
            a.release()
        self._owned.clear()
        self.passes = []

    @property
    def n_passes(self) -> int:
        return len(self.passes)


class SumReduction(_Chain):
    """Sum of every logical element of arrays of one layout, into ``result`` texel ``slot``.

    ``run()`` issues the passes; ``bind(arr)`` points the chain at another array of the same
    layout. The sum is in ``result``'s texel ``slot``, component x.
    """

    def __init__(self, dev, layout: Layout, result: DeviceArray | None = None, slot: int = 0,
                 fanin: int | None = None, source: DeviceArray | None = None):
        super().__init__(dev)
        fanin = _check_fanin(fanin)
        if result is None:
            result = dev._new((1,), Layout(1, 1, True, "row", dev.max_texture_size))
            self._owned.append(result)
        self.result, self.slot, self.fanin, self.layout = result, int(slot), fanin, layout
        src = source if source is not None else _Placeholder(layout)
        levels = level_sizes(layout.n_texels, fanin)
        for n, m in levels:
            final = m == 1
            defines = {"FANIN": fanin}
            if final:
                defines["FINAL"] = 1
                out, rect, sl = result, _slot_rect(result, slot), int(slot)
            else:
                out = dev._new((4 * m,), _vector_layout(dev, m))
                self._owned.append(out)
                rect, sl = None, 0
            self.passes.append(dev.prepare("reduce/sum.frag", out, inputs={"X": src},
                                           uniforms={"stride": m, "slot": sl},
                                           defines=defines, rect=rect))
            src = out

    def bind(self, arr: DeviceArray) -> "SumReduction":
        self.passes[0].bind(X=arr)
        return self


class _Placeholder:
    """Stands in for an input array until :meth:`bind` supplies one of this layout."""

    def __init__(self, layout):
        self.layout = layout
        self.released = False

    @property
    def signature(self):
        return self.layout

    def glsl_input(self, name):
        return self.layout.glsl_input(name)

    def bind(self, unit):
        raise ValueError("this reduction has no input bound yet; call bind(array) first")


class ArgReduction(_Chain):
    """Arg-min or arg-max as a chain of prepared passes.

    Parameters
    ----------
    mode : "min" or "max".
    first_shader, first_inputs, first_defines : the first level's shader (it defines
        ``candidates()`` and includes ``reduce/argbest_core.glsl``), its inputs and defines.
    n_src : texels the first level walks (``t`` in ``candidates(t, ...)``).
    result, slot : the winner is written as (value, index, payload, 0) into ``result``'s
        texel ``slot``; index is ``MAX_INDEX`` (as float) when nothing was eligible.
    payload : optional array; the final pass stores ``payload[index]`` (flat) in component z.
    strict_scan : the first level's candidate indices grow with ``t`` in every lane (true
        for row-order sources), so it may compare values only (see ``SCAN_STRICT``).
    dual : a second reduction (the first shader's ``candidates2()``) runs in the same passes
        (two more render targets); its winner goes to texel ``slot + 1``.
    """

    def __init__(self, dev, mode: str, first_shader: str, first_inputs: dict, n_src: int,
                 result: DeviceArray, slot: int = 0, payload: DeviceArray | None = None,
                 first_defines: dict | None = None, fanin: int | None = None,
                 dual: bool = False, strict_scan: bool = False):
        super().__init__(dev)
        if mode not in ("min", "max"):
            raise ValueError(f"mode must be 'min' or 'max', got {mode!r}")
        fanin = _check_fanin(fanin)
        self.result, self.slot, self.fanin, self.mode = result, int(slot), fanin, mode
        shader, inputs, extra = first_shader, dict(first_inputs), dict(first_defines or {})
        for level, (n, m) in enumerate(level_sizes(int(n_src), fanin)):
            defines = dict(extra, FANIN=fanin, MODE_MAX=int(mode == "max"))
            if dual:
                defines["DUAL"] = 1
            ins = dict(inputs)
            if strict_scan and level == 0 and SCAN_STRICT:
                defines["SCAN_STRICT"] = 1
            if m == 1:
                defines["FINAL"] = 1
                if payload is not None:
                    defines["PAYLOAD"] = 1
                    ins["P0"] = payload
                outs = {"RES": result}
                rect, sl = _slot_rect(result, slot, 2 if dual else 1), int(slot)
            else:
                names = ("VAL", "IDX", "VAL2", "IDX2") if dual else ("VAL", "IDX")
                outs = {k: dev._new((4 * m,), _vector_layout(dev, m)) for k in names}
                self._owned += list(outs.values())
                rect, sl = None, 0
            self.passes.append(dev.prepare(shader, outs, inputs=ins,
                                           uniforms={"stride": m, "slot": sl, "n_src": n},
                                           defines=defines, rect=rect))
            if m > 1:
                shader, extra = "reduce/argbest.frag", {}
                inputs = {"V": outs["VAL"], "I": outs["IDX"]}
                if dual:
                    inputs.update(V2=outs["VAL2"], I2=outs["IDX2"])

    def bind_first(self, **arrays) -> "ArgReduction":
        """Swap the first level's inputs for arrays of the same layouts."""
        self.passes[0].bind(**arrays)
        return self


# ---- the simple API ---------------------------------------------------------------------------
#: Prepared chains kept per device (least recently used beyond this are released).
CACHE_SIZE = 16


def _cache(dev) -> "OrderedDict":
    """This device's chain cache, stored on the device itself (it goes away with the device)."""
    c = dev.__dict__.get("_reduce_cache")
    if c is None:
        c = dev.__dict__["_reduce_cache"] = OrderedDict()
    return c


def _cached(dev, key, build):
    """The cached entry for ``key`` (built on a miss), evicting and releasing the oldest."""
    c = _cache(dev)
    entry = c.get(key)
    if entry is None:
        entry = c[key] = build()
        while len(c) > CACHE_SIZE:
            _, old = c.popitem(last=False)
            old.release()
    else:
        c.move_to_end(key)
    return entry


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
    a = as_float32(arr, name)
    if a.ndim not in (1, 2) or a.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D or 2-D array, got shape {a.shape}")
    if check_nan and np.isnan(a).any():
        raise ValueError(f"{name} contains NaN")
    return dev.array(a, name=name), True


def total_device(dev, arr, fanin: int | None = None) -> DeviceArray:
    """Sum of all logical elements of ``arr`` (padding excluded) as a (1,) DeviceArray.

    ``arr`` is a DeviceArray of any layout (packed or not, row or column order, wrapped) or a
    1-D / 2-D numpy array (uploaded packed). Partial sums are float32, added in a tree of
    ``fanin``-long runs, so the rounding error grows like ``fanin * log_fanin(n) * eps``
    rather than ``n * eps``. The caller owns (and may release) the returned array.
    """
    a, mine = _as_device(dev, arr, "arr", check_nan=False)
    fanin = _check_fanin(fanin)
    out = dev._new((1,), Layout(1, 1, True, "row", dev.max_texture_size))
    try:
        red = _cached(dev, ("sum", a.layout, fanin), lambda: _SumPlain(dev, a.layout, fanin))
        red.run(a, out)
    except BaseException:
        out.release()
        raise
    finally:
        if mine:
            a.release()
    return out


class _SumPlain:
    """A cached SumReduction whose source and result are bound per call."""

    def __init__(self, dev, layout, fanin):
        self.scratch = dev._new((1,), Layout(1, 1, True, "row", dev.max_texture_size))
        self.chain = SumReduction(dev, layout, result=self.scratch, fanin=fanin)

    def run(self, arr, out):
        ps = self.chain.passes
        try:
            if len(ps) == 1:
                ps[0].bind(X=arr, OUT=out)
            else:
                ps[-1].bind(OUT=out)
                ps[0].bind(X=arr)
            self.chain.run()
        finally:  # keep no caller's array bound while cached
            if len(ps) == 1:
                ps[0].bind(X=_Placeholder(arr.layout), OUT=self.scratch)
            else:
                ps[-1].bind(OUT=self.scratch)
                ps[0].bind(X=_Placeholder(arr.layout))

    def release(self):
        self.chain.release()
        self.scratch.release()


class _ArgPlain:
    """A cached ArgReduction whose inputs and result are bound per call."""

    def __init__(self, dev, mode, layout, mask_layout, defines, fanin):
        self.scratch = dev._new((2,), Layout(1, 2, True, "row", dev.max_texture_size))
        self.idle = {"V": _Placeholder(layout)}
        if mask_layout is not None:
            self.idle["M"] = _Placeholder(mask_layout)
        self.chain = ArgReduction(dev, mode, "reduce/argbest.frag", dict(self.idle),
                                  layout.n_texels, self.scratch, 0, first_defines=defines,
                                  fanin=fanin, strict_scan=layout.order == "row")

    def run(self, first, out):
        chain = self.chain
        try:
            if chain.n_passes == 1:
                chain.bind_first(RES=out, **first)
            else:
                chain.passes[-1].bind(RES=out)
                chain.bind_first(**first)
            chain.run()
        finally:  # keep no caller's array bound while cached
            if chain.n_passes == 1:
                chain.bind_first(RES=self.scratch, **self.idle)
            else:
                chain.passes[-1].bind(RES=self.scratch)
                chain.bind_first(**self.idle)

    def release(self):
        self.chain.release()
        self.scratch.release()


def total(dev, arr, fanin: int | None = None) -> float:
    """Sum of all logical elements of ``arr`` as a Python float (one 1-texel readback)."""
    out = total_device(dev, arr, fanin)
    try:
        return float(out.get()[0])
    finally:
        out.release()


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
    return dev.array(mk.astype(np.float32), packed=a.layout.packed, order=a.layout.order,
                     name="mask"), True


def _arg_device(dev, arr, mask, mode: str, fanin, check_nan: bool):
    a, mine = _as_device(dev, arr, "arr", check_nan)
    m, mmine = None, False
    try:
        if a.size >= MAX_INDEX:
            raise ValueError(f"arr has {a.size} elements; arg-reductions carry indices as "
                             f"float32, exact only below 2**24 = {MAX_INDEX}")
        fanin = _check_fanin(fanin)
        defines = {"FIRST": 1}
        if mask is not None:
            m, mmine = _as_mask(dev, mask, a)
            defines["MASKED"] = 1
            if m.layout == a.layout:
                defines["MASK_SAME"] = 1
        mlayout = None if m is None else m.layout
        key = ("arg", mode, a.layout, mlayout, fanin, SCAN_STRICT)
        red = _cached(dev, key, lambda: _ArgPlain(dev, mode, a.layout, mlayout, defines, fanin))
        out = dev._new((2,), Layout(1, 2, True, "row", dev.max_texture_size))
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
    eligible the value is +inf and the index ``MAX_INDEX``. A NaN among the eligible values
    wins, so the value read back is NaN.
    """
    return _arg_device(dev, arr, mask, "min", fanin, check_nan=True)


def argmax_device(dev, arr, mask=None, fanin: int | None = None) -> DeviceArray:
    """Arg-max on the device: a (2,) DeviceArray (value, index); see :func:`argmin_device`."""
    return _arg_device(dev, arr, mask, "max", fanin, check_nan=True)


def _arg_host(dev, arr, mask, mode, fanin):
    out = _arg_device(dev, arr, mask, mode, fanin, check_nan=True)
    try:
        v, i = (float(x) for x in out.get())
    finally:
        out.release()
    if np.isnan(v):
        raise ValueError("arr contains NaN")
    if i >= MAX_INDEX:
        raise ValueError("mask selects no element")
    return v, int(i)


def argmin(dev, arr, mask=None, fanin: int | None = None) -> tuple[float, int]:
    """(min value, flat index of its first occurrence) over the eligible elements of ``arr``.

    Equals ``(arr.flat[k], k)`` with ``k = numpy.argmin(arr)`` (row-major flat index, ties to
    the lowest index). ``mask``: same shape, nonzero = eligible. NaN in the eligible values
    and an all-zero mask raise ValueError.
    """
    return _arg_host(dev, arr, mask, "min", fanin)


def argmax(dev, arr, mask=None, fanin: int | None = None) -> tuple[float, int]:
    """(max value, flat index of its first occurrence); see :func:`argmin`."""
    return _arg_host(dev, arr, mask, "max", fanin)
