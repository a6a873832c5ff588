"""The OpenGL ES backend (``Device(api="gles")``, engine/gles.py): a native ES 3.0+ context through
EGL running the kernels' GLSL ES sources. Skipped where no ES context can be made.

The same operations on the ES backend and the desktop one agree within each operation's bound,
at the driver's level (ES 3.2 on Mesa) and, in a subprocess, at WebGL2's level (Mesa's
overrides: ES 3.0 without float blending or buffer textures, so accumulation runs by
ping-pong passes); without EXT_color_buffer_float the device is refused with the extension
named.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.engine.errors import CapabilityError

HERE = Path(__file__).resolve().parent
ES30_ENV = {"MESA_GLES_VERSION_OVERRIDE": "3.0",
            "MESA_EXTENSION_OVERRIDE": "-GL_EXT_float_blend -GL_EXT_texture_buffer "
                                       "-GL_OES_texture_buffer"}


def _es_device():
    try:
        return sg.Device(api="gles")
    except CapabilityError as e:
        pytest.skip(f"no OpenGL ES context: {e}")


@pytest.fixture(scope="module")
def es():
    d = _es_device()
    yield d
    d.release()


@pytest.fixture(scope="module")
def gl():
    d = sg.Device(api="gl")
    yield d
    d.release()


def compare(es, gl) -> dict:
    """Run a few operations on both devices; the relative error of each between them (and the
    ES result against numpy's float64), and the ES device's accumulate passes."""
    from shadergpgpu.algorithms.sgemm import sgemm
    from shadergpgpu.ops import reduce as R
    from shadergpgpu.ops.elementwise import ElementwiseKernel
    try:
        from tests.kernels_for_tests import ACCUMULATE
    except ImportError:   # tests/ not a package
        sys.path.insert(0, str(HERE))
        from kernels_for_tests import ACCUMULATE
    rng = np.random.default_rng(7)
    out = {}
    # an elementwise one-liner
    x, y = rng.uniform(-2, 2, (33, 29)), rng.uniform(-2, 2, (33, 29))
    k = ElementwiseKernel("float32 x, float32 y, float32 a", "float32 z",
                          "z = a * x * y + sin(x)", name="es_test_fma")
    ge = k(es.array(x), es.array(y), 1.5).get()
    gg = k(gl.array(x), gl.array(y), 1.5).get()
    ref = 1.5 * x * y + np.sin(x)
    out["elementwise"] = float(np.max(np.abs(ge - gg)))
    out["elementwise_ref"] = float(np.max(np.abs(ge - ref)))
    # a reduction
    v = rng.random(50_001)
    te, tg = R.total(es, v), R.total(gl, v)
    out["total"] = abs(te - tg) / v.sum()
    out["total_ref"] = abs(te - v.sum()) / v.sum()
    # sgemm, small
    A, B, C = rng.uniform(-1, 1, (17, 45)), rng.uniform(-1, 1, (45, 23)), rng.uniform(-1, 1,
                                                                                       (17, 23))
    se = sgemm(A, B, C, alpha=-1.25, beta=0.75, device=es)
    sgl = sgemm(A, B, C, alpha=-1.25, beta=0.75, device=gl)
    ref = -1.25 * (A @ B) + 0.75 * C
    out["sgemm"] = float(np.linalg.norm(se - sgl) / np.linalg.norm(ref))
    out["sgemm_ref"] = float(np.linalg.norm(se - ref) / np.linalg.norm(ref))
    # an accumulating pass (hardware blending, or ping-pong passes without float blending)
    terms = rng.uniform(-1, 1, (4, 5, 9))
    acc = es.zeros((5, 9))
    for t in terms:
        es.run(ACCUMULATE, acc, inputs={"X": es.array(t)}, uniforms={"scale": 1.0},
               accumulate="add")
    out["accumulate_ref"] = float(np.max(np.abs(acc.get() - terms.sum(axis=0))))
    out["accumulate_passes"] = es.accumulate_passes(1, "add")
    # an MLPClassifier fit on a small digits subset
    from sklearn import datasets
    X, t = datasets.load_digits(return_X_y=True)
    X, t = X[:300] / 16.0, t[:300]
    fits = {}
    for name, d in (("es", es), ("gl", gl)):
        m = sg.MLPClassifier(hidden_layer_sizes=(16,), max_iter=5, random_state=0, device=d)
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.fit(X, t)
        fits[name] = (np.array(m.loss_curve_), m.predict_proba(X[:50]))
    out["mlp_loss"] = float(np.max(np.abs(fits["es"][0] - fits["gl"][0]) / fits["gl"][0]))
    out["mlp_proba"] = float(np.max(np.abs(fits["es"][1] - fits["gl"][1])))
    if not es.caps.buffer_textures:   # refused by name, before any GL call
        from shadergpgpu.engine.glraw import BufferArray
        from shadergpgpu.engine.layout import BufferLayout
        try:
            BufferArray.from_host(es, BufferLayout(2, 4), np.ones((2, 4)))
            out["buffer_refusal"] = ""
        except CapabilityError as e:
            out["buffer_refusal"] = str(e)
    out["caps"] = es.caps.as_dict()
    out["float_blending"] = es.float_blending
    out["buffer_textures"] = es.buffer_textures
    return out


def check_bounds(r: dict) -> None:
    assert r["elementwise"] <= 1e-5 and r["elementwise_ref"] <= 1e-5, r
    assert r["total"] <= 1e-5 and r["total_ref"] <= 1e-5, r
    assert r["sgemm"] <= 1e-5 and r["sgemm_ref"] <= 1e-5, r       # sgemm's TOL
    assert r["accumulate_ref"] <= 1e-5, r
    assert r["mlp_loss"] <= 1e-4 and r["mlp_proba"] <= 2e-5, r    # the estimators' bounds


def _child(env_extra: dict, code: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, **env_extra)
    env.pop("SHADERGPGPU_API", None)
    env["PYTHONPATH"] = str(HERE.parents[1]) + os.pathsep + str(HERE) + os.pathsep + \
        env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=600)


# ---- the context ------------------------------------------------------------------------------
def test_caps_come_from_the_es_context(es):
    c = es.caps
    assert c.api == "gles" and c.version.startswith("OpenGL ES 3")
    assert c.rgba32f_renderable and c.float_precision_ok
    assert c.max_texture_size >= 2048 and c.max_draw_buffers >= 4
    assert es.max_texture_size == c.max_texture_size
    from shadergpgpu.engine import gles
    f = gles.features(es.ctx)
    assert f["color_buffer_float"] and f["highp_float"][2] >= 23
    assert c.float_blending == f["float_blend"] and c.buffer_textures == f["texture_buffer"]
    assert es.shaders.vertex_source.startswith("#version 300 es")
    src = es.shaders.assemble(es.shaders.body(source="void main() { OUT = vec4(1.0); }"))
    assert src.lines[0] == "#version 300 es" and "precision highp float;" in src.lines
    assert repr(es).startswith("Device(") and "gles" not in sg.Device.__init__.__defaults__


def test_default_stays_desktop(gl, monkeypatch):
    assert gl.caps.api == "gl" and "ES" not in gl.caps.version
    from shadergpgpu.engine.gles import resolve_api
    monkeypatch.delenv("SHADERGPGPU_API", raising=False)
    assert resolve_api(None) == "gl"
    monkeypatch.setenv("SHADERGPGPU_API", "gles")
    assert resolve_api(None) == "gles"
    with pytest.raises(ValueError, match="unknown api"):
        resolve_api("vulkan")


def test_texture_reads_go_through_framebuffers(es):
    x = np.arange(40.0).reshape(8, 5)
    a = es.array(x)
    raw = np.frombuffer(a.texture.read(), np.float32)
    assert raw.size == a.layout.tex_w * a.layout.tex_h * 4
    np.testing.assert_array_equal(a.get(), x)
    buf = es.ctx.buffer(reserve=a.layout.nbytes)
    a.texture.read_into(buf, alignment=4)
    np.testing.assert_array_equal(np.frombuffer(buf.read(), np.float32), raw)
    buf.release()
    np.testing.assert_array_equal(es.read_rect(a, (0, 0, 1, 1))[:4], x[0, :4])
    a.release()


# ---- the same results as the desktop backend ----------------------------------------------------
def test_kernels_match_the_desktop_backend(es, gl):
    r = compare(es, gl)
    check_bounds(r)
    assert r["accumulate_passes"] == (1 if es.float_blending else 3)


def _mesa_only(es) -> None:
    """The ES 3.0 level and a missing extension are made with Mesa's override variables; other
    drivers ignore them."""
    if "mesa" not in (es.caps.version + " " + es.caps.renderer).lower() and \
            "llvmpipe" not in es.caps.renderer.lower():
        pytest.skip(f"Mesa's overrides do not apply to {es.caps.renderer}")


def test_es30_without_float_blending_or_buffer_textures(es):
    _mesa_only(es)
    p = _child(ES30_ENV, "import json, shadergpgpu as sg, test_gles as t\n"
                         "from shadergpgpu.engine.errors import CapabilityError\n"
                         "try:\n    es = sg.Device(api='gles')\n"
                         "except CapabilityError as e:\n    print('SKIP', e); raise SystemExit\n"
                         "print('REC', json.dumps(t.compare(es, sg.Device(api='gl'))))")
    assert p.returncode == 0, p.stderr[-3000:]
    if p.stdout.startswith("SKIP"):
        pytest.skip(p.stdout)
    r = json.loads(p.stdout.split("REC ", 1)[1])
    assert r["caps"]["version"].startswith("OpenGL ES 3.0"), r["caps"]
    assert r["float_blending"] is False and r["buffer_textures"] is False
    assert r["accumulate_passes"] == 3          # ping-pong, as under the webgl2 profile
    assert "GL_EXT_texture_buffer" in r["buffer_refusal"]
    check_bounds(r)


def test_missing_color_buffer_float_is_refused_by_name(es):
    _mesa_only(es)
    p = _child({"MESA_EXTENSION_OVERRIDE": "-GL_EXT_color_buffer_float"},
               "import shadergpgpu as sg\n"
               "from shadergpgpu.engine.errors import CapabilityError\n"
               "try:\n    sg.Device(api='gles')\n"
               "except CapabilityError as e:\n    print('REFUSED', e)\n")
    assert p.returncode == 0, p.stderr[-3000:]
    if "eglCreateContext" in p.stdout or "EGL" in p.stdout.split("lacks")[0]:
        pytest.skip(p.stdout)
    # (Mesa warns that it cannot disable the extension, yet drops it from the list)
    assert "\nREFUSED" in "\n" + p.stdout and "GL_EXT_color_buffer_float" in p.stdout, p.stdout
    assert "apt-get" in p.stdout or "driver" in p.stdout


def test_glsl_es_compile_error_names_the_source(es):
    k = sg.Kernel(source="void main() { OUT = vec4(undefined_name); }", name="es_test/bad")
    with pytest.raises(sg.ShaderCompileError, match="undefined_name"):
        k(es.empty((4,)))


def test_cli_info_api_gles(es):
    p = _child({}, "import sys; from shadergpgpu.frontends.cli import main; "
                   "sys.exit(main(['info', '--api', 'gles']))")
    assert p.returncode == 0, p.stderr[-2000:]
    assert "OpenGL ES 3" in p.stdout and "gles" in p.stdout


def test_releasing_one_es_device_leaves_anothers_context_current(es):
    from shadergpgpu.engine.export import to_es
    from shadergpgpu.engine.gles import EsLoader, _Egl
    from shadergpgpu.engine.lifetime import CONTEXT
    first, second = EsLoader(), EsLoader()     # the second one is current
    first.release()        # (a dropped device may be collected while another one starts)
    assert _Egl.get().eglGetCurrentContext() == second.ctx
    second.release()
    assert not _Egl.get().eglGetCurrentContext()
    CONTEXT.current = None
    a = es.array(np.arange(6.0))
    np.testing.assert_array_equal(a.get(), np.arange(6.0))
    # sources compiled on the ES backend are GLSL ES already (traces export them as they are)
    text = next(iter(es.shaders._programs))
    assert to_es(text) == text
