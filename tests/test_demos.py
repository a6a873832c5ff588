"""The demos refuse bad arguments before any work: exit status != 0, one line on stderr, no
traceback; every option has help text; outputs go to the ignored out/ folder by default."""
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMOS = ROOT / "demos"
DEMO_NAMES = ["backprop_xor", "backprop_digits", "blur_image", "sammon_digits", "svm_digits"]


def assert_one_line_error(r, *words):
    err = r.stderr.strip()
    assert r.returncode != 0, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr + r.stdout, r.stderr
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


@pytest.fixture(scope="module")
def text_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("demo") / "notes.txt"
    p.write_text("not an image\n")
    return p


TEXT = "<a text file>"
CASES = [
    ("blur_image", ["/nonexistent/photo.png"], ["does not exist"]),
    ("blur_image", [TEXT], ["notes.txt", "not an image"]),
    ("blur_image", ["--sigma", "-3"], ["--sigma", "> 0"]),
    ("blur_image", ["--sigma", "0"], ["--sigma", "> 0"]),
    ("blur_image", ["--sigma", "1", "2", "3"], ["--sigma", "one or two"]),
    ("blur_image", ["--sigma", "nan"], ["--sigma", "finite"]),
    ("blur_image", ["-o", "out.txt"], ["out.txt", "suffix"]),
    ("blur_image", ["--method", "box"], ["--method", "invalid choice"]),
    ("blur_image", ["--window"], ["--window"]),
    ("backprop_digits", ["--max-iter", "0"], ["--max-iter", ">= 1"]),
    ("backprop_digits", ["--solver", "lbfgs"], ["--solver", "invalid choice"]),
    ("backprop_xor", ["--hidden", "x"], ["--hidden", "integer"]),
    ("backprop_xor", ["--grid", "1"], ["--grid"]),
    ("svm_digits", ["--gamma", "foo"], ["--gamma", "'scale'", "'foo'"]),
    ("svm_digits", ["--C", "-1"], ["--C", "> 0"]),
    ("sammon_digits", ["--out", "plot.txt"], ["plot.txt", "suffix"]),
    ("sammon_digits", ["--iters", "0"], ["--iters"]),
]


# One subprocess runs all the cases (the imports are paid once): each case runs its demo as
# __main__ with its own argv, stdout and stderr.
DRIVER = r"""
import contextlib, io, json, runpy, sys, traceback
cases = json.loads(sys.argv[1])
res = []
for path, args in cases:
    if sys.path[0] != str(__import__("pathlib").Path(path).parent):
        sys.path.insert(0, str(__import__("pathlib").Path(path).parent))
    out, err = io.StringIO(), io.StringIO()
    sys.argv = [path] + args
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_path(path, run_name="__main__")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
    res.append({"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
print("RESULTS" + json.dumps(res))
"""


class Result:
    def __init__(self, d):
        self.__dict__.update(d)


@pytest.fixture(scope="module")
def results(text_file):
    import json
    cases = [(n, a) for n, a, _ in CASES]
    todo = [[str(DEMOS / f"{n}.py"), [str(text_file) if x == TEXT else x for x in a]]
            for n, a in cases]
    env = dict(os.environ)
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    r = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(todo)], capture_output=True,
                       text=True, timeout=300, env=env, cwd=ROOT)
    assert "RESULTS" in r.stdout, r.stdout + r.stderr
    rows = json.loads(r.stdout.split("RESULTS", 1)[1])
    return {(n, tuple(a)): Result(row) for (n, a), row in zip(cases, rows)}


@pytest.mark.parametrize("name,args,words", CASES,
                         ids=[f"{n}:{' '.join(a)}" for n, a, _ in CASES])
def test_bad_arguments_are_refused_in_one_line(results, name, args, words):
    r = results[(name, tuple(args))]
    assert_one_line_error(r, *words)
    assert "device:" not in r.stdout       # refused before the device was made
    assert not (ROOT / "out.txt").exists()


@pytest.mark.parametrize("module,words", [
    ("matplotlib", ["matplotlib", "pip install 'shadergpgpu[report]'"]),
    ("scipy", ["scipy", "pip install 'shadergpgpu[report]'"]),
    ("sklearn", ["scikit-learn", "pip install scikit-learn"]),
])
def test_missing_optional_package_names_the_extra(module, words, monkeypatch, capsys):
    monkeypatch.syspath_prepend(str(DEMOS))
    import _demo

    monkeypatch.setitem(sys.modules, module, None)     # import fails as if not installed
    with pytest.raises(SystemExit) as e:
        _demo.need(module, "the reference")
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    for w in words:
        assert w in err, err


def _parser_of(name, monkeypatch):
    """The demo's argument parser, captured when its main() parses (nothing runs)."""
    monkeypatch.syspath_prepend(str(DEMOS))
    import _demo

    class Stop(Exception):
        pass

    got = {}

    def grab(self, args=None, namespace=None):
        got["parser"] = self
        raise Stop

    monkeypatch.setattr(_demo.Parser, "parse_args", grab)
    spec = importlib.util.spec_from_file_location(f"_demo_{name}", DEMOS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with pytest.raises(Stop):
        mod.main([])
    return got["parser"]


@pytest.mark.parametrize("name", DEMO_NAMES)
def test_every_option_has_help(name, monkeypatch):
    p = _parser_of(name, monkeypatch)
    missing = [a.option_strings or a.dest for a in p._actions if not a.help]
    assert not missing, f"{name}: options without help text: {missing}"


def test_outputs_default_to_the_ignored_out_folder(monkeypatch):
    monkeypatch.syspath_prepend(str(DEMOS))
    import _demo

    p = _demo.Parser(prog="demo")
    path = _demo.output_path(p, None, "x.png", (".png",))
    assert path == ROOT / "out" / "x.png"
    assert "/out/" in (ROOT / ".gitignore").read_text()
    with pytest.raises(SystemExit) as e:
        _demo.output_path(p, "result.txt", "x.png", (".png",))
    assert e.value.code == 2
