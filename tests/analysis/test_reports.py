"""The pass-count reports (`shadergpgpu report NAME --quick`): each runs, exits 0 (plans match
the pass counter), and writes a Markdown report that names the device and date, defines its
symbols, links every PNG it wrote and ends with a summary computed from the run. Every timed row
carries the cost model's prediction beside the measured time; `report backprop --profile
geforce-7800gtx` redraws the paper's Fig. 3 / 4 with the 7800 GTX's predicted curves."""
import importlib
import json
import math
import re

import pytest

from shadergpgpu.analysis.reports import common

REPORTS = ["sgemm", "blur", "backprop", "sammon", "svm"]
MD = {"sgemm": "sgemm.md", "blur": "blur.md", "backprop": "backprop.md",
      "sammon": "sammon.md", "svm": "svm.md"}
# a symbol each report must define (a bold name in its Symbols section)
SYMBOL = {"sgemm": "**M, N, K**", "blur": "**sigma**", "backprop": "**MI, MH, MO**",
          "sammon": "**N**", "svm": "**F**"}


@pytest.mark.parametrize("name", REPORTS)
def test_report_quick(name, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    if name == "sammon":
        pytest.importorskip("sklearn")
    mod = importlib.import_module(f"shadergpgpu.analysis.reports.{name}")
    out = tmp_path / name
    rc = mod.main(["--quick", "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert rc == 0, printed[-3000:]
    md = (out / MD[name]).read_text()
    assert "Device" in md
    assert common.today() in md
    assert "## Symbols" in md and SYMBOL[name] in md
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs, "no plot written"
    for png in pngs:
        assert f"]({png})" in md, f"{png} not linked"
    linked = re.findall(r"\]\(([^)]+\.png)\)", md)
    assert all((out / p).is_file() for p in linked), "a link to a PNG that was not written"
    assert "## What the numbers show" in md
    closing = md.split("## What the numbers show", 1)[1].split("## Checks", 1)[0].strip()
    assert len(closing) > 80 and re.search(r"\d", closing)
    # plans match the counter; the model's own MISSED verdicts are reported, not failures
    assert "MISMATCH" not in md
    assert "checks passed" in md.split("## Checks", 1)[1]
    assert "cost model" in md and "predicted ms" in md and "shadergpgpu calibrate" in md
    assert "The cost model is within +-30 % of the measured time on" in closing
    _assert_predicted(name, out)


# where each report keeps its timed rows, and the measured time (ms) of a row
TIMED = {
    "sgemm": ("sgemm", lambda r: r["ms"]),
    "blur": ("blur", lambda r: r["ms"]),
    "svm": ("svm", lambda r: r["ms"] if "kind" in r else r["seconds"] * 1e3),
    "sammon": ("sammon", lambda r: r["fit ms"]),
}


def _model_cols(name, row):
    """[(measured ms, the model's columns)] of a timed row (backprop: one per GPU schedule)."""
    if name != "backprop":
        return [(TIMED[name][1](row), row)]
    from shadergpgpu.analysis.reports.backprop import IMPLS
    return [(row[f"{i} s"] * 1e3, {k[len(i) + 1:]: v for k, v in row.items()
                                   if k.startswith(f"{i} ")}) for i in IMPLS[:3]]


def _assert_predicted(name, out):
    stems = ["fig3", "fig4"] if name == "backprop" else [TIMED[name][0]]
    rows = [r for st in stems for r in json.loads((out / f"{st}.json").read_text())["rows"]]
    assert rows
    for row in rows:
        for measured_ms, cols in _model_cols(name, row):
            assert "model error" not in cols, cols.get("model error")
            pred = cols["predicted ms"]
            assert isinstance(pred, float) and math.isfinite(pred) and pred > 0, cols
            assert isinstance(cols["bound"], str) and cols["bound"], cols
            assert cols["model"] in ("ok", "MISSED"), cols
            # the ratio is taken against the measured time the row shows
            assert cols["measured / predicted"] == pytest.approx(measured_ms / pred, rel=1e-9)
            assert cols["model"] == ("ok" if abs(pred - measured_ms) <= 0.3 * measured_ms
                                     else "MISSED")
        if name == "sgemm":                        # the plotted rate: 2 M N K / predicted time
            flops = 2.0 * row["M"] * row["N"] * row["K"]
            assert row["predicted_gflops"] == pytest.approx(flops / row["predicted ms"] / 1e6)


@pytest.mark.float_blend("the paper's figures (pass counts)")
def test_backprop_profile_redraws_the_papers_figures(tmp_path, capsys):
    """Under the 7800 GTX profile: Fig. 3 / 4 rows with the paper's two points and the 7800 GTX
    predicted curves; the packed step at 2-64-1, N = 1024 within 30 % of the paper's 0.008 s."""
    pytest.importorskip("matplotlib")
    from shadergpgpu.analysis.reports import backprop
    out = tmp_path / "bp"
    rc = backprop.main(["--quick", "--profile", "geforce-7800gtx", "--out", str(out),
                        "--no-progress"])
    printed = capsys.readouterr().out
    assert rc == 0, printed[-3000:]
    md = (out / "backprop.md").read_text()
    for fig, key in (("fig3", "MH"), ("fig4", "N")):
        rows = json.loads((out / f"{fig}_7800gtx.json").read_text())["rows"]
        assert len(rows) >= 3 and len({r[key] for r in rows}) == len(rows)
        at = [r for r in rows if r["MH"] == 64 and r["N"] == 1024]
        assert len(at) == 1
        r = at[0]
        assert r["paper packed s"] == 0.008 and r["paper unpacked s"] == 0.026
        assert abs(r["7800GTX predicted packed s"] / 0.008 - 1) <= 0.30
        assert abs(r["7800GTX predicted unpacked s"] / 0.026 - 1) <= 0.30
        for q in rows:                  # packing: fewer passes, the same work, less time
            assert 0 < q["7800GTX predicted packed s"] < q["7800GTX predicted unpacked s"]
        png = f"{fig}_predicted_7800gtx.png"
        assert (out / png).is_file() and f"]({png})" in md
    assert "The paper's figures on the GeForce 7800 GTX" in md
    assert "under profile geforce-7800gtx" in md     # the profile's notes stay
    assert "ping-pong" in md
    _assert_predicted("backprop", out)


def test_checks_exit_status(capsys):
    c = common.Checks("t")
    assert c.plan("a", 3, 3) and c.target("b", 1.0, "<=", 1.2)
    assert c.finish() == 0
    c.plan("x", 3, 4)
    c.target("y", 2.0, "<=", 1.2)
    assert c.finish() == 1
    out = capsys.readouterr().out
    assert "MISMATCH x: plan 3, counter 4" in out and "MISSED y" in out


def test_plot_lines_draws_a_prediction_dashed_in_its_series_colour(tmp_path, monkeypatch):
    plt = pytest.importorskip("matplotlib.pyplot")
    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    assert common.plot_lines(tmp_path / "p.png", {
        "b predicted": ([1, 2], [1.0, 2.0]), "a": ([1, 2], [3.0, 4.0]),
        "b": ([1, 2], [1.5, 2.5]), "a model": ([1, 2], [3.5, 4.5])}, "x", "y", "t",
        predicts={"b predicted": "b", "a model": "a"})
    lines = {ln.get_label(): ln for ln in figs[0].axes[0].get_lines()}
    for pred, meas in (("b predicted", "b"), ("a model", "a")):
        assert lines[pred].get_color() == lines[meas].get_color()
        assert lines[pred].get_linestyle() == "--" and lines[meas].get_linestyle() == "-"
    assert lines["a"].get_color() != lines["b"].get_color()
    monkeypatch.undo()
    plt.close(figs[0])


def test_predictor_columns_and_failures(monkeypatch):
    """One call's snapshot predicted; a model that raises leaves the row without a prediction
    and says why; the summary names the MISSED rows."""
    import numpy as np

    import shadergpgpu as sg
    from shadergpgpu.analysis.reports import predicted

    dev = sg.Device()
    try:
        x = dev.array(np.arange(4096, dtype=np.float32).reshape(64, 64))
        pred = predicted.Predictor(dev)
        assert pred.speeds is not None, pred.error
        call = lambda: sg.sgemm(x, x).release()                            # noqa: E731
        snap = pred.snapshot(call)
        assert sum(v["passes"] for v in snap.values()) >= 1
        cols = pred.of(call, 0.01)
        assert cols["predicted ms"] > 0 and math.isfinite(cols["predicted ms"])
        assert cols["measured / predicted"] == pytest.approx(10.0 / cols["predicted ms"])
        t = common.Timer(dev.finish, repeat=2, warmup=1, model=pred)(call)
        assert t.row()["predicted ms"] > 0 and t.row()["ms"] == t.median * 1e3

        def boom(*a, **k):
            raise RuntimeError("no work declared")
        monkeypatch.setattr(predicted, "predicted_columns", boom)
        bad = pred.of(call, 0.01)
        assert bad["model"] == "n/a" and "no work declared" in bad["model error"]
        assert "predicted ms" not in bad

        def fails():
            raise ValueError("lost context")
        assert "lost context" in pred.of(fails, 0.01)["model error"]
    finally:
        dev.release()
    from shadergpgpu.analysis.reports.predicted import model_summary
    s = model_summary([("a", {"model": "ok"}),
                       ("b", {"model": "MISSED", "measured / predicted": 2.5,
                              "bound": "overhead"}),
                       ("c", {"model": "n/a", "model error": "model: boom"})])
    assert "on 1 of 3 timed rows" in s and "b (2.5x, overhead)" in s and "c: model: boom" in s


def test_plot_lines_gaps_and_extras(tmp_path):
    pytest.importorskip("matplotlib")
    xs, ys = common._gapped([1, 2, 4], [1, 4], [1.0, 3.0])
    assert ys[0] == 1.0 and ys[1] != ys[1] and ys[2] == 3.0     # NaN where not measured
    assert common.plot_lines(tmp_path / "p.png", {"a": ([1, 4], [1.0, 3.0])}, "x", "y", "t",
                             bands={"a": ([0.5, 2.0], [1.5, 4.0])}, hlines={"ceiling": 5.0},
                             styles={"a": {"marker": "s"}}, note="labels")
    assert (tmp_path / "p.png").stat().st_size > 0
