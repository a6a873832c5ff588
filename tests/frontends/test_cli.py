"""The ``shadergpgpu`` command, run in-process through ``cli.main([...])``."""
import subprocess
import sys

import pytest

import shadergpgpu
from shadergpgpu.frontends import cli
from shadergpgpu.analysis.reports import REPORTS


def run(capsys, *argv):
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_version(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0
    assert out.strip() == f"shadergpgpu {shadergpgpu.__version__}"


def test_help_lists_commands_and_names(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for word in ("info", "report", "bench", "--version", *REPORTS):
        assert word in out, word


def test_info_prints_capabilities(capsys):
    code, out, _ = run(capsys, "info")
    assert code == 0
    assert "rgba32f_renderable" in out and "loop_cap" in out and "shaders" in out


def test_info_unknown_backend_is_one_line(capsys):
    code, _, err = run(capsys, "info", "--backend", "bogus")
    assert code == 2
    line = one_line(err)
    assert "bogus" in line and "egl" in line


def test_info_missing_egl_device_says_so(capsys):
    code, _, err = run(capsys, "info", "--device-index", "57")
    assert code == 2
    line = one_line(err)
    assert "EGL device 57 does not exist" in line, line
    assert "apt-get" not in line and "Mesa" not in line


def test_info_usage_errors_are_one_line(capsys):
    for argv in (["info", "--device-index", "x"], ["info", "--device-index", "-1"],
                 ["info", "--nope"], ["frobnicate"]):
        code, _, err = run(capsys, *argv)
        assert code == 2, argv
        one_line(err)


def test_report_names_and_no_alias(capsys):
    assert "reduce" not in REPORTS
    code, out, _ = run(capsys, "report", "--help")
    assert code == 0
    for name in REPORTS:
        assert name in out
    code, _, err = run(capsys, "report", "reduce")
    assert code == 2
    line = one_line(err)
    assert "unknown report 'reduce'" in line and "svm" in line
    code, out, _ = run(capsys, "report")
    assert code == 2 and "NAME" in out


def test_report_help_is_the_reports_own(capsys):
    code, out, _ = run(capsys, "report", "blur", "--help")
    assert code == 0
    assert "shadergpgpu report blur" in out and "--quick" in out and "--out" in out


def test_report_usage_error_comes_from_the_report(capsys):
    code, _, err = run(capsys, "report", "blur", "--no-such-option")
    assert code == 2
    assert "--no-such-option" in err


def test_bench_help_is_the_benchmarks_own(capsys):
    code, out, _ = run(capsys, "bench", "--help")
    assert code == 0 and "engine" in out and "sgemm" in out
    code, out, _ = run(capsys, "bench", "engine", "--help")
    assert code == 0
    assert "shadergpgpu bench engine" in out and "--passes" in out
    code, _, err = run(capsys, "bench", "nope")
    assert code == 2
    assert "unknown bench 'nope'" in one_line(err)


def test_module_entry_point():
    r = subprocess.run([sys.executable, "-m", "shadergpgpu", "info", "--backend", "bogus"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_checks_helper_reports_loudly(capsys):
    from shadergpgpu.analysis.reports.common import Checks

    c = Checks("demo")
    assert c.plan("passes of x", 5, 5)
    assert not c.plan("passes of y", 5, 6)
    assert c.target("ratio", 1.1, "<=", 1.2)
    assert not c.target("spread", 1.5, "<=", 1.2)
    assert not c.target("speed", None, ">=", 2.0)
    assert c.finish() == 1
    out = capsys.readouterr().out
    assert "MISMATCH passes of y: plan 5, counter 6" in out
    assert "MISSED spread: 1.5 (target <= 1.2)" in out
    assert "MISSED speed: not measured" in out
    assert "3 of 5 checks FAILED" in out
    ok = Checks()
    ok.plan("z", 1, 1)
    assert ok.compare("k", [{"phase": "a", "expected": 2, "measured": 2, "match": True},
                            {"phase": "extra", "expected": None, "measured": 1, "match": None}])
    assert ok.passed == 2
    assert ok.finish() == 0 and "all 2 checks passed" in capsys.readouterr().out


def test_timing_and_stamp_helpers():
    from shadergpgpu.analysis.reports import common

    calls = []
    t = common.measure(lambda: calls.append(1), repeat=5, warmup=2)
    assert len(calls) == 7 and t.n == 5
    assert t.min <= t.median <= t.max and t.spread >= 1.0
    row = t.row()
    assert set(row) >= {"ms", "ms_min", "ms_max", "spread"}
    timer = common.Timer(repeat=3, warmup=0)
    assert timer(lambda: None).n == 3 and "median of 3" in timer.describe()
    meta = {"device": "GPU X [egl]", "date": "2026-01-02"}
    assert common.stamp(meta) == "GPU X [egl], 2026-01-02"
    assert common.plot_title("t", meta).endswith("GPU X [egl], 2026-01-02")
    xs, ys = common._gapped([1, 2, 4], [1, 4], [10.0, 40.0])
    assert xs == [1, 2, 4] and ys[0] == 10.0 and ys[1] != ys[1] and ys[2] == 40.0


def test_plot_helper_breaks_lines_and_stamps_the_title(tmp_path):
    pytest.importorskip("matplotlib")
    from shadergpgpu.analysis.reports import common

    meta = {"device": "GPU X [egl]", "date": "2026-01-02"}
    path = tmp_path / "p.png"
    assert common.plot_lines(path, {"a": ([1, 2, 4], [1.0, None, 3.0]), "b": ([1, 4], [2, 5])},
                             "n", "ms", "title", meta=meta)
    assert path.stat().st_size > 1000


def test_missing_extra_is_named(capsys, monkeypatch):
    import sys as _sys
    monkeypatch.setitem(_sys.modules, "matplotlib", None)
    monkeypatch.setitem(_sys.modules, "shadergpgpu.analysis.reports.blur", None)
    e = ImportError("No module named 'matplotlib'", name="matplotlib")
    assert "pip install 'shadergpgpu[report]'" in cli._import_problem("the x report", e)
    code, _, err = run(capsys, "report", "blur", "--quick")
    assert code == 2 and "could not be loaded" in one_line(err)


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_every_report_prints_its_own_help(capsys, name):
    code, out, err = run(capsys, "report", name, "--help")
    assert code == 0, err
    assert f"shadergpgpu report {name}" in out and "--quick" in out


def test_profiles_info_profile_and_export_glsl(capsys, tmp_path):
    from shadergpgpu.engine import export
    from shadergpgpu.frontends.cli import main

    assert main(["profiles"]) == 0
    out = capsys.readouterr().out
    for name in ("native", "geforce-7800gtx", "webgl2", "mali-gles31", "raspberrypi4"):
        assert name in out
    assert main(["info", "--profile", "geforce-7800gtx"]) == 0
    out = capsys.readouterr().out
    assert "geforce-7800gtx" in out and "loop_cap                 255" in out
    assert main(["info", "--profile", "nope"]) == 2
    assert "unknown device profile 'nope'" in capsys.readouterr().err
    f = tmp_path / "saxpy.glsl"
    assert main(["export-glsl", "engine/saxpy", "--profile", "webgl2", "-o", str(f)]) == 0
    text = f.read_text()
    assert "#version 300 es" in text and "uniforms: float alpha" in text
    if export.glslang() is not None:
        assert export.check_es(text[text.index("#version"):])[0]
    assert main(["export-glsl", "engine/nope"]) == 2
    assert "unknown kernel 'engine/nope'" in capsys.readouterr().err
