"""The harness of ``benchmarks/js_leads.py`` (our lead over tfjs-webgl and gpu.js): its float64
references and checks, and, where the libraries and Chromium are here, every side's result at
small sizes. Nothing is timed (the pages run check-only: a null timing rule).

The browser test skips, saying why, without Chromium or without the tfjs / gpu.js bundles in
``~/.cache/shadergpgpu/js/`` (or ``$SHADERGPGPU_JS_LIBS``): they are not part of the repository
(the benchmark's docstring says how to get them). Bound: every side's one call within 1e-4 of
the largest |float64 reference| (the benchmark's own ``TOL``; the MLP's update W - W0 within
1e-2 of the float64 update).
"""
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from scipy.ndimage import gaussian_filter1d

import shadergpgpu as sg
from shadergpgpu.frontends import browser

from tests.reference import assert_close

ROOT = Path(__file__).resolve().parents[2]


def _load():
    spec = importlib.util.spec_from_file_location("js_leads", ROOT / "benchmarks" / "js_leads.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


J = _load()
LIBS = Path(os.environ.get("SHADERGPGPU_JS_LIBS", J.DEFAULT_LIBS)).expanduser()
HAVE_LIBS = all((LIBS / f).is_file() for f in J.LIB_FILES.values())
needs_pages = pytest.mark.skipif(
    browser.find_chromium() is None or not HAVE_LIBS,
    reason="no Chromium, or no tfjs / gpu.js bundles in " + str(LIBS) + " (not part of the "
           "repository: benchmarks/js_leads.py says how to get them)")


def test_blur_taps_are_scipys_kernel():
    # the taps every side gets: scipy's own filter of an impulse (float64), radius 16 at sigma 4
    taps = J.blur_taps(4.0)
    assert taps.size == 2 * 16 + 1
    impulse = np.zeros(101)
    impulse[50] = 1.0
    want = gaussian_filter1d(impulse, 4.0, mode="constant", truncate=4.0)[50 - 16:50 + 17]
    assert_close(taps, want, rtol=0, atol=1e-15)


def test_mlp_check_refuses_a_step_without_its_update():
    blob = J.Blob()
    case = J.make_cases("mlp", blob, small=True)[1]
    ref, w0 = case["ref"]
    assert J.error("mlp", [r.copy() for r in ref], case["ref"])[0] == 0.0
    # the weights unchanged: within 1e-4 of max |W| perhaps, never within the update's bound
    assert J.error("mlp", [w.astype(np.float64) for w in w0], case["ref"])[0] > J.TOL
    # half the update
    half = [w + 0.5 * (r - w) for r, w in zip(ref, w0)]
    assert J.error("mlp", half, case["ref"])[0] > J.TOL


def test_merge_rounds_takes_the_fastest_and_the_median_of_all():
    a = [{"case": "x", "variant": "v", "min_ms": 3.0, "median_ms": 4.0, "times_ms": [3, 4, 5],
          "err": 1e-7, "err_text": "1e-7"}]
    b = [{"case": "x", "variant": "v", "min_ms": 2.0, "median_ms": 6.0, "times_ms": [2, 6, 7],
          "err": 2e-7, "err_text": "2e-7"}]
    (m,) = J.merge_rounds([a, b])
    assert m["min_ms"] == 2.0 and m["median_ms"] == 5 and m["repeats"] == 6
    assert m["err"] == 2e-7 and m["rounds"] == 2


@needs_pages
@pytest.mark.parametrize("work", J.WORKLOADS)
def test_every_side_matches_float64(work):
    blob = J.Blob()
    cases = J.make_cases(work, blob, small=True)
    with sg.Device() as dev:
        rows = {"shadergpgpu": J.run_ours(dev, work, cases, None)}
    for lib in ("tfjs", "gpujs"):
        info, rows[lib] = J.run_js(lib, LIBS, work, cases, blob, None, 300.0)
        if lib == "tfjs":
            assert info["backend"] == "webgl" and info["webgl_version"] == 2 and info["float32"]
        else:
            assert info["kernel"] == "WebGL2Kernel" and info["mode"] == "gpu"
    for side, rs in rows.items():
        assert {r["case"] for r in rs} == {c["name"] for c in cases}, side
        for r in rs:
            assert r["err"] <= J.TOL, f"{side} {r['case']} {r['variant']}: {r['err_text']}"
            assert "min_ms" not in r     # nothing timed
            if side == "gpujs":
                assert r["webgl2_kernels"] > 0
