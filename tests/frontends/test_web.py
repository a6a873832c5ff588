"""The WebGL2 target, for real: traces replayed in headless Chromium equal the Python run.

Every computation here runs on a device under the ``webgl2`` profile inside ``sg.trace``; the
bundle is replayed by ``shadergpgpu/web/player.js`` in headless Chromium (WebGL2 through ANGLE
on Mesa llvmpipe), and the browser's readbacks are held against what the host read back in
Python. Tolerance: every element within 1e-6 of the Python value, relative to the largest
magnitude of that readback (``_close``). The tests skip, saying why, where no Chromium is
installed (Debian: ``apt-get install chromium``); CI installs it.
"""
import json

import numpy as np
import pytest

import shadergpgpu as sg
from shadergpgpu.engine import trace as T
from shadergpgpu.engine.profiles import load as load_profile
from shadergpgpu.frontends import browser

from tests.reference import assert_close

needs_browser = pytest.mark.skipif(
    browser.find_chromium() is None,
    reason="no Chromium to replay in (apt-get install chromium, or set SHADERGPGPU_CHROMIUM)")

RTOL = 1e-6


@pytest.fixture(scope="module")
def dev():
    d = sg.Device(profile="webgl2")
    yield d
    d.release()


def _close(got, want, what=""):
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    assert_close(got, want, rtol=0, atol=RTOL * max(scale, np.finfo(np.float32).tiny), what=what)


def _replay(t, tmp_path, name="run"):
    path = t.save(tmp_path / f"{name}.sgtrace")
    outs, page = browser.replay(path)
    assert len(outs) == len(t.readbacks) > 0
    for i, (got, want) in enumerate(zip(outs, t.readbacks)):
        _close(got, want, f"{name} readback {i}")
    return outs, page


# ---- the recorder itself (no browser) --------------------------------------------------------
def test_bundle_roundtrip_and_compression(dev, tmp_path):
    x = dev.array(np.arange(8, dtype=np.float32).reshape(2, 4))
    y = dev.empty((2, 4))
    k = sg.ElementwiseKernel("float x", "float y", "y = x * 2.0 + 1.0", "twice_plus_one")
    with sg.trace(dev) as t:
        for _ in t.steps(5):
            k(x, y)
        got = y.get()
    np.testing.assert_array_equal(got, np.arange(8).reshape(2, 4) * 2 + 1)
    meta, data = T.load(t.save(tmp_path / "b.sgtrace"))
    assert meta["format"] == T.FORMAT and meta["profile"] == "webgl2"
    assert [op["op"] for op in meta["ops"]] == ["repeat", "read"]
    assert meta["ops"][0]["count"] == 5
    assert meta["prelude"], "x was made before the trace: its contents are in the prelude"
    c = meta["chunks"][meta["prelude"][0]["data"]]
    off, n = c["offset"] // 4, c["bytes"] // 4
    np.testing.assert_array_equal(data[off:off + n][:16], x.layout.pack_array(
        np.arange(8, dtype=np.float32).reshape(2, 4)).ravel()[:16])
    assert all(p.startswith("#version 300 es") for p in meta["programs"])


def test_compress_finds_ping_pong_periods():
    a, b, c = ({"op": "call", "section": s} for s in "abc")
    ops = [a, b, a, b, a, b, c, c, c, {"op": "read", "tex": 0}]
    out = T._compress(ops)
    assert out[0] == {"op": "repeat", "count": 3, "body": [a, b]}
    assert out[1] == {"op": "repeat", "count": 3, "body": [c]}
    assert out[2]["op"] == "read"


def test_host_decision_after_readback_is_refused(dev):
    x = dev.array(np.ones((4, 4), np.float32))
    with pytest.raises(T.TraceError, match="after reading results back"):
        with sg.trace(dev):
            v = x.get()
            x.set(v * 2)  # the host decided from a readback
    with sg.trace(dev, host_uploads=True) as t:  # allowed when the user says it is independent
        x.get()
        x.set(np.zeros((4, 4), np.float32))
    assert len(t.readbacks) == 1
    assert dev.tracer is None


def test_one_trace_per_device(dev):
    with sg.trace(dev):
        with pytest.raises(T.TraceError, match="already"):
            with sg.trace(dev):
                pass


def test_missing_browser_is_a_clear_error(dev, monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("SHADERGPGPU_CHROMIUM", str(tmp_path / "no-such-browser"))
    with pytest.raises(browser.BrowserNotFound, match="no Chromium"):
        browser.run_page("replay.html", {}, "limits=1")
    from shadergpgpu.frontends.cli import main
    with sg.trace(dev) as t:
        dev.array(np.ones((2, 2), np.float32)).get()
    path = t.save(tmp_path / "x.sgtrace")  # a sound bundle: the browser is what is missing
    assert main(["replay", str(path), "-o", str(tmp_path / "o.npz")]) == 2
    assert "no Chromium" in capsys.readouterr().err


# ---- replays in the browser --------------------------------------------------------------------
@needs_browser
def test_elementwise_and_reduction_kernels(dev, tmp_path):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((37, 53)).astype(np.float32)
    b = rng.standard_normal((37, 53)).astype(np.float32)
    k = sg.ElementwiseKernel("float x, float y", "float z", "z = x * y + sin(x)", "mul_sin")
    r = sg.ReductionKernel("float x", "float y", "x * x", "a + b", "y = a", "0", "l2sq")
    with sg.trace(dev) as t:
        xa, xb = dev.array(a), dev.array(b)
        z = k(xa, xb)
        z.get()
        r(xa, axis=1, device=dev).get()
    _replay(t, tmp_path, "kernels")


@needs_browser
def test_sort(dev, tmp_path):
    x = np.random.default_rng(1).standard_normal((5, 300)).astype(np.float32)
    with sg.trace(dev) as t:
        s = sg.sort(dev.array(x))
        got = s.get()
    np.testing.assert_array_equal(got, np.sort(x, axis=-1))
    _replay(t, tmp_path, "sort")


@needs_browser
def test_sgemm_with_alpha_beta(dev, tmp_path):
    rng = np.random.default_rng(2)
    A = rng.standard_normal((300, 100)).astype(np.float32)
    B = rng.standard_normal((100, 200)).astype(np.float32)
    C = rng.standard_normal((300, 200)).astype(np.float32)
    with sg.trace(dev) as t:
        got = sg.sgemm(A, B, C, alpha=0.5, beta=-2.0, device=dev)
    ref = 0.5 * A.astype(np.float64) @ B - 2.0 * C
    assert_close(got, ref, rtol=0, atol=1e-4 * np.max(np.abs(ref)), what="sgemm alpha, beta")
    _replay(t, tmp_path, "sgemm")


@needs_browser
@pytest.mark.parametrize("method", ["exact", "recursive"])
def test_blur(dev, tmp_path, method):
    img = np.random.default_rng(3).random((48, 64)).astype(np.float32)
    with sg.trace(dev) as t:
        sg.gaussian_blur(img, 2.5, method=method, device=dev)
    _replay(t, tmp_path, f"blur-{method}")


@needs_browser
def test_rbf_and_argmax(dev, tmp_path):
    from shadergpgpu.ops import reduce as R
    from shadergpgpu.ops.rbf import RBFData
    X = np.random.default_rng(4).standard_normal((200, 7))
    with sg.trace(dev) as t:
        data = RBFData(dev, X)
        kh, kl = data.pair_device(3, 11, 0.2)
        R.argmax(dev, kh)
        kl.get()
    _replay(t, tmp_path, "rbf")


@needs_browser
@pytest.mark.parametrize("schedule", ["fused", "paper"])
def test_backprop_200_steps_on_xor(dev, tmp_path, schedule):
    from shadergpgpu.algorithms.backprop import BackpropNet, NumpyMLP
    X = np.array([[0, 0], [0, 1], [1, 0], [1, 1]], dtype=np.float64)
    Y = np.array([[0], [1], [1], [0]], dtype=np.float64)
    with sg.trace(dev) as t:
        net = BackpropNet(dev, [2, 4, 1], X, Y, lr=2.0, schedule=schedule, seed=0)
        for _ in t.steps(200):
            net.step()
        weights = net.weights()
    ref = NumpyMLP([2, 4, 1], X, Y, 2.0, seed=0)
    ref.step(200)
    for k, (w, r) in enumerate(zip(weights, ref.weights)):
        assert_close(w, r, rtol=0, atol=1e-4, what=f"{schedule}: weights[{k}]")
    meta, _ = T.load(t.save(tmp_path / "bp.sgtrace"))
    assert any(op["op"] == "repeat" and op["count"] >= 99 for op in meta["ops"]), \
        "the 200 recorded steps are stored once and repeated"
    _replay(t, tmp_path, f"backprop-{schedule}")
    net.release()


# ---- the profile against the real thing ------------------------------------------------------
@needs_browser
def test_webgl2_profile_is_never_looser_than_the_browser():
    got = browser.limits()
    prof = load_profile("webgl2").limits
    for key in ("max_texture_size", "max_draw_buffers", "max_texture_units",
                "max_fragment_uniform_components"):
        assert prof[key] <= got[key], f"{key}: profile {prof[key]} > browser {got[key]}"
    assert not prof["float32_blend"] or got["float32_blend"]
    assert not prof["float32_render"] or got["float32_render"]
    assert prof["buffer_textures"] is False
    assert got["highp_float"]["precision"] >= 23, "float32 arithmetic in fragment shaders"
    # 32-bit integers: range [-2^31, 2^31 - 1] is reported as log2 magnitudes (31, 30)
    assert got["highp_int"]["rangeMin"] >= 31 and got["highp_int"]["rangeMax"] >= 30
    print(json.dumps(got, indent=1))


# ---- a page a user can open ------------------------------------------------------------------
@needs_browser
def test_xor_page_learns_in_the_browser(tmp_path):
    from shadergpgpu.frontends.webpage import xor_page
    page = tmp_path / "xor.html"
    cfg = xor_page(page, steps=1000, steps_per_section=20)
    assert isinstance(cfg["python_ms_per_step"], float)     # reported (its value: benchmarks/)
    meta, _ = browser.run_page("page.html", {"/page.html": page}, "post=1")
    assert meta["learned"], f"XOR not learned in the browser: {meta}"
    assert "ms_per_step" in meta and len(meta["losses"]) == 50
    assert meta["losses"][-1] < meta["losses"][0]
