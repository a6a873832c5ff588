"""The package's shape: layers import downwards only, and no import circle between modules.

Layers, bottom to top: engine, ops, algorithms, distributed, analysis, frontends. A module may
import its own layer or a lower one; the algorithm packages may use each other, without a
circle. The compute (engine, ops, algorithms) names nothing of the analysis, not even by a
string (``import_module("shadergpgpu.analysis...")``, a registry of module names): the analysis
observes the compute. These checks read the source (``ast``), function-local imports included,
so a lazy import cannot hide a circle. No two modules of the library import each other, directly
or round a circle (a package that re-exports its submodules is in a circle only where a
submodule imports the package back).
"""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1] / "shadergpgpu"
RANK = {"engine": 0, "ops": 1, "algorithms": 2, "distributed": 3, "analysis": 4, "frontends": 5}
#: the layers that must not name the analysis, by import or by string
COMPUTE = ("engine", "ops", "algorithms")
#: a string naming a module of the analysis (absolute, or relative as import_module takes it)
ANALYSIS_NAME = re.compile(r"^(shadergpgpu\.|\.+)analysis(\.[\w.]+)?$")


def _module(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, pkg: str) -> str:
    """The absolute module a ``from ... import`` in package ``pkg`` names."""
    if not node.level:
        return node.module or ""
    base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(path: pathlib.Path):
    """(line, imported module) for every import of this package in ``path``."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            full = _absolute(node, pkg)
            names = [full] + [f"{full}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name.startswith("shadergpgpu."):
                yield node.lineno, name


def _layer(mod: str):
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def _unit(mod: str):
    """The unit a circle is looked for between: a layer, or one algorithm package."""
    parts = mod.split(".")
    if len(parts) > 2 and parts[1] == "algorithms":
        return ".".join(parts[:3])
    return _layer(mod)


SOURCES = sorted(ROOT.rglob("*.py"))


def _upward(sources):
    return [f"{_module(p)}:{line} imports {name}"
            for p in sources for line, name in _imports(p)
            if _layer(_module(p)) and _layer(name)
            and RANK[_layer(name)] > RANK[_layer(_module(p))]]


def test_layers_import_downwards_only():
    upward = _upward(SOURCES)
    assert not upward, "imports from a higher layer:\n" + "\n".join(upward)


def _names_of_analysis(sources):
    """'module:line names X' for every string constant of a compute module that names a module
    of the analysis (an import by string, or a registry entry)."""
    out = []
    for p in sources:
        if _layer(_module(p)) not in COMPUTE:
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    ANALYSIS_NAME.match(node.value.strip()):
                out.append(f"{_module(p)}:{node.lineno} names {node.value.strip()}")
    return out


def test_the_compute_names_nothing_of_the_analysis():
    """engine, ops and algorithms import nothing of shadergpgpu.analysis, by any means: the
    upward imports are refused above; here the strings (import_module, registries)."""
    named = _names_of_analysis(SOURCES)
    assert not named, "the compute names the analysis:\n" + "\n".join(named)


def test_the_string_rule_sees_a_violation(tmp_path, monkeypatch):
    """The string rule can fail: a registry of plan modules in a (fake) engine module and an
    import_module of a relative name are both found; a docstring that mentions the analysis is
    not an import."""
    root = tmp_path / "shadergpgpu"
    probe = root / "engine" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text('"""Plans live in shadergpgpu.analysis.plans (see there)."""\n'
                     'PLAN_MODULES = ("shadergpgpu.analysis.plans.backprop",)\n'
                     'def load():\n'
                     '    import importlib\n'
                     '    return importlib.import_module("..analysis", __package__)\n')
    monkeypatch.setitem(globals(), "ROOT", root)
    named = _names_of_analysis([probe])
    assert named == ["shadergpgpu.engine.probe:2 names shadergpgpu.analysis.plans.backprop",
                     "shadergpgpu.engine.probe:5 names ..analysis"]
    assert _upward([probe]) == []      # strings are not imports: only the string rule sees them


def test_the_compute_does_not_import_the_analysis(tmp_path, monkeypatch):
    """An import of the analysis from an algorithm module is an upward import."""
    root = tmp_path / "shadergpgpu"
    probe = root / "algorithms" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def plan():\n    from ..analysis.plans import get_plan\n")
    monkeypatch.setitem(globals(), "ROOT", root)
    assert _upward([probe]) == [
        "shadergpgpu.algorithms.probe:2 imports shadergpgpu.analysis.plans",
        "shadergpgpu.algorithms.probe:2 imports shadergpgpu.analysis.plans.get_plan"]


def test_no_import_circle_between_algorithms():
    modules = {_module(p) for p in SOURCES}
    graph: dict[str, set] = {}
    for p in SOURCES:
        a = _unit(_module(p))
        for _, name in _imports(p):
            # "from pkg import name" names a module only where that module exists
            while name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]
            b = _unit(name)
            if a and b and a != b and a.startswith("shadergpgpu.algorithms.") \
                    and b.startswith("shadergpgpu.algorithms."):
                graph.setdefault(a, set()).add(b)
    seen, stack = set(), []

    def visit(u):
        if u in stack:
            pytest.fail("import circle: " + " -> ".join(stack[stack.index(u):] + [u]))
        if u in seen:
            return
        seen.add(u)
        stack.append(u)
        for v in sorted(graph.get(u, ())):
            visit(v)
        stack.pop()

    for u in sorted(graph):
        visit(u)


def test_checks_see_a_violation(tmp_path, monkeypatch):
    """The check can fail: a lazy upward import in a (fake) algorithm module is found."""
    root = tmp_path / "shadergpgpu"
    probe = root / "algorithms" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def fit():\n    from ..distributed import fit_mlp\n")
    monkeypatch.setitem(globals(), "ROOT", root)
    assert _upward([probe])[0] == "shadergpgpu.algorithms.probe:2 imports shadergpgpu.distributed"


def _targets(path: pathlib.Path, modules: set):
    """The modules of the library that ``path`` imports (function-level imports included):
    ``from pkg import name`` names the module ``pkg.name`` where there is one, else ``pkg``.
    Importing ``a.b.c`` runs ``a`` and ``a.b`` too, but that is not counted: a package that
    re-exports its submodules is in a circle only where a submodule imports it back."""
    mod = _module(path)
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            full = _absolute(node, pkg)
            names = [f"{full}.{a.name}" if f"{full}.{a.name}" in modules else full
                     for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            while name not in modules and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in modules and name != mod:
                yield name


def _circles(sources) -> list:
    """The import circles between modules: each a sorted tuple of the modules of one strongly
    connected component of the import graph (more than one module)."""
    modules = {_module(p) for p in sources}
    graph = {m: set() for m in modules}
    for p in sources:
        graph[_module(p)].update(_targets(p, modules))
    index, low, stack, on, out = {}, {}, [], set(), []

    def connect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(tuple(sorted(comp)))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return sorted(out)


def test_no_import_circle_between_modules():
    circles = _circles(SOURCES)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def test_the_circle_rule_sees_a_circle(tmp_path, monkeypatch):
    """The circle rule can fail: two engine modules that import each other (one of them only
    inside a function) are a circle; a package re-exporting its submodule is not, until the
    submodule imports the package back."""
    root = tmp_path / "shadergpgpu"
    (root / "engine").mkdir(parents=True)
    (root / "engine" / "__init__.py").write_text("from .a import A\nfrom .b import B\n")
    (root / "engine" / "a.py").write_text("from .layout import L\nclass A:\n    pass\n")
    (root / "engine" / "b.py").write_text("from .a import A\nB = A\n")
    (root / "engine" / "layout.py").write_text("def f():\n    from .b import B\nL = 1\n")
    (root / "ops").mkdir()
    (root / "ops" / "__init__.py").write_text("from .sub import g\nVALUE = 1\n")
    (root / "ops" / "sub.py").write_text("from ..engine import A\ndef g():\n    pass\n")
    monkeypatch.setitem(globals(), "ROOT", root)
    sources = sorted(root.rglob("*.py"))
    assert _circles(sources) == [("shadergpgpu.engine.a", "shadergpgpu.engine.b",
                                  "shadergpgpu.engine.layout")]
    (root / "ops" / "sub.py").write_text("from . import VALUE\ndef g():\n    pass\n")
    assert _circles(sorted(root.rglob("*.py")))[-1] == ("shadergpgpu.ops", "shadergpgpu.ops.sub")


#: module names every algorithm package may have, each with one meaning: the algorithm's
#: kernels, tuning, scikit-learn estimator, float64 reference, host checks, shape geometry,
#: uniform-block variant and public function; and the analysis's per-algorithm plans and reports
ROLE_NAMES = {"__init__", "kernels", "tuning", "estimator", "reference", "checks", "geometry",
              "ubo", "api"}
PER_ALGORITHM = ("analysis/plans", "analysis/reports", "distributed")


def _same_names(sources, root=ROOT) -> dict:
    """Module names held by two or more modules, outside the role names and the per-algorithm
    folders (whose modules are named by the algorithm they describe)."""
    seen: dict = {}
    for p in sources:
        rel = p.relative_to(root).as_posix()
        if p.stem in ROLE_NAMES or rel.rsplit("/", 1)[0] in PER_ALGORITHM:
            continue
        seen.setdefault(p.stem, []).append(rel)
    return {k: v for k, v in seen.items() if len(v) > 1}


def test_module_names_are_unique_outside_the_roles():
    assert _same_names(SOURCES) == {}


def test_the_name_rule_sees_a_clash(tmp_path):
    for rel in ("engine/recorder.py", "algorithms/blur/recorder.py", "algorithms/blur/kernels.py",
                "algorithms/sgemm/kernels.py", "analysis/plans/blur.py", "algorithms/blur/blur.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    assert _same_names(sorted(tmp_path.rglob("*.py")), tmp_path) == {
        "recorder": ["algorithms/blur/recorder.py", "engine/recorder.py"]}
