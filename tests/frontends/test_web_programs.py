"""Programs with inputs (sg.export_web): fitted estimators predicting in a real browser.

Each exportable estimator is fitted here on a small problem, exported with ``max_rows = 48`` and
run by ``shadergpgpu/web/program.js`` in headless Chromium (WebGL2 through ANGLE on Mesa
llvmpipe) on new random inputs of 1, 17 and 48 rows: every output equals the estimator's own
method within 1e-5 of the largest magnitude of its values (labels equal). All the cases run in
ONE page load (the ``browser_run`` fixture), with a damaged program and bad calls beside them.
The browser tests skip, saying why, where no Chromium is installed (as tests/frontends/test_web.py's).

SVC's decision values are float64 on the host in Python and float32 in the page: a single row
near the decision boundary has a value much smaller than the model's scale, so the 1-row case
is held to 1e-5 of the largest magnitude of the same model's 48-row case.
"""
import warnings

import numpy as np
import pytest

from sklearn.base import is_regressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler

import shadergpgpu as sg
from shadergpgpu.engine.bundle import BundleError
from shadergpgpu.frontends import browser, webexport
from shadergpgpu.frontends.webmodels import estimator_program

from tests.reference import assert_close

needs_browser = pytest.mark.skipif(
    browser.find_chromium() is None,
    reason="no Chromium to run programs in (apt-get install chromium, or set "
           "SHADERGPGPU_CHROMIUM)")

M = 48
ROWS = (1, 17, M)
RTOL = 1e-5
METHODS = {"mlp-multiclass": ("predict", "predict_proba"),
           "mlp-binary": ("predict", "predict_proba"),
           "mlp-multilabel": ("predict", "predict_proba"),
           "mlp-regressor": ("predict",),
           "kmeans": ("predict",),
           "svc-binary": ("predict", "decision_function"),
           "svc-ovr": ("predict", "decision_function"),
           "svc-ovo": ("predict", "decision_function"),
           "pipeline-scaler-mlp": ("predict",)}


def _fit():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((160, 7))
    y3 = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.3)
    y2 = np.where(X[:, 0] * X[:, 1] > 0, 7, -2)
    mlp = dict(max_iter=40, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return X, {
            "mlp-multiclass": sg.MLPClassifier((13,), **mlp).fit(X, y3),
            "mlp-binary": sg.MLPClassifier((9, 6), activation="tanh", **mlp).fit(X, y2),
            "mlp-multilabel": sg.MLPClassifier((8,), activation="logistic", **mlp).fit(
                X, np.c_[X[:, 0] > 0, X[:, 2] > 0.5].astype(int)),
            "mlp-regressor": sg.MLPRegressor(hidden_layer_sizes=(11,), **mlp).fit(
                X, np.c_[X[:, 0] + X[:, 1], X[:, 2] * 3]),
            "kmeans": sg.KMeans(5, n_init=1, random_state=0).fit(X * 3 + 1),
            "svc-binary": sg.SVC(C=2.0).fit(X, y2),
            "svc-ovr": sg.SVC().fit(X, y3),
            "svc-ovo": sg.SVC(decision_function_shape="ovo").fit(X, y3),
            "pipeline-scaler-mlp": make_pipeline(
                StandardScaler(), sg.MLPRegressor(hidden_layer_sizes=(10,), **mlp)).fit(
                X * 5 + 3, X[:, 0] - X[:, 3]),
        }


@pytest.fixture(scope="module")
def fitted():
    X, ests = _fit()
    progs = {k: estimator_program(e, M) for k, e in ests.items()}
    return ests, progs


@pytest.fixture(scope="module")
def browser_run(fitted):
    """Every case in one page: the estimators' programs on new inputs, a damaged program, and
    calls the page must refuse."""
    if browser.find_chromium() is None:
        pytest.skip("no Chromium")
    ests, progs = fitted
    names = list(progs)
    rng = np.random.default_rng(1)
    cases, what = [], []
    for i, k in enumerate(names):
        for n in ROWS:
            X = rng.standard_normal((n, 7))
            if k == "kmeans":
                X = X * 4 + 1   # beyond the fit's range too
            if k.startswith("pipeline"):
                X = X * 5 + 3
            cases.append((i, {"X": X}))
            what.append(("ok", k, X))
    # a program of one's own computation (record_program): an elementwise kernel, two outputs
    programs_own = [_own_program()]
    X = rng.standard_normal((11, 5))
    cases.append((len(names), {"X": X, "rows": None}))     # rows from X's length
    what.append(("own", "own", X))
    names_own = len(names)
    good = progs["mlp-multiclass"]
    damaged = bytearray(good)
    damaged[-5] ^= 0x10                       # one bit of the last chunk
    programs = [progs[k] for k in names] + programs_own + [bytes(damaged)]
    cases.append((names_own + 1, {"X": np.zeros((2, 7))}))
    what.append(("damaged", None, None))
    cases.append((0, {"X": np.zeros((M + 1, 7))}))
    what.append(("too many rows", None, None))
    cases.append((0, {"X": np.zeros((3, 6))}))
    what.append(("wrong width", None, None))
    res, page = webexport.run_programs(programs, cases, check=False)
    return list(zip(what, res)), page, len(names) + 1


def _own_formula(x):
    x = np.asarray(x, np.float32)
    return x * x * np.float32(0.5) + x * np.float32(3.0) - np.float32(1.0), x + x


def _own_program():
    k = sg.ElementwiseKernel("float x", "float y, float z", "y = x * x * 0.5 + x * 3.0 - 1.0; "
                             "z = x + x", "web_program_poly")

    def fn(dev, ins):
        x = dev.array(ins["X"])
        y, z = dev.empty(x.shape), dev.empty(x.shape)
        k(x, y, z)
        y.get()
        z.get()

    return webexport.record_program(fn, {"X": 5}, ["Y", "Z"], 16)


def _close(got, want, scale, what):
    got = np.asarray(got, np.float64).reshape(np.shape(want))
    assert_close(got, want, rtol=0, atol=RTOL * max(scale, 1e-30), what=what)


# ---- without a browser --------------------------------------------------------------------------
def test_programs_record_their_rows(fitted):
    ests, progs = fitted
    modes = {}
    for k, raw in progs.items():
        meta, _ = webexport.load_program_bytes(raw, k)
        p = meta["program"]
        assert p["max_rows"] == M and [i["name"] for i in p["inputs"]] == ["X"]
        assert any(op["op"] == "input" for op in meta["ops"])
        modes[k] = p["mode"]
        outs = [o["name"] for o in p["outputs"]] + [q["name"] for q in p["post"]]
        for method in METHODS[k]:
            assert method in outs, f"{k}: no {method} output"
    # the networks and the SVC draw n rows only; KMeans's points are column-ordered (pad)
    assert all(modes[k] == "rows" for k in modes if k != "kmeans")
    assert modes["kmeans"] == "pad"


def test_damaged_programs_are_refused_before_any_browser(fitted, tmp_path):
    raw = fitted[1]["svc-ovr"]
    cases = {"truncated": raw[:-9], "appended": raw + b"\0\0\0\0",
             "chunk": raw[:-3] + bytes([raw[-3] ^ 1]) + raw[-2:],
             "header": raw[:40] + bytes([raw[40] ^ 4]) + raw[41:]}
    for what, bad in cases.items():
        with pytest.raises(BundleError):
            webexport.load_program_bytes(bad, what)
    path = tmp_path / "bad.sgprog"
    path.write_bytes(cases["chunk"])
    with pytest.raises(BundleError, match="checksum mismatch in chunk"):
        webexport.web_run(path, {"X": np.zeros((1, 7))})
    # a trace bundle is no program
    with sg.trace(sg.Device(profile="webgl2")) as t:
        t.device.array(np.ones((2, 2), np.float32)).get()
    with pytest.raises(BundleError, match="not a program"):
        webexport.load_program(t.save(tmp_path / "t.sgtrace"))


def test_bad_arguments_are_refused_naming_them(fitted):
    ests, _ = fitted
    from sklearn.linear_model import LinearRegression
    with pytest.raises(ValueError, match="estimator.*not fitted"):
        sg.export_web(sg.MLPClassifier(), "x.sgprog")
    with pytest.raises(ValueError, match="estimator.*not fitted"):
        sg.export_web(sg.KMeans(3), "x.sgprog")
    with pytest.raises(TypeError, match="estimator.*LinearRegression"):
        sg.export_web(LinearRegression().fit([[0.0], [1.0]], [0, 1]), "x.sgprog")
    with pytest.raises(TypeError, match="max_rows"):
        sg.export_web(ests["kmeans"], "x.sgprog", max_rows=2.5)
    with pytest.raises(ValueError, match="max_rows"):
        sg.export_web(ests["kmeans"], "x.sgprog", max_rows=0)
    with pytest.raises(ValueError, match="max_rows.*2048"):
        sg.export_web(ests["mlp-binary"], "x.sgprog", max_rows=100_000)
    with pytest.raises(TypeError, match="estimator.*MinMaxScaler -> MLPClassifier"):
        sg.export_web(make_pipeline(MinMaxScaler(), ests["mlp-binary"]), "x.sgprog")
    with pytest.raises(TypeError, match="estimator.*KMeans"):
        sg.export_web(make_pipeline(StandardScaler().fit([[0.0], [1.0]]), ests["kmeans"]),
                      "x.sgprog")
    with pytest.raises(ValueError, match="estimator.*StandardScaler is not fitted"):
        sg.export_web(make_pipeline(StandardScaler(), ests["mlp-binary"]), "x.sgprog")


def test_cli_web_run_without_browser(monkeypatch, tmp_path, capsys, fitted):
    from shadergpgpu.frontends.cli import main
    prog = tmp_path / "m.sgprog"
    prog.write_bytes(fitted[1]["mlp-binary"])
    np.save(tmp_path / "x.npy", np.zeros((2, 7)))
    assert main(["web-run", str(prog), "--input", f"Y={tmp_path / 'x.npy'}",
                 "-o", str(tmp_path / "o.npz")]) == 2
    assert "takes X" in capsys.readouterr().err
    monkeypatch.setenv("SHADERGPGPU_CHROMIUM", str(tmp_path / "no-such-browser"))
    assert main(["web-run", str(prog), "--input", f"X={tmp_path / 'x.npy'}",
                 "-o", str(tmp_path / "o.npz")]) == 2
    assert "no Chromium" in capsys.readouterr().err


# ---- in the browser ------------------------------------------------------------------------------
@needs_browser
@pytest.mark.parametrize("name", list(METHODS))
def test_estimator_predicts_in_the_browser(browser_run, fitted, name):
    ests, _ = fitted
    est = ests[name]
    runs, page, _ = browser_run
    mine = [(X, out) for (kind, k, X), out in runs if kind == "ok" and k == name]
    assert [len(X) for X, _ in mine] == list(ROWS)
    scales = {}
    for X, out in reversed(mine):          # the max_rows case first: the model's scale
        assert not isinstance(out, str), f"{name}: the page failed: {out}"
        for method in METHODS[name]:
            want = np.asarray(getattr(est, method)(X))
            if method == "predict" and not is_regressor(est):
                np.testing.assert_array_equal(np.asarray(out[method]).reshape(want.shape),
                                              want, err_msg=f"{name} {method} {len(X)} rows")
                continue
            scale = float(np.max(np.abs(want)))
            scales.setdefault(method, scale)
            if name.startswith("svc") and len(X) == 1:
                scale = max(scale, scales[method])
            _close(out[method], want, scale, f"{name} {method} {len(X)} rows")


def test_record_program_of_ones_own_computation():
    meta, _ = webexport.load_program_bytes(_own_program())
    p = meta["program"]
    assert p["mode"] == "rows" and [o["name"] for o in p["outputs"]] == ["Y", "Z"]
    with pytest.raises(webexport.ProgramError, match="outputs"):
        webexport.record_program(lambda dev, ins: dev.array(ins["X"]).get(), {"X": 3},
                                 ["a", "b"], 8)
    with pytest.raises(webexport.ProgramError, match="input 'X'"):
        webexport.record_program(lambda dev, ins: dev.array(ins["X"] * 2).get(), {"X": 3},
                                 ["a"], 8)


@needs_browser
def test_ones_own_program_in_the_browser(browser_run):
    runs, _, _ = browser_run
    (X, out), = [(X, out) for (kind, _, X), out in runs if kind == "own"]
    y, z = _own_formula(X)
    _close(out["Y"], y, np.abs(y).max(), "own Y")
    np.testing.assert_array_equal(out["Z"], z)


@needs_browser
def test_the_page_refuses_damage_and_bad_calls(browser_run):
    runs, page, n_good = browser_run
    errors = page["load_errors"]  # the estimators' programs and one's own load; the damaged not
    assert errors[:n_good] == [None] * n_good
    assert "checksum mismatch in chunk" in errors[n_good]
    got = {kind: out for (kind, _, _), out in runs if kind != "ok"}
    assert "was refused" in got["damaged"]
    assert "rows" in got["too many rows"] and "max_rows = 48" in got["too many rows"]
    assert "input X" in got["wrong width"]


@needs_browser
def test_cli_web_run(fitted, tmp_path):
    from shadergpgpu.frontends.cli import main
    est = fitted[0]["mlp-multiclass"]
    prog = sg.export_web(est, tmp_path / "m.sgprog", max_rows=10)
    X = np.random.default_rng(2).standard_normal((10, 7))
    np.save(tmp_path / "x.npy", X)
    assert main(["web-run", str(prog), "--input", f"X={tmp_path / 'x.npy'}",
                 "-o", str(tmp_path / "o.npz")]) == 0
    out = np.load(tmp_path / "o.npz")
    np.testing.assert_array_equal(out["predict"], est.predict(X))
    want = est.predict_proba(X)
    _close(out["predict_proba"], want, np.abs(want).max(), "web-run")


# ---- the digits page -----------------------------------------------------------------------------
@needs_browser
@pytest.mark.parametrize("source", ["mnist", "sklearn"])
def test_digits_page_classifies_drawn_strokes_as_python_does(tmp_path, source):
    """Strokes drawn by script through the page's pointer events: the page's probabilities
    (WebGL2) equal predict_proba on the pixels the page made, within 1e-5 (MNIST's 28 x 28
    where its cache is present, and scikit-learn's 8 x 8 digits)."""
    from shadergpgpu.frontends.digitspage import MNIST_NPZ, digits_page
    if source == "mnist" and not MNIST_NPZ.is_file():
        pytest.skip(f"no MNIST cache at {MNIST_NPZ} (benchmarks/mnist_mlp.py makes it)")
    page = tmp_path / "digits.html"
    cfg = digits_page(page, hidden=32, epochs=2 if source == "mnist" else 30, n_train=2000,
                      max_rows=1, source=source)
    clf = cfg["estimator"]
    meta, arrays = browser.run_page("page.html", {"/page.html": page}, "selftest=1")
    assert meta["runs"] == len(meta["cases"]) == 3
    side = cfg["side"]
    for case, x, p in zip(meta["cases"], arrays[0::2], arrays[1::2]):
        assert x.shape == (side * side,) and 0.0 <= x.min() and x.max() <= 1.0
        assert (x > 0).sum() > side, "the strokes reached the network's input"
        want = clf.predict_proba(x.reshape(1, -1).astype(np.float64))[0]
        _close(p, want, float(np.abs(want).max()), "digits page")
        assert case["predict"] == int(clf.predict(x.reshape(1, -1))[0])


def test_rows_rewiring_reads_row_counts_and_blocks_of_rows():
    """Textures ceil(rows / q) high (q = 1, 2, 4) and uniforms holding those counts are the row
    places; anything else differing between the two records makes the program pad."""
    M, m = 50, 46

    def rec(n, extra=0):
        ops = [{"op": "upload", "tex": 0, "data": 0},
               {"op": "draw", "prog": 0, "units": [["A", 0, 0]], "out": [1], "viewport": None,
                "blend": None, "uniforms": {"s": [n, 7, 2, 2], "nb": n, "k": 3 + extra}},
               {"op": "draw", "prog": 0, "units": [["A", 0, 1]], "out": [2], "viewport": None,
                "blend": None, "uniforms": {"s": [-(-n // 4), 7, 2, 2]}},
               {"op": "read", "tex": 2, "rect": None}]
        meta = {"programs": ["p"], "textures": [[2, n], [2, n], [2, -(-n // 4)]],
                "prelude": [], "sections": {}, "ops": ops}
        return (meta,)

    rows = webexport._row_rewiring(rec(M), rec(m), M, m)
    assert rows == {"textures": [[0, 1], [1, 1], [2, 4]],
                    "draws": [[1, [["s", 0, 1], ["nb", -1, 1]]], [2, [["s", 0, 4]]]],
                    "reads": [3]}
    assert webexport._row_rewiring(rec(M), rec(m, extra=1), M, m) is None


def test_rows_rewiring_is_checked_at_every_residue():
    """A texture 4 ceil(rows / 4) high looks like a row count at multiples of 4 only: the
    records one to three rows fewer refuse the rewiring (the program pads instead)."""
    def rec(n):
        h = 4 * -(-n // 4)
        return {"programs": ["p"], "textures": [[2, n], [2, h]], "prelude": [], "sections": {},
                "ops": [{"op": "upload", "tex": 0, "data": 0},
                        {"op": "draw", "prog": 0, "units": [["A", 0, 0]], "out": [1],
                         "viewport": None, "blend": None, "uniforms": {"s": [h, 7, 2, 2]}},
                        {"op": "read", "tex": 1, "rect": None}]}

    rows = webexport._row_rewiring((rec(1000),), (rec(996),), 1000, 996)
    assert rows is not None and [1, 1] in rows["textures"]     # fooled by two records
    assert webexport._rewiring_holds(rows, rec(1000), rec(992), 992)
    assert not webexport._rewiring_holds(rows, rec(1000), rec(999), 999)
