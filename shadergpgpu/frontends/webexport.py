"""Programs: recorded computations that take new inputs, run in any browser (WebGL2).

A trace (:mod:`shadergpgpu.engine.trace`) replays the data it recorded. A *program* is a trace
bundle whose uploads of the user's data are named inputs and whose readbacks are named outputs:
``shadergpgpu/web/program.js`` runs it on new data of any row count from 1 to ``max_rows``
(fixed when the program is made), without recording again::

    const p = await SGProgram.load("model.sgprog");
    const out = p.run({X: float32Array, rows: n});      // {name: Float32Array}

How a row count reaches the passes. The computation is recorded at ``max_rows`` rows and at four
fewer, and the two records are compared: where they differ only in textures whose height
is the row count (or the count of blocks of 2 or 4 rows) and in uniforms (or uniform components)
that hold it, every pass that writes those textures touches rows independently, and the program
runs ``n`` rows by drawing only the first ``n`` (``ceil(n / q)``) texture rows (the viewport)
with those uniforms set to match, and reading back ``n`` rows: the work is proportional to ``n``
(``mode = "rows"``); three more records (one, two and three rows fewer) must be what that
rewiring makes of the first, so a size that only looks like a row count at multiples of 4 (a
multiple of ``ceil(rows / 4)``) is not mistaken for one. Otherwise (a layout whose
width depends on the row count, such as column-ordered points) the program runs at ``max_rows``
with the input's rows past ``n`` zero and returns the first ``n`` rows of each output (``mode =
"pad"``): any row-independent computation. The layout math the Python side owns (where element
(r, c) of a matrix lies in a texture) is exported with each input and output.

The bundle keeps every integrity check of the trace bundle (format, lengths, CRC-32 of the
header and of every chunk, every reference), and the program's own description (inputs, outputs,
the rows rewiring, the host steps before and after) is checked too, all before anything is drawn:
a damaged program is refused, never run.

:func:`export_web` makes programs of fitted estimators (``MLPClassifier``, ``MLPRegressor``,
``KMeans``, ``SVC``); :func:`run_programs` runs programs in headless Chromium
(:mod:`.browser`); ``python -m shadergpgpu web-run PROGRAM --input X=x.npy -o out.npz`` is the
command.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

from ..engine.bundle import POST_KINDS, BundleError, dumps, loads  # noqa: F401 (POST_KINDS)

PROGRAM_VERSION = 1


class ProgramError(ValueError):
    """A computation cannot become a program (the message says why)."""


# ---- recording ------------------------------------------------------------------------------
def _example(rows: int, cols: int, seed: int) -> np.ndarray:
    """Recognisable input data for a record (its upload is found by its bytes)."""
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (rows, cols)).astype(np.float32)


def _record(dev, fn, cols: dict, rows: int, seed: int):
    from ..engine.trace import trace
    X = {name: _example(rows, c, seed + i) for i, (name, c) in enumerate(cols.items())}
    with trace(dev) as t:
        fn(dev, X)
    meta, data = t.bundle()
    return meta, data, X, t


def _layouts_of(dev, a: np.ndarray):
    from ..engine.layout import Layout
    rows, cols = a.shape
    for packed in (True, False):
        for order in ("row", "col"):
            try:
                yield Layout(rows, cols, packed, order, dev.max_texture_size)
            except Exception:   # too large in this arrangement
                continue


def _chunk(meta, data, i) -> np.ndarray:
    c = meta["chunks"][i]
    return np.asarray(data[c["offset"] // 4:(c["offset"] + c["bytes"]) // 4])


def _find_inputs(dev, meta, data, X: dict) -> dict:
    """name -> (op index, layout) of the upload of each input (found by its bytes)."""
    found = {}
    for name, a in X.items():
        cands = [(lay, np.asarray(lay.pack_array(a), np.float32).ravel())
                 for lay in _layouts_of(dev, a)]
        for i, op in enumerate(meta["ops"]):
            if op.get("op") != "upload":
                continue
            got = _chunk(meta, data, op["data"])
            for lay, want in cands:
                if got.size == want.size and np.array_equal(got, want):
                    found.setdefault(name, (i, lay))
        if name not in found:
            raise ProgramError(f"input {name!r}: the computation did not upload it as it was "
                               "given (a host step changed it first?); a program needs the "
                               "uploads of its inputs unchanged")
    return found


def _layout_json(lay) -> dict:
    return {"rows": lay.rows, "cols": lay.cols, "packed": lay.packed, "order": lay.order,
            "max_size": lay.max_size}


ROW_DIVISORS = (1, 2, 4)


def _divisor(x, y, M: int, m: int):
    """q where ``x`` = ceil(M / q) and ``y`` = ceil(m / q) (a row count, or a count of blocks
    of q rows), else None."""
    for q in ROW_DIVISORS:
        if x == -(-M // q) and y == -(-m // q):
            return q
    return None


def _row_rewiring(A, B, M: int, m: int):
    """The rows rewiring of two records (at M and m rows), or None where they do not differ in
    row-count places only (see the module docstring)."""
    ma, mb = A[0], B[0]
    if ma["programs"] != mb["programs"] or len(ma["textures"]) != len(mb["textures"]):
        return None
    if ma["prelude"] or mb["prelude"] or ma["sections"] or mb["sections"]:
        return None
    row_tex = {}
    for s, (ta, tb) in enumerate(zip(ma["textures"], mb["textures"])):
        if ta == tb:
            continue
        q = _divisor(ta[1], tb[1], M, m)
        if ta[0] != tb[0] or q is None:
            return None
        row_tex[s] = q
    oa, ob = ma["ops"], mb["ops"]
    if len(oa) != len(ob):
        return None
    draws, reads = [], []
    for i, (a, b) in enumerate(zip(oa, ob)):
        if a.get("op") != b.get("op"):
            return None
        kind = a["op"]
        if kind == "upload":
            if a["tex"] != b["tex"]:
                return None
        elif kind == "read":
            if a["tex"] != b["tex"] or a.get("rect") is not None or b.get("rect") is not None:
                return None
            if a["tex"] in row_tex:
                reads.append(i)
        elif kind == "draw":
            for key in ("prog", "units", "out", "viewport", "blend"):
                if a.get(key) != b.get(key):
                    return None
            if set(a["uniforms"]) != set(b["uniforms"]):
                return None
            qs = {row_tex.get(t) for t in a["out"]}
            reads_rows = any(u[2] in row_tex for u in a["units"])
            if len(qs) != 1 or (reads_rows and None in qs):
                return None     # rows meet non-row outputs: not row-independent
            rowed = None not in qs
            if rowed and (a.get("viewport") is not None or a.get("blend")):
                return None
            subs = []
            for name, va in a["uniforms"].items():
                vb = b["uniforms"][name]
                if va == vb:
                    continue
                la = va if isinstance(va, list) else [va]
                lb = vb if isinstance(vb, list) else [vb]
                if len(la) != len(lb):
                    return None
                for p, (x, y) in enumerate(zip(la, lb)):
                    if x == y:
                        continue
                    q = _divisor(x, y, M, m)
                    if q is None:
                        return None
                    subs.append([name, p if isinstance(va, list) else -1, q])
            if rowed:
                draws.append([i, subs])
            elif subs:
                return None
        else:
            return None
    return {"textures": sorted([s, q] for s, q in row_tex.items()), "draws": draws,
            "reads": reads}


def _rewiring_holds(rows: dict, ma: dict, mr: dict, r: int) -> bool:
    """Whether the record ``mr`` at ``r`` rows is what ``rows`` makes of the record ``ma``
    (every row place holds ceil(r / q), everything else as in ``ma``)."""
    if ma["programs"] != mr["programs"] or len(ma["textures"]) != len(mr["textures"]) or \
            len(ma["ops"]) != len(mr["ops"]) or mr["prelude"] or mr["sections"]:
        return False
    q_of = dict(map(tuple, rows["textures"]))
    for s, (ta, tr) in enumerate(zip(ma["textures"], mr["textures"])):
        want = [ta[0], -(-r // q_of[s])] if s in q_of else ta
        if tr != want:
            return False
    subs = {i: {(n, p): q for n, p, q in sb} for i, sb in rows["draws"]}
    for i, (a, b) in enumerate(zip(ma["ops"], mr["ops"])):
        if a.get("op") != b.get("op") or a.get("tex") != b.get("tex"):
            return False
        if a["op"] != "draw":
            continue
        if any(a.get(k) != b.get(k) for k in ("prog", "units", "out", "viewport", "blend")) or \
                set(a["uniforms"]) != set(b["uniforms"]):
            return False
        at = subs.get(i, {})
        for name, va in a["uniforms"].items():
            la = va if isinstance(va, list) else [va]
            lb = b["uniforms"][name]
            lb = lb if isinstance(lb, list) else [lb]
            if len(la) != len(lb):
                return False
            for p, (x, y) in enumerate(zip(la, lb)):
                q = at.get((name, p if isinstance(va, list) else -1))
                if y != (x if q is None else -(-r // q)):
                    return False
    return True


def record_program(fn, inputs: dict, outputs: list, max_rows: int, device=None,
                   post: list | None = None, pre: dict | None = None,
                   model: dict | None = None) -> bytes:
    """The bytes of a program: ``fn(device, {name: float32 (rows, cols) array})`` recorded.

    ``inputs``: name -> number of columns; ``fn`` must upload each input as given and compute
    every row from that row alone. ``outputs``: a name for each readback ``fn`` makes, in
    order. ``post``: host steps on the outputs ({"name", "kind" (one of
    ``POST_KINDS``), "from", ...}); ``pre``: name -> {"shift", "scale"} (the input is
    ``(x - shift) / scale`` rounded to float32 before the upload); ``model``: a description
    kept in the header."""
    from ..engine.device import Device
    M = int(max_rows)
    dev = device if device is not None else Device(profile="webgl2")
    cols = {str(k): int(v) for k, v in inputs.items()}
    A = _record(dev, fn, cols, M, 1)
    m = M - 4 if M > 4 else M + 4     # ceil(rows / q) differs for every q of ROW_DIVISORS
    B = _record(dev, fn, cols, m, 1001)
    meta, data, X, t = A
    if len(outputs) != len(meta["reads"]):
        raise ProgramError(f"outputs: {len(outputs)} names for the {len(meta['reads'])} "
                           "readbacks the computation makes")
    found = _find_inputs(dev, meta, data, X)
    rows = _row_rewiring(A, B, M, m)
    if rows is not None:   # the rewiring checked at every residue of the row count mod 4
        for k, r in enumerate(range(M - 3, M) if M > 4 else range(M + 1, M + 4)):
            if not _rewiring_holds(rows, A[0], _record(dev, fn, cols, r, 2001 + k)[0], r):
                rows = None
                break
    if rows is not None:
        for name, (i, lay) in found.items():
            if lay.order != "row" or lay.wrapped or \
                    [meta["ops"][i]["tex"], 1] not in rows["textures"]:
                rows = None
                break
    if rows is not None:
        for i in rows["reads"]:
            info = meta["reads"][sum(1 for op in meta["ops"][:i] if op["op"] == "read")]
            lay = info["layout"]
            if lay is None or lay["order"] != "row" or lay["rows"] != M:
                rows = None
                break
    # the inputs' uploads become "input" operations; their chunks leave the bundle
    ops = [dict(op) for op in meta["ops"]]
    drop = set()
    spec_in = []
    for name, (i, lay) in found.items():
        drop.add(ops[i]["data"])
        ops[i] = {"op": "input", "name": name, "tex": ops[i]["tex"]}
        spec_in.append({"name": name, "cols": cols[name], "tex": ops[i]["tex"],
                        "layout": _layout_json(lay),
                        "pre": (pre or {}).get(name)})
    still = {op["data"] for op in ops + meta["prelude"] if op.get("op") == "upload"}
    drop -= still
    keep = [i for i in range(len(meta["chunks"])) if i not in drop]
    renum = {old: new for new, old in enumerate(keep)}
    chunks, pieces, off = [], [], 0
    for old in keep:
        c = dict(meta["chunks"][old])
        c["offset"] = off
        off += c["bytes"]
        chunks.append(c)
        pieces.append(_chunk(meta, data, old))
    for op in ops + meta["prelude"]:
        if op.get("op") == "upload":
            op["data"] = renum[op["data"]]
    meta = dict(meta, ops=ops, chunks=chunks)
    spec_out = []
    for r, (name, info) in enumerate(zip(outputs, meta["reads"])):
        shape = info["shape"]
        if info["layout"] is None or not shape or shape[0] != M:
            raise ProgramError(f"output {name!r}: readback {r} is not a {M}-row array read "
                               "through its layout")
        spec_out.append({"name": name, "read": r, "shape": shape,
                         "layout": info["layout"]})
    meta["program"] = {"version": PROGRAM_VERSION, "max_rows": M,
                       "mode": "rows" if rows is not None else "pad",
                       "inputs": spec_in, "outputs": spec_out, "rows": rows,
                       "post": list(post or []), "model": model or {}}
    data = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
    raw = dumps(meta, data)
    load_program_bytes(raw, "the program just recorded")
    return raw


# ---- checks ---------------------------------------------------------------------------------
def load_program_bytes(raw, name: str = "program") -> tuple[dict, np.ndarray]:
    """(metadata, data) of a program's bytes, every check of a trace bundle made and the
    program's description checked (:func:`shadergpgpu.engine.bundle.check_program`);
    a damaged program raises :class:`~shadergpgpu.engine.bundle.BundleError`."""
    meta, data = loads(raw, name)
    if "program" not in meta:
        raise BundleError(f"{name}: a trace bundle, not a program (it has no inputs)")
    return meta, data


def load_program(path) -> tuple[dict, np.ndarray]:
    return load_program_bytes(Path(path).read_bytes(), str(path))


# ---- running in a browser -------------------------------------------------------------------
def _pack_cases(programs: list, cases: list) -> bytes:
    """The page's input file: "SGRESULT" framing (post.js's) of {programs, cases} and the
    inputs' float32 data."""
    arrays, listed, off = [], [], 0
    for prog, ins in cases:
        spec, rows = {}, None
        omit = "rows" in ins and ins["rows"] is None
        for name, a in ins.items():
            if name == "rows":
                continue
            a = np.ascontiguousarray(a, np.float32)
            if a.ndim == 1:
                a = a.reshape(1, -1)
            rows = a.shape[0]
            spec[name] = [off, a.size]
            off += a.size
            arrays.append(a.ravel())
        listed.append({"program": int(prog), "rows": rows, "inputs": spec, "omit_rows": omit})
    head = json.dumps({"programs": [f"/p{i}.sgprog" for i in range(len(programs))],
                       "cases": listed}).encode()
    pad = (-(12 + len(head))) % 4
    body = np.concatenate(arrays).astype("<f4").tobytes() if arrays else b""
    return b"SGRESULT" + struct.pack("<I", len(head)) + head + b"\0" * pad + body


def run_programs(programs: list, cases: list, timeout: float = 300.0, check: bool = True,
                 bench: dict | None = None) -> tuple[list, dict]:
    """Run programs (bytes or paths) on ``cases`` ((program index, {name: array}) pairs) in
    one headless Chromium page: ([{output name: array shaped (rows, ...)} or an error string
    per case], the page's metadata: ``load_errors`` per program, ``ms`` per case). With
    ``check`` the programs are checked here first (a damaged one raises
    :class:`~shadergpgpu.engine.bundle.BundleError` before any browser starts); without it
    the page's own checks answer (in ``load_errors``)."""
    from .browser import run_page
    raws = [p if isinstance(p, (bytes, bytearray)) else Path(p).read_bytes() for p in programs]
    metas = []
    for i, raw in enumerate(raws):
        if check:
            metas.append(load_program_bytes(raw, f"program {i}")[0])
        else:
            try:
                metas.append(load_program_bytes(raw, f"program {i}")[0])
            except BundleError:
                metas.append(None)
    files = {f"/p{i}.sgprog": bytes(r) for i, r in enumerate(raws)}
    files["/cases.bin"] = _pack_cases(raws, cases)
    query = "cases=/cases.bin" + ("&bench=" + json.dumps(bench, separators=(",", ":"))
                                  if bench else "")
    page, flat = run_page("program.html", files, query, timeout)
    results, k = [], 0
    for ci, ((prog, ins), info) in enumerate(zip(cases, page["cases"])):
        if "error" in info:
            results.append(info["error"])
            continue
        out = {}
        rows = info["rows"]
        for name in info["names"]:
            a = flat[k]
            k += 1
            out[name] = a.reshape(rows, -1) if a.size != rows else a
            spec = next((o for o in (metas[prog] or {"program": {"outputs": []}})["program"]
                         ["outputs"] if o["name"] == name), None)
            if spec is not None:
                shape = spec["shape"]
                out[name] = a.reshape([rows] + list(shape[1:]))
        results.append(out)
    return results, page


def web_run(program, inputs: dict, timeout: float = 300.0) -> dict:
    """Run one program (path or bytes) on ``inputs`` (name -> array) in headless Chromium:
    {output name: array}."""
    res, page = run_programs([program], [(0, inputs)], timeout)
    if isinstance(res[0], str):
        from .browser import BrowserError
        raise BrowserError(res[0])
    return res[0]

