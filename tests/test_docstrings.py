"""The public functions and estimators document themselves in numpydoc, and their examples run.

* Every name of :data:`DOCUMENTED` (attributes of ``shadergpgpu``) has a numpydoc
  ``Parameters`` section and an ``Examples`` section; a function also has ``Returns`` (a
  context manager: ``Yields``).
* The docstring examples of every module in :data:`MODULES` run as doctests (``ELLIPSIS``,
  ``NORMALIZE_WHITESPACE``), and none fails.
"""
import doctest
import importlib
import inspect
import re

import pytest

import shadergpgpu as sg

#: the public names whose docstrings are numpydoc with examples
DOCUMENTED = (
    "ElementwiseKernel", "ReductionKernel", "sum", "dot", "norm", "argmin", "argmax", "cumsum",
    "sort", "argsort", "sgemm", "gaussian_blur",
    "MLPClassifier", "MLPRegressor", "MLP", "SVC", "KMeans", "Sammon", "trace", "Scope",
    "PingPong", "get_device", "layout_for", "DeviceArray",
    "Device",
)

#: module-level public functions documented the same way ("module:name")
DOCUMENTED_IN_MODULES = (
    "shadergpgpu.ops.reduce:total", "shadergpgpu.ops.reduce:total_device",
    "shadergpgpu.ops.reduce:argmin", "shadergpgpu.ops.reduce:argmax",
    "shadergpgpu.ops.reduce.arg:index_of_min", "shadergpgpu.ops.reduce.arg:index_of_max",
    "shadergpgpu.ops.sort:sort_pairs", "shadergpgpu.ops.rbf:rbf_pair",
    "shadergpgpu.ops.rbf:rbf_matrix_host", "shadergpgpu.engine.device:Device.array",
)

#: the modules whose docstring examples run here
MODULES = (
    "shadergpgpu.engine.device",
    "shadergpgpu.engine.scope",
    "shadergpgpu.engine.arrays",
    "shadergpgpu.engine.layout",
    "shadergpgpu.engine.trace",
    "shadergpgpu.ops.elementwise",
    "shadergpgpu.ops.reduce",
    "shadergpgpu.ops.reduce.kernel",
    "shadergpgpu.ops.reduce.sums",
    "shadergpgpu.ops.reduce.arg",
    "shadergpgpu.ops.scan",
    "shadergpgpu.ops.sort",
    "shadergpgpu.ops.rbf",
    "shadergpgpu.algorithms.sgemm.api",
    "shadergpgpu.algorithms.blur",
    "shadergpgpu.algorithms.blur.api",
    "shadergpgpu.algorithms.backprop.estimator",
    "shadergpgpu.algorithms.svm.estimator",
    "shadergpgpu.algorithms.kmeans.estimator",
    "shadergpgpu.algorithms.sammon.estimator",
)

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _sections(doc: str) -> set:
    """The numpydoc section titles of a docstring (a title line underlined by dashes)."""
    return set(re.findall(r"^\s*([A-Z][A-Za-z ]+)\n\s*-{3,}\s*$", doc, re.M))


def _resolve(name):
    """``sg.<name>``, or ``<attr path>`` in a module for "module:attr.path"."""
    if ":" not in name:
        return getattr(sg, name)
    module, _, path = name.partition(":")
    obj = importlib.import_module(module)
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("name", DOCUMENTED + DOCUMENTED_IN_MODULES)
def test_public_name_has_numpydoc_sections(name):
    obj = _resolve(name)
    doc = inspect.getdoc(obj) or ""
    found = _sections(doc)
    wanted = {"Parameters", "Examples"}
    if inspect.isroutine(obj):
        wanted.add("Yields" if "Yields" in found else "Returns")
    assert wanted <= found, f"sg.{name}: missing {sorted(wanted - found)} (has {sorted(found)})"
    assert ">>>" in doc.split("Examples", 1)[1], f"sg.{name}: its Examples section has no example"


@pytest.mark.parametrize("module", MODULES)
def test_docstring_examples_run(module, capsys):
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, optionflags=FLAGS, report=True)
    out = capsys.readouterr().out
    assert result.attempted > 0, f"{module}: no docstring example"
    assert result.failed == 0, f"{module}: {result.failed} of {result.attempted} failed\n{out}"
