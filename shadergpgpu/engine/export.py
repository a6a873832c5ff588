"""GLSL ES export: any kernel's final source as ``#version 300 es`` (WebGL2 / OpenGL ES 3.0).

Desktop GLSL 3.30 stays the executing dialect; every kernel is also valid GLSL ES 3.00 (the
tests compile each one with a real GLSL ES front end, ``glslangValidator``, under every
built-in profile). :func:`export` gives a kernel's ES source with a header listing its inputs,
outputs and uniforms, ready for a WebGL2 page (``shadergpgpu export-glsl NAME --profile webgl2``).
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from .kernels import Kernel, REGISTRY, uniform_declarations
from .layout import glsl_input, glsl_output
from .profiles import load as load_profile
from .programs import ShaderLibrary, shaders_root
from .blocks import ES_MIN_UNIFORM_BLOCK_SIZE, glsl_block_input
from . import builtin  # noqa: F401  (declares the engine's kernels, which the export lists)

#: a samplerBuffer in code, not in a comment
_BUFFER_USE = re.compile(r"^(?:(?!//).)*\bsamplerBuffer\b", re.M)
ES_PRECISION = ("precision highp float;\nprecision highp int;\nprecision highp sampler2D;\n")


def es_dialect(profile) -> str:
    """The ES version a profile's kernels are checked as (desktop profiles: 300 es)."""
    g = load_profile(profile).glsl
    return g if g.endswith("es") else "300 es"


def to_es(text: str, version: str = "300 es") -> str:
    """Turn a final desktop source (``#version 330 core``) into GLSL ES ``version``."""
    if re.match(r"#version 3[0-2]0 es\n", text):  # compiled on the ES backend (engine/gles.py)
        return text
    if not text.startswith("#version 330 core"):
        raise ValueError("expected a final source starting with '#version 330 core'")
    head = f"#version {version}\n"
    if _BUFFER_USE.search(text):  # core ES 3.1 has none: the extension (Mali exposes it)
        head += "#extension GL_EXT_texture_buffer : require\nprecision highp samplerBuffer;\n"
    return head + ES_PRECISION + text[len("#version 330 core\n"):]


#: the packages that declare the library's kernels (imported by :func:`library_kernels`)
KERNEL_MODULES = ("shadergpgpu.algorithms.backprop", "shadergpgpu.algorithms.sgemm",
                  "shadergpgpu.algorithms.blur", "shadergpgpu.algorithms.svm",
                  "shadergpgpu.algorithms.sammon", "shadergpgpu.algorithms.kmeans",
                  "shadergpgpu.ops.reduce", "shadergpgpu.ops.rbf", "shadergpgpu.ops.elementwise",
                  "shadergpgpu.ops.scan", "shadergpgpu.ops.sort")


def library_kernels() -> dict:
    """Every kernel the library declares (importing the modules that declare them)."""
    import importlib
    for m in KERNEL_MODULES:
        importlib.import_module(m)
    return dict(REGISTRY.kernels)


def final_source(kernel: Kernel, library, defines: dict | None = None,
                 buffer_ok: bool = True) -> str:
    """The desktop final source of ``kernel`` for packed row-major unwrapped arrays."""
    tex = ("texture", True, "row", False)
    pre = []
    for n, spec in kernel.inputs.items():
        if spec.block:  # a uniform-block window of the ES 3.0 minimum block size
            pre.append((f"<input {n}>",
                        glsl_block_input(("block", ES_MIN_UNIFORM_BLOCK_SIZE // 16), n)))
            continue
        kind = ("buffer", True, "row", False) if spec.buffer is True and buffer_ok else tex
        if spec.buffer is True and not buffer_ok:
            raise ValueError(f"{kernel.name}: input {n!r} needs a buffer texture (samplerBuffer)")
        if spec.packed is False:
            kind = ("texture", False, spec.order or "row", False)
        elif spec.order is not None:
            kind = ("texture", True, spec.order, False)
        pre.append((f"<input {n}>", glsl_input(kind, n)))
    pre += [(f"<output {n}>", glsl_output(tex, n, loc)) for loc, n in enumerate(kernel.outputs)]
    pre.append(("<uniforms>", uniform_declarations(kernel)))
    body = library.body(kernel.file, kernel.source, kernel.root, kernel.name)
    kernel.check_source(body.text)
    return library.assemble(body, kernel.resolve_defines(defines), pre).text


def _library():

    class _NoCtx(ShaderLibrary):
        def __init__(self):  # noqa: D401 - assembling only, no GL context
            self.root = shaders_root()
            self.user_root = None
            self._files = {}

    return _NoCtx()


def export(name: str, profile="webgl2", defines: dict | None = None) -> str:
    """A library kernel's GLSL ES source for ``profile``, with a header describing it."""
    kernels = library_kernels()
    if name not in kernels:
        close = [k for k in sorted(kernels) if name.split("/")[0] in k][:12]
        raise ValueError(f"unknown kernel {name!r} ({len(kernels)} known; "
                         "`shadergpgpu export-glsl --list` lists them"
                         + (f"; e.g. {', '.join(close)}" if close else "") + ")")
    k = kernels[name]
    prof = load_profile(profile)
    version = es_dialect(prof)
    text = to_es(final_source(k, _library(), defines,
                              buffer_ok=prof.limits.get("buffer_textures") is not False),
                 version)
    head = [f"// shadergpgpu kernel {k.name} as GLSL ES {version} for profile {prof.name}",
            "// Draw one triangle covering the viewport (gl_VertexID 0..2) into the outputs.",
            "// inputs (RGBA32F textures, packed row-major: 4 consecutive row elements a texel):"]
    for n, spec in k.inputs.items():
        if spec.block:
            head.append(f"//   uniform block sg_{n} (std140 vec4 array): bind a buffer range of "
                        "its size")
            continue
        head.append(f"//   sampler2D sg_{n}; ivec4 sg_{n}_shape = (rows, cols, texels per row, "
                    "texture width)")
    head.append("// outputs (layout locations in order):")
    for loc, n in enumerate(k.outputs):
        head.append(f"//   location {loc}: {n}; ivec4 sg_{n}_shape as for inputs")
    if k.uniforms:
        head.append("// uniforms: " + ", ".join(f"{t} {u}" for u, (t, _) in k.uniforms.items()))
    if k.split is not None:
        head.append(f"// loop range: int {k.split.name}_begin, {k.split.name}_end")
    return "\n".join(head) + "\n" + text


def glslang() -> str | None:
    """Path of the GLSL reference compiler (Debian's glslang-tools), if installed."""
    return shutil.which("glslangValidator")


def check_es(text: str) -> tuple[bool, str]:
    """Compile ES fragment source with glslangValidator; (ok, messages)."""
    exe = glslang()
    if exe is None:
        raise FileNotFoundError("glslangValidator not found (apt-get install glslang-tools)")
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "kernel.frag"
        f.write_text(text)
        r = subprocess.run([exe, "-S", "frag", str(f)], capture_output=True, text=True)
    msg = re.sub(r"\S*kernel\.frag", "kernel.frag", r.stdout + r.stderr).strip()
    return r.returncode == 0, msg
