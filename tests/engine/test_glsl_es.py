"""Every kernel of the library is valid GLSL ES (checked by glslangValidator, the Khronos
reference front end) under every built-in profile; a non-ES construct is caught."""
import pytest

from shadergpgpu.engine import builtin, export, profiles

pytestmark = pytest.mark.skipif(export.glslang() is None,
                                reason="glslangValidator missing (apt-get install glslang-tools)")


def test_every_kernel_compiles_as_glsl_es_under_every_profile():
    from concurrent.futures import ThreadPoolExecutor

    kernels = export.library_kernels()
    assert len(kernels) >= 4
    lib = export._library()
    jobs = {}  # final ES source -> (kernel, profile): identical sources are compiled once
    for name in profiles.names() or ["native"]:
        prof = profiles.load(name)
        version = export.es_dialect(prof)
        buffer_ok = prof.limits.get("buffer_textures") is not False
        for kname, k in sorted(kernels.items()):
            if not buffer_ok and any(s.buffer is True for s in k.inputs.values()):
                continue  # a buffer-only kernel: algorithms use their texture path here
            text = export.to_es(export.final_source(k, lib, None, buffer_ok), version)
            jobs.setdefault(text, f"{kname} under {name} ({version})")
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(export.check_es, jobs))
    failures = [f"{where}:\n{msg}" for where, (ok, msg) in zip(jobs.values(), results) if not ok]
    assert len(jobs) >= len(kernels)
    assert not failures, "\n\n".join(failures)


def test_a_non_es_construct_is_caught():
    lib = export._library()
    text = export.to_es(export.final_source(builtin.FILL, lib))
    assert export.check_es(text)[0]
    bad = text.replace("OUT = vec4(value);", "float z = 1; OUT = vec4(value * z);")
    ok, msg = export.check_es(bad)      # implicit int -> float: desktop GLSL accepts it, ES not
    assert not ok and "convert" in msg


def test_export_has_a_header_and_es_version():
    text = export.export("engine/saxpy", "native")
    assert text.startswith("// shadergpgpu kernel engine/saxpy")
    assert "#version 300 es" in text and "uniforms: float alpha" in text
    assert export.check_es(text[text.index("#version"):])[0]
    with pytest.raises(ValueError, match="unknown kernel"):
        export.export("nope")
