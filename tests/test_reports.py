"""The pass-count reports (`shadergpgpu report NAME --quick`): each runs, exits 0 (plans match
the pass counter), and writes a Markdown report that names the device and date, defines its
symbols, links every PNG it wrote and ends with a summary computed from the run."""
import importlib
import re

import pytest

from shadergpgpu.frontends.reports import common

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
    mod = importlib.import_module(f"shadergpgpu.frontends.reports.{name}")
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
    assert "MISMATCH" not in md and "MISSED" not in md


def test_checks_exit_status(capsys):
    c = common.Checks("t")
    assert c.plan("a", 3, 3) and c.target("b", 1.0, "<=", 1.2)
    assert c.finish() == 0
    c.plan("x", 3, 4)
    c.target("y", 2.0, "<=", 1.2)
    assert c.finish() == 1
    out = capsys.readouterr().out
    assert "MISMATCH x: plan 3, counter 4" in out and "MISSED y" in out


def test_plot_lines_gaps_and_extras(tmp_path):
    pytest.importorskip("matplotlib")
    xs, ys = common._gapped([1, 2, 4], [1, 4], [1.0, 3.0])
    assert ys[0] == 1.0 and ys[1] != ys[1] and ys[2] == 3.0     # NaN where not measured
    assert common.plot_lines(tmp_path / "p.png", {"a": ([1, 4], [1.0, 3.0])}, "x", "y", "t",
                             bands={"a": ([0.5, 2.0], [1.5, 4.0])}, hlines={"ceiling": 5.0},
                             styles={"a": {"marker": "s"}}, note="labels")
    assert (tmp_path / "p.png").stat().st_size > 0
