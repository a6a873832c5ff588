"""Loading fragment shaders from ``shaders/``, resolving ``#include``, compiling with a cache.

A kernel's final source is assembled from

1. ``#version 330 core`` and the shared header ``common/header.glsl``,
2. ``#define`` lines for the defines given,
3. the accessor snippets that :mod:`shadergpgpu.engine.layout` emits for each input and
   output, and the kernel's uniform declarations,
4. the kernel's file or inline source, with ``#include "path"`` resolved (relative to the including file,
   then to the shaders root; each file included once).

Compiled programs are cached by that final source text, so the key can never drift from what
was compiled. A compile error raises :class:`ShaderCompileError` that names the original file
and line of each message and quotes the driver.
"""
from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from .errors import ShaderCompileError

_INCLUDE = re.compile(r'^\s*#\s*include\s+[<"]([^">]+)[">]\s*$')
_VERSION = re.compile(r"^\s*#\s*version\b")
# Driver messages: Mesa "0:12(5): error: ...", NVIDIA "0(12) : error C0000: ...".
_MSG_LINE = (re.compile(r"^\s*\d+:(\d+)\(\d+\)"), re.compile(r"^\s*\d+\((\d+)\)"))


def shaders_root() -> Path:
    """Folder holding the GLSL files: inside the installed package, or the source checkout."""
    try:
        packaged = Path(str(resources.files("shadergpgpu") / "shaders"))
        if packaged.is_dir():
            return packaged
    except (ModuleNotFoundError, TypeError):  # pragma: no cover
        pass
    checkout = Path(__file__).resolve().parents[2] / "shaders"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError("the shadergpgpu shader files are missing: neither "
                            f"{Path(__file__).parent / 'shaders'} nor {checkout} exists")


class Source:
    """Final GLSL text plus a map from each of its lines to (file, line) of origin."""

    def __init__(self):
        self.lines: list[str] = []
        self.origin: list[tuple[str, int]] = []

    def add(self, text: str, origin: str, first_line: int = 1):
        for k, line in enumerate(text.splitlines()):
            self.lines.append(line)
            self.origin.append((origin, first_line + k))

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def where(self, line: int) -> str:
        if 1 <= line <= len(self.origin):
            f, n = self.origin[line - 1]
            return f"{f}:{n}"
        return f"<final source>:{line}"


class SharedProgram:
    """One compiled GL program and the state that GL keeps *in the program*: the uniform values
    it holds now (``held``: writes of an equal value are skipped) and the prepared pass that set
    them last (``owner``; None after any other use). Every compiled kernel with the same final
    source refers to the one object, so no kernel can believe the program holds its values
    after another kernel of the same source changed them."""

    __slots__ = ("program", "held", "owner", "users")

    def __init__(self, program):
        self.program = program
        self.held: dict = {}
        self.owner = None
        self.users = 0


class ShaderLibrary:
    """Reads shader files (with includes) and compiles programs, cached by final source.

    Relative names are looked up in the folder a kernel names (``Kernel(root=...)``), then in
    ``user_root`` (``Device(shader_root=...)``), then in the package's ``shaders/`` (which
    always provides ``common/``). A program stays compiled while a compiled kernel uses it (the
    device keeps at most ``cache_size`` of those, least recently used first out).
    """

    #: on a native ES context (engine/gles.py): (ES version, buffer textures available);
    #: sources are then GLSL ES (the version line and precision statements of gles.es_header)
    es = None

    def __init__(self, ctx, user_root: Path | None = None):
        self.ctx = ctx
        self.root = shaders_root()
        self.user_root = None
        if user_root is not None:
            self.user_root = Path(user_root)
            if not self.user_root.is_dir():
                raise FileNotFoundError(f"shader_root {str(user_root)!r} is not a folder")
        self._files: dict[Path, tuple] = {}
        # text -> SharedProgram: compiled kernels with the same text share one GL program and
        # with it the record of the uniform values it holds and of the pass that set them (that
        # state belongs to the GL program, not to any one compiled kernel); released when the
        # last user lets go (forget); the device's LRU of compiled kernels bounds how many
        self._programs: dict = {}
        self.vertex_source = self._read(self.root / "common" / "fullscreen.vert")
        self.compiles = 0
        es = getattr(ctx, "sg_features", None)   # a native ES context (engine/gles.py)
        if es is not None:
            from .gles import ES_VERTEX_SHADER
            self.es = (es["es_version"], es["texture_buffer"])
            self.vertex_source = ES_VERTEX_SHADER

    # ---- files ------------------------------------------------------------------------
    def resolve(self, name: str | Path, relative_to: Path | None = None,
                root: Path | None = None) -> Path:
        p = Path(name)
        candidates = [p] if p.is_absolute() else []
        if relative_to is not None and not p.is_absolute():
            candidates.append(relative_to.parent / p)
        if not p.is_absolute():
            candidates += [r / p for r in (root, self.user_root, self.root) if r is not None]
        for c in candidates:
            if c.is_file():
                return c.resolve()
        raise FileNotFoundError(f"shader file {str(name)!r} not found (looked in: "
                                + ", ".join(str(c) for c in candidates) + ")")

    def _read(self, path: Path) -> str:
        stamp = path.stat().st_mtime_ns
        hit = self._files.get(path)
        if hit is None or hit[0] != stamp:
            hit = (stamp, path.read_text())
            self._files[path] = hit
        return hit[1]

    def _display(self, path: Path) -> str:
        try:
            return "shaders/" + path.relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return str(path)

    def expand(self, path: Path, out: Source, seen: set, root: Path | None = None) -> None:
        if path in seen:
            return
        seen.add(path)
        self._expand_text(self._read(path), self._display(path), out, seen, root, path)

    def _expand_text(self, text: str, shown: str, out: Source, seen: set, root, path) -> None:
        for n, line in enumerate(text.splitlines(), start=1):
            m = _INCLUDE.match(line)
            if m:
                self.expand(self.resolve(m.group(1), path, root), out, seen, root)
                continue
            if _VERSION.match(line):
                out.add("// (#version set by the loader)", shown, n)
                continue
            out.add(line, shown, n)

    def body(self, file: str | Path | None = None, source: str | None = None,
             root: Path | None = None, name: str = "inline kernel") -> Source:
        """The kernel's own text with includes resolved (no header, defines or accessors)."""
        out = Source()
        seen: set = set()
        if source is not None:
            self._expand_text(source, f"<{name}>", out, seen, root, None)
        else:
            self.expand(self.resolve(file, None, root), out, seen, root)
        return out

    def assemble(self, body: Source, defines: dict | None = None,
                 preamble: list[tuple[str, str]] = ()) -> Source:
        """Final source: version, header, ``defines``, generated ``preamble``, then ``body``."""
        src = Source()
        src.add("#version 330 core", "<loader>")
        self.expand(self.root / "common" / "header.glsl", src, set())
        for key, value in (defines or {}).items():
            if not re.fullmatch(r"[A-Za-z_]\w*", str(key)):
                raise ValueError(f"invalid #define name {key!r}")
            if isinstance(value, bool):
                value = int(value)
            src.add(f"#define {key} {value}", "<defines>")
        for origin, text in preamble:
            src.add(text, origin)
        src.lines += body.lines
        src.origin += body.origin
        if self.es is not None:
            from .gles import es_header
            head = es_header(src.text, *self.es)
            src.lines[:1] = head
            src.origin[:1] = [("<loader>", 1)] * len(head)
        return src

    # ---- programs ---------------------------------------------------------------------
    def program(self, src: Source) -> "SharedProgram":
        """The :class:`SharedProgram` compiled from ``src`` (from the cache when the same text
        was compiled); the caller becomes one of its users (see :meth:`forget`)."""
        text = src.text
        entry = self._programs.get(text)
        if entry is None:
            entry = self._programs[text] = SharedProgram(self._compile(src, text))
        entry.users += 1
        return entry

    def forget(self, text: str) -> None:
        """One user of the program compiled from ``text`` lets go; the last one releases it
        (another compiled kernel with the same text keeps drawing with it until then)."""
        entry = self._programs.get(text)
        if entry is None:
            return
        entry.users -= 1
        if entry.users <= 0:
            del self._programs[text]
            entry.program.release()

    def _compile(self, src: Source, text: str):
        vs = self.vertex_source
        if self.es is not None and not text.startswith(vs.split("\n", 1)[0] + "\n"):
            vs = text.split("\n", 1)[0] + "\n" + vs.split("\n", 1)[1]  # ES: one version
        try:
            prog = self.ctx.program(vertex_shader=vs, fragment_shader=text)
        except Exception as e:
            raise ShaderCompileError(self._explain(src, str(e))) from None
        self.compiles += 1
        return prog

    def _explain(self, src: Source, message: str) -> str:
        notes = []
        for raw in message.splitlines():
            for rx in _MSG_LINE:
                m = rx.match(raw)
                if m:
                    notes.append(f"{src.where(int(m.group(1)))}: {raw.strip()}")
                    break
        first = src.origin[-1][0] if src.origin else "<shader>"
        # quote the offending lines (an inline kernel's own text included)
        quoted = []
        for raw in message.splitlines():
            for rx in _MSG_LINE:
                m = rx.match(raw)
                if m:
                    k = int(m.group(1))
                    if 1 <= k <= len(src.lines) and not any(
                            q.startswith(f"    {src.where(k)}:") for q in quoted):
                        quoted.append(f"    {src.where(k)}: {src.lines[k - 1].strip()}")
                    break
        if quoted:
            notes += ["in:"] + quoted
        head = ("shader compile failed:\n" + "\n".join(notes)) if notes else \
            f"shader compile failed in {first}"
        return f"{head}\n--- driver message ---\n{message.strip()}"

    def __len__(self):
        return len(self._programs)
