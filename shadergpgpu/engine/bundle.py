"""The trace bundle: one file holding a recorded computation (:mod:`.trace`), and its checks.

Format 2, all integers little-endian:

==========  =====  ========================================================================
offset      bytes  what
==========  =====  ========================================================================
0           8      ``SGTRACE2``: ``SGTRACE`` and the format as one ASCII digit
8           4      uint32: the header's length H in bytes
12          4      uint32: the number K of data chunks
16          8      uint64: the bundle's total length in bytes
24          4      uint32: CRC-32 of the header
28          4      uint32: CRC-32 of bytes 0 .. 27 (the preamble above)
32          H      the header: UTF-8 JSON
32 + H      0..3   zero padding to a multiple of 4
..          ..     the data: K float32 chunks back to back, as the header's ``chunks`` lists
                   them (``offset`` and ``bytes`` within the data, ``crc32`` of each)
==========  =====  ========================================================================

Every byte is covered: the magic by comparison, the preamble and the header by their CRC-32s,
the padding by being zero, each chunk by its CRC-32 and the total length by the file's.
:func:`load` (and ``shadergpgpu/web/player.js``, which replays bundles in WebGL2) checks all of
it, and the references of every operation (textures, programs, chunks, sections, the number of
readbacks), before anything is drawn: a damaged bundle raises :class:`BundleError` saying what
is wrong (truncated at byte N of M, checksum mismatch in chunk K, bytes appended after the end,
unknown format V).
"""
from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np

from .errors import ShaderGPGPUError

FORMAT = 2
MAGIC = b"SGTRACE" + str(FORMAT).encode()   # format 1 bundles start "SGTRACE1"
_PREAMBLE = struct.Struct("<8sIIQII")        # magic, H, K, total length, header CRC, own CRC
PREAMBLE = _PREAMBLE.size
BLEND_MODES = (None, "add", "max", "min")


class BundleError(ShaderGPGPUError, ValueError):
    """A trace bundle is damaged, truncated, or of a format this version does not read (the
    message says which, and where)."""


def dumps(meta: dict, data: np.ndarray) -> bytes:
    """The bundle's bytes: ``meta`` (whose ``chunks`` must describe ``data``) sealed with the
    preamble, the lengths and the header's checksum (see the module docstring)."""
    head = json.dumps(meta, separators=(",", ":")).encode()
    pad = (-(PREAMBLE + len(head))) % 4
    body = np.ascontiguousarray(data, dtype="<f4").tobytes()
    total = PREAMBLE + len(head) + pad + len(body)
    pre = _PREAMBLE.pack(MAGIC, len(head), len(meta.get("chunks", ())), total,
                         zlib.crc32(head), 0)[:PREAMBLE - 4]
    return pre + struct.pack("<I", zlib.crc32(pre)) + head + b"\0" * pad + body


def load(path) -> tuple[dict, np.ndarray]:
    """(metadata, float32 data) of a saved bundle, checked as :func:`loads` checks it."""
    return loads(Path(path).read_bytes(), str(path))


def loads(raw, name: str = "trace bundle") -> tuple[dict, np.ndarray]:
    """(metadata, float32 data) of a bundle's bytes. Every length, checksum and reference is
    checked first; a damaged bundle raises :class:`BundleError` ("``name``: what is wrong")."""
    raw = bytes(raw)
    try:
        return _loads(raw)
    except BundleError as e:
        raise BundleError(f"{name}: {e}") from None


def _loads(raw: bytes) -> tuple[dict, np.ndarray]:
    n = len(raw)
    if n >= PREAMBLE and raw[:8] != MAGIC and \
            zlib.crc32(MAGIC + raw[8:PREAMBLE - 4]) == struct.unpack_from("<I", raw, 28)[0]:
        raise BundleError("checksum mismatch in the preamble: its first 8 bytes (the magic and "
                          f"the format) read {_js(raw[:8])}, the checksum says {_js(MAGIC)}")
    if raw[:7] != MAGIC[:min(n, 7)]:
        raise BundleError(f"not a shadergpgpu trace bundle (it starts {_js(raw[:8])}, a "
                          f"bundle starts {_js(MAGIC[:7])})")
    if n >= 8 and raw[7:8] != MAGIC[7:8]:
        c = raw[7:8]
        v = c.decode() if c.isdigit() else f"byte 0x{c[0]:x}"
        older = " (a bundle of an earlier version: record it again)" \
            if c.isdigit() and int(c) < FORMAT else ""
        raise BundleError(f"unknown format {v}, this version reads {FORMAT}{older}")
    if n < PREAMBLE:
        total = struct.unpack_from("<Q", raw, 16)[0] if n >= 24 else 0
        of = f"{total}" if total > n else f"at least {PREAMBLE} (the preamble)"
        raise BundleError(f"truncated at byte {n} of {of}")
    _, hlen, k, total, hcrc, pcrc = _PREAMBLE.unpack_from(raw)
    if zlib.crc32(raw[:PREAMBLE - 4]) != pcrc:
        raise BundleError(f"checksum mismatch in the preamble (bytes 0..{PREAMBLE - 1})")
    if n < total:
        raise BundleError(f"truncated at byte {n} of {total}")
    if n > total:
        raise BundleError(f"{n - total} byte(s) appended after the bundle's end at byte "
                          f"{total} (the file holds {n})")
    hend = PREAMBLE + hlen
    start = hend + (-hend) % 4
    if start > total:
        raise BundleError(f"the preamble declares a {hlen}-byte header, which ends past the "
                          f"bundle's end at byte {total}")
    if zlib.crc32(raw[PREAMBLE:hend]) != hcrc:
        raise BundleError(f"checksum mismatch in the header (bytes {PREAMBLE}..{hend - 1})")
    if raw[hend:start].strip(b"\0"):
        raise BundleError(f"non-zero padding after the header (bytes {hend}..{start - 1})")
    try:
        meta = json.loads(raw[PREAMBLE:hend].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise BundleError(f"the header is not JSON ({e})") from None
    if not isinstance(meta, dict):
        raise BundleError("the header is not a JSON object")
    if meta.get("format") != FORMAT:
        raise BundleError(f"the header says format {_js(meta.get('format'))}, the preamble "
                          f"{FORMAT}")
    size = total - start
    chunks = meta.get("chunks")
    if not isinstance(chunks, list) or len(chunks) != k:
        got = len(chunks) if isinstance(chunks, list) else "no"
        raise BundleError(f"the header lists {got} chunks, the preamble declares {k}")
    off = 0
    for i, c in enumerate(chunks):
        if not (isinstance(c, dict) and all(_is_int(c.get(f)) and c[f] >= 0
                                            for f in ("offset", "bytes", "crc32"))):
            raise BundleError(f"chunk {i}: expected offset, bytes, crc32 (integers), got "
                              f"{_js(c)}")
        if c["offset"] != off or c["bytes"] % 4:
            raise BundleError(f"chunk {i}: offset {c['offset']}, {c['bytes']} bytes (chunks "
                              f"are float32 and back to back: expected offset {off})")
        if off + c["bytes"] > size:
            raise BundleError(
                f"the header declares {k} chunks of {sum(int(x.get('bytes', 0)) for x in chunks)}"
                f" data bytes, the bundle holds {size}: chunk {i} (data bytes {off}.."
                f"{off + c['bytes'] - 1}) and any after it are missing")
        off += c["bytes"]
    if off != size:
        raise BundleError(f"{size - off} data byte(s) after the last of the {k} chunks belong "
                          "to none")
    for i, c in enumerate(chunks):
        a = start + c["offset"]
        if zlib.crc32(raw[a:a + c["bytes"]]) != c["crc32"]:
            raise BundleError(f"checksum mismatch in chunk {i} (bytes {a}..{a + c['bytes'] - 1})")
    try:
        check_structure(meta)
    except ValueError as e:
        raise BundleError(f"the header is inconsistent: {e}") from None
    return meta, np.frombuffer(raw, dtype="<f4", count=size // 4, offset=start)


def _js(v) -> str:
    """``v`` as player.js writes it in its messages (JSON; bytes as Latin-1 text)."""
    if isinstance(v, bytes):
        v = v.decode("latin-1")
    return json.dumps(v, separators=(",", ":"), ensure_ascii=False)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_structure(meta: dict) -> None:
    """Check every reference in a bundle's header (texture slots, programs, chunks and their
    sizes, sections, blend modes, read rectangles, the number of readbacks a replay makes);
    a ValueError says the first that does not hold."""
    def need(ok, what):
        if not ok:
            raise ValueError(what)

    def index(v, items, what):
        need(_is_int(v) and 0 <= v < len(items), f"{what} {_js(v)} is not one of the "
             f"{len(items)} recorded")
        return v

    textures = meta.get("textures")
    need(isinstance(textures, list) and all(
        isinstance(t, list) and len(t) == 2 and all(_is_int(v) and v > 0 for v in t)
        for t in textures), "textures must be [width, height] pairs of positive integers")
    programs = meta.get("programs")
    need(isinstance(programs, list) and all(isinstance(p, str) for p in programs),
         "programs must be GLSL sources")
    need(isinstance(meta.get("vertex"), str), "the vertex shader is missing")
    chunks = meta["chunks"]
    sections = meta.get("sections")
    need(isinstance(sections, dict), "sections must be an object")
    need(isinstance(meta.get("reads"), list), "reads must be a list")

    program = meta.get("program")
    input_names = set()
    if program is not None:
        need(isinstance(program, dict) and isinstance(program.get("inputs"), list) and all(
            isinstance(i, dict) and isinstance(i.get("name"), str) for i in program["inputs"]),
            "program: inputs must be a list of named inputs")
        input_names = {i["name"] for i in program["inputs"]}

    def check(ops, where):
        need(isinstance(ops, list), f"{where} is not a list of operations")
        for i, op in enumerate(ops):
            at = f"{where}[{i}]"
            need(isinstance(op, dict), f"{at} is not an operation")
            kind = op.get("op")
            if kind == "upload":
                w, h = textures[index(op.get("tex"), textures, f"{at}: texture")]
                c = chunks[index(op.get("data"), chunks, f"{at}: chunk")]
                need(c["bytes"] == 16 * w * h, f"{at}: chunk {op['data']} holds {c['bytes']} "
                     f"bytes, texture {op['tex']} ({w}x{h} RGBA float32) takes {16 * w * h}")
            elif kind == "draw":
                index(op.get("prog"), programs, f"{at}: program")
                units = op.get("units")
                need(isinstance(units, list) and all(
                    isinstance(u, list) and len(u) == 3 and isinstance(u[0], str) and
                    _is_int(u[1]) and u[1] >= 0 for u in units), f"{at}: bad sampler units")
                for u in units:
                    index(u[2], textures, f"{at}: sampler {_js(u[0])} texture")
                out = op.get("out")
                need(isinstance(out, list) and out, f"{at}: no render targets")
                for t in out:
                    index(t, textures, f"{at}: render target")
                need(op.get("viewport") is None or _rect(op["viewport"]), f"{at}: bad viewport")
                need(op.get("blend") in BLEND_MODES, f"{at}: unknown blend {_js(op.get('blend'))}")
                need(isinstance(op.get("uniforms"), dict), f"{at}: uniforms must be an object")
            elif kind == "read":
                w, h = textures[index(op.get("tex"), textures, f"{at}: texture")]
                r = op.get("rect")
                need(r is None or (_rect(r) and r[0] + r[2] <= w and r[1] + r[3] <= h),
                     f"{at}: rectangle {_js(r)} is not inside the {w}x{h} texture")
            elif kind == "input":
                index(op.get("tex"), textures, f"{at}: texture")
                need(op.get("name") in input_names, f"{at}: no program input "
                     f"{_js(op.get('name'))}")
            elif kind == "call":
                need(isinstance(op.get("section"), str) and op["section"] in sections,
                     f"{at}: no section {_js(op.get('section'))}")
            elif kind == "repeat":
                need(_is_int(op.get("count")) and op["count"] >= 0, f"{at}: bad repeat count")
                check(op.get("body"), f"{at}.body")
            else:
                raise ValueError(f"{at}: unknown operation {_js(kind)}")

    check(meta.get("prelude"), "prelude")
    check(meta.get("ops"), "ops")
    for key, body in sections.items():
        check(body, f"section {_js(key)}")

    reads_in: dict = {}

    def reads(ops, stack):
        total = 0
        for op in ops:
            kind = op["op"]
            if kind == "read":
                total += 1
            elif kind == "repeat":
                total += op["count"] * reads(op["body"], stack)
            elif kind == "call":
                key = op["section"]
                need(key not in stack, f"section {_js(key)} calls itself")
                if key not in reads_in:
                    reads_in[key] = reads(sections[key], stack | {key})
                total += reads_in[key]
        return total

    made = reads(meta["prelude"], frozenset()) + reads(meta["ops"], frozenset())
    need(made == len(meta["reads"]), f"a replay reads back {made} arrays, the header describes "
         f"{len(meta['reads'])}")
    if program is not None:
        check_program(meta)


def _layout_ok(lay) -> bool:
    return isinstance(lay, dict) and all(_is_int(lay.get(k)) and lay[k] > 0
                                         for k in ("rows", "cols", "max_size")) and \
        isinstance(lay.get("packed"), bool) and lay.get("order") in ("row", "col")


def _texture_of(lay) -> tuple[int, int]:
    """(width, height) of the texture of a layout (:class:`.layout.Layout`'s math)."""
    major, minor = (lay["rows"], lay["cols"]) if lay["order"] == "row" else \
        (lay["cols"], lay["rows"])
    gw = -(-minor // (4 if lay["packed"] else 1))
    n, mx = major * gw, lay["max_size"]
    if gw > mx or major > mx:
        w = min(mx, n)
        return w, -(-n // w)
    return gw, major


POST_KINDS = ("argmax", "threshold", "proba2", "neg", "svc_vote", "svc_ovr")
ROW_DIVISORS = (1, 2, 4)     # row textures: one texel row per q rows


def check_program(meta: dict) -> None:
    """Check a program's description (``meta["program"]``: inputs, outputs, the rows rewiring,
    the post steps) against the bundle it describes; a ValueError says what does not hold.
    :mod:`shadergpgpu.frontends.webexport` makes programs; ``web/program.js`` checks the same."""
    def need(ok, what):
        if not ok:
            raise ValueError("program: " + what)

    p = meta["program"]
    textures, ops = meta["textures"], meta["ops"]
    need(p.get("version") == 1, f"unknown program version {_js(p.get('version'))}")
    M = p.get("max_rows")
    need(_is_int(M) and M > 0, "max_rows must be a positive integer")
    need(p.get("mode") in ("rows", "pad"), f"unknown mode {_js(p.get('mode'))}")
    names = set()
    for spec in p["inputs"]:
        n = spec["name"]
        need(n not in names, f"input {_js(n)} is listed twice")
        names.add(n)
        lay = spec.get("layout")
        need(_layout_ok(lay) and lay["rows"] == M and lay["cols"] == spec.get("cols"),
             f"input {_js(n)}: bad layout {_js(lay)}")
        t = spec.get("tex")
        need(_is_int(t) and 0 <= t < len(textures) and
             tuple(textures[t]) == _texture_of(lay),
             f"input {_js(n)}: texture {_js(t)} is not its layout's")
        uses = [op for op in ops if op.get("op") == "input" and op.get("name") == n]
        need(len(uses) == 1 and uses[0]["tex"] == t,
             f"input {_js(n)}: the operations do not upload it once into texture {t}")
        pre = spec.get("pre")
        need(pre is None or (isinstance(pre, dict) and all(
            isinstance(pre.get(k), list) and len(pre[k]) == spec["cols"] and
            all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pre[k])
            for k in ("shift", "scale"))), f"input {_js(n)}: bad pre step")
    outs = set()
    for spec in p.get("outputs", []):
        n = spec.get("name")
        need(isinstance(n, str) and n not in outs and n not in names,
             f"output {_js(n)}: a name used twice")
        outs.add(n)
        r = spec.get("read")
        need(_is_int(r) and 0 <= r < len(meta["reads"]), f"output {_js(n)}: no readback {_js(r)}")
        lay = spec.get("layout")
        need(_layout_ok(lay) and lay == meta["reads"][r]["layout"] and
             isinstance(spec.get("shape"), list) and spec["shape"] and spec["shape"][0] == M and
             int(np.prod(spec["shape"])) == lay["rows"] * lay["cols"],
             f"output {_js(n)}: bad layout or shape")
    rows = p.get("rows")
    need((rows is None) == (p["mode"] == "pad"), "rows: given exactly in mode 'rows'")
    if rows is not None:
        rt = rows.get("textures")
        need(isinstance(rt, list) and all(
            isinstance(e, list) and len(e) == 2 and _is_int(e[0]) and 0 <= e[0] < len(textures)
            and e[1] in ROW_DIVISORS and textures[e[0]][1] == -(-M // e[1]) for e in rt),
            "rows: textures must be [slot, q] of texture slots ceil(max_rows / q) texels high")
        q_of = {e[0]: e[1] for e in rt}
        for i, subs in rows.get("draws", []):
            need(_is_int(i) and 0 <= i < len(ops) and ops[i].get("op") == "draw" and
                 len({q_of.get(t) for t in ops[i]["out"]} - {None}) == 1 and
                 all(t in q_of for t in ops[i]["out"]), f"rows: operation {_js(i)} is no draw "
                 "into row textures")
            need(isinstance(subs, list) and all(
                isinstance(s, list) and len(s) == 3 and s[0] in ops[i]["uniforms"] and
                _is_int(s[1]) and s[2] in ROW_DIVISORS for s in subs),
                f"rows: bad uniforms of draw {i}")
        for i in rows.get("reads", []):
            need(_is_int(i) and 0 <= i < len(ops) and ops[i].get("op") == "read" and
                 ops[i]["tex"] in q_of, f"rows: operation {_js(i)} is no read of a row texture")
        for spec in p["inputs"]:
            need(q_of.get(spec["tex"]) == 1 and spec["layout"]["order"] == "row",
                 f"input {_js(spec['name'])}: not a row texture")
    produced = set(outs)
    for q in p.get("post", []):
        need(isinstance(q, dict) and q.get("kind") in POST_KINDS and q.get("from") in produced
             and isinstance(q.get("name"), str) and q["name"] not in produced,
             f"bad post step {_js(q)}")
        produced.add(q["name"])


def _rect(r) -> bool:
    return isinstance(r, list) and len(r) == 4 and all(_is_int(v) and v >= 0 for v in r) \
        and r[2] > 0 and r[3] > 0
