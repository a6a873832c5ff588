"""Arg-min / arg-max on the device: exact, values ranked by their ordered bits.

:func:`arg_kernels` declares a level's kernels (the library's first levels :data:`ARG_FIRST`,
next levels :data:`ARG_NEXT` / :data:`ARG_NEXT_DUAL`, or a caller's ``candidates()``),
:class:`ArgReduction` chains them, and :func:`argmin` / :func:`argmax` (host) and
:func:`argmin_device` / :func:`argmax_device` run them on an array with an optional mask.
The comparisons and fetches follow the device's :class:`~shadergpgpu.ops.tuning.ReduceTuning`
(``scan_strict``, ``arg_fetch_batch``), read when a reduction is prepared.
"""
from __future__ import annotations

import numpy as np

from ...engine.arrays import DeviceArray
from ...engine.kernels import In, declare
from ...engine.layout import Layout
from .chain import Chain, Placeholder, dummy_array, slot_rect, vector_layout
from .levels import DEFAULT_FANIN, fanin_for, level_sizes
from .params import as_device
from ..tuning import ReduceTuning
from ...engine.validation import pick_device

#: Indices are exact in float32 up to here (exclusive); longer arg-reductions are refused.
MAX_INDEX = 2 ** 24


# ---- arg-min / arg-max ---------------------------------------------------------------------------
_ARG_UNIFORMS = {"stride": "int", "slot": "int", "n_src": "int"}
_ARG_DEFINES = {"FANIN": DEFAULT_FANIN, "MODE_MAX": 0, "SCAN_STRICT": 0, "PAYLOAD": 0,
                "MASKED": 0, "FETCH_BATCH": 0}


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
        for row-order sources), so it may compare values only (see ``ReduceTuning.scan_strict``).
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
        tuning = dev.tuning(ReduceTuning)
        self.result, self.slot, self.fanin, self.mode = result, int(slot), fanin, mode
        p0 = payload if payload is not None else dummy_array(dev)
        ins = dict(first_inputs, P0=p0)
        fu = dict(first_uniforms or {})
        fd = dict(first_defines or {})
        if "FAST" in first[False].defines and "FAST" not in fd:
            fd["FAST"] = int(_all_live(getattr(first_inputs.get("V"), "layout", None)))
        nxt = ARG_NEXT_DUAL if dual else ARG_NEXT

        def defines(level, final):
            d = dict(fd) if level == 0 else {}
            d.update(FANIN=fanin, MODE_MAX=int(mode == "max"),
                     FETCH_BATCH=tuning.arg_fetch_batch,
                     SCAN_STRICT=int(bool(strict_scan and level == 0 and tuning.scan_strict)),
                     PAYLOAD=int(payload is not None))
            return d

        def next_inputs(outs):
            d = {"V": outs["VAL"], "I": outs["IDX"], "P0": p0}
            if dual:
                d.update(V2=outs["VAL2"], I2=outs["IDX2"])
            return d

        names = ("VAL", "IDX", "VAL2", "IDX2") if dual else ("VAL", "IDX")
        self._build(level_sizes(int(n_src), fanin), first, nxt, ins, result,
                    lambda: (slot_rect(result, slot, 2 if dual else 1), int(slot)),
                    lambda level: fu if level == 0 else {}, defines, names, next_inputs,
                    lambda m: vector_layout(dev, m))

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
        m, _ = as_device(dev, mask, "mask", check_nan=False)
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
    a, mine = as_device(dev, arr, "arr", check_nan)
    m, mmine = None, False
    try:
        if a.size >= MAX_INDEX:
            raise ValueError(f"arr has {a.size} elements; arg-reductions carry indices as "
                             f"float32, exact only below 2**24 = {MAX_INDEX}")
        fanin = fanin_for(dev, fanin)
        if mask is not None:
            m, mmine = _as_mask(dev, mask, a)
        mlayout = None if m is None else m.layout
        key = ("sg.reduce", "arg", mode, a.layout, mlayout, fanin, dev.tuning(ReduceTuning))
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
    dev.report("api:reduce")     # an entry point: its own host work, reported
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
    rounded to float32).

    Parameters
    ----------
    dev : Device
        The device to run on.
    arr : DeviceArray or array_like
        A 1-D or 2-D array.
    mask : array_like or None, default=None
        Same shape as ``arr``, nonzero = eligible; None: every element.
    fanin : int or None, default=None
        Texels one fragment of a level compares, at least 2; None: the device's default.

    Returns
    -------
    (float, int)
        The value and its row-major flat index.

    Raises
    ------
    ValueError
        A mask that selects no element, shapes that differ, an empty array, more elements
        than float32 indices reach (``MAX_INDEX``).

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.ops.reduce import argmin, argmax
    >>> dev = sg.Device()
    >>> argmin(dev, np.array([[3.0, -0.0], [0.0, 1e-45]]))   # -0.0 == +0.0: the first wins
    (-0.0, 1)
    >>> argmax(dev, np.array([1.0, 5.0, 5.0]), mask=np.array([1, 0, 1]))
    (5.0, 2)
    """
    return _arg_host(dev, arr, mask, "min", fanin)


def argmax(dev, arr, mask=None, fanin: int | None = None) -> tuple[float, int]:
    """(max value, flat index of its first occurrence): ``k = numpy.argmax(arr)`` exactly,
    the first NaN included.

    Parameters
    ----------
    dev, arr, mask, fanin
        As :func:`argmin`.

    Returns
    -------
    (float, int)
        The value and its row-major flat index.

    Examples
    --------
    >>> import numpy as np, shadergpgpu as sg
    >>> from shadergpgpu.ops.reduce import argmax
    >>> argmax(sg.Device(), np.array([2.0, np.nan, 7.0]))     # the first NaN wins
    (nan, 1)
    """
    return _arg_host(dev, arr, mask, "max", fanin)


def index_of_min(a, device=None) -> int:
    """``numpy.argmin(a)`` (the flat index, ties to the lowest) computed on the device, exactly:
    ``sg.argmin``. See :func:`argmin` for the value as well.

    Parameters
    ----------
    a : array_like or DeviceArray
        A 1-D or 2-D array (float64 is rounded to float32 first).
    device : Device or None, default=None
        The device to run on; None: ``a``'s device, else the thread's default device.

    Returns
    -------
    int
        The row-major flat index of the first smallest element; the first NaN wins, as in
        numpy. Exact: values are ranked by their ordered bits.

    Raises
    ------
    ValueError
        An empty array, one of more than 2 dimensions, more elements than float32 indices
        reach (``MAX_INDEX``), values float32 cannot hold.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> sg.argmin(np.array([3.0, 1.0, 2.0, 1.0]))            # ties to the lowest index
    1
    """
    return argmin(pick_device(device, [a]), a)[1]


def index_of_max(a, device=None) -> int:
    """``numpy.argmax(a)`` (the flat index, ties to the lowest) computed on the device, exactly:
    ``sg.argmax``. See :func:`argmax` for the value as well.

    Parameters
    ----------
    a : array_like or DeviceArray
        A 1-D or 2-D array (float64 is rounded to float32 first).
    device : Device or None, default=None
        The device to run on; None: ``a``'s device, else the thread's default device.

    Returns
    -------
    int
        The row-major flat index of the first largest element; the first NaN wins, as in
        numpy.

    Raises
    ------
    ValueError
        As :func:`index_of_min`.

    Examples
    --------
    >>> import numpy as np
    >>> import shadergpgpu as sg
    >>> sg.argmax(np.array([[1.0, 9.0], [9.0, 0.0]]))        # the flat index
    1
    >>> dev = sg.Device()
    >>> sg.argmax(dev.array(np.array([0.5, np.nan, 2.0])))    # the first NaN wins
    1
    """
    return argmax(pick_device(device, [a]), a)[1]
