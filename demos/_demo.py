"""Argument handling shared by the demos: one-line errors before any work, checked numbers,
output files in ``out/`` by default, the optional packages named with the extra to install.

Not a demo itself (the leading underscore): ``python demos/NAME.py --help`` for those.
"""
from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent

#: Where outputs go unless a path is given: out/ of the checkout (ignored by git: /out/).
OUT_DIR = _ROOT / "out"

# The package next to the demos (a source checkout) comes first.
if (_ROOT / "shadergpgpu").is_dir() and str(_ROOT) not in sys.path:
    sys.path.insert(0, str(_ROOT))


def unbuffered() -> None:
    """Print progress as it happens, also when the output goes to a pipe or a file."""
    for f in (sys.stdout, sys.stderr):
        try:
            f.reconfigure(line_buffering=True)
        except (AttributeError, ValueError):  # pragma: no cover - replaced streams
            pass


class Parser(argparse.ArgumentParser):
    """argparse with usage errors as one line and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def fail(self, message: str):
        """A one-line error about the arguments, before any work."""
        self.error(message)


def fail(message: str, code: int = 2):
    """Stop with a one-line error on stderr (no traceback)."""
    prog = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "demo"
    print(f"{prog}: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


# ---- argparse types: a bad value is a one-line usage error naming the option ---------------

def _number(kind, text, lo=None, lo_open=False, what="a number"):
    try:
        v = kind(text)
    except (TypeError, ValueError):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if isinstance(v, float) and not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    if lo is not None and (v <= lo if lo_open else v < lo):
        raise argparse.ArgumentTypeError(
            f"must be {'>' if lo_open else '>='} {lo:g}, got {text}")
    return v


def positive_float(text):
    """A finite float > 0."""
    return _number(float, text, 0.0, True, "a positive number")


def nonneg_float(text):
    """A finite float >= 0."""
    return _number(float, text, 0.0, False, "a number >= 0")


def positive_int(text):
    """An integer >= 1."""
    return _number(int, text, 1, False, "a positive integer")


def nonneg_int(text):
    """An integer >= 0."""
    return _number(int, text, 0, False, "an integer >= 0")


# ---- optional packages ----------------------------------------------------------------------

_EXTRA = {"matplotlib": "report", "scipy": "report", "glfw": "window"}
_PIP = {"sklearn": "scikit-learn"}


def need(module: str, why: str):
    """Import ``module`` or stop with a one-line message naming what to install."""
    try:
        return importlib.import_module(module)
    except ImportError:
        pkg = _PIP.get(module, module)
        extra = _EXTRA.get(module)
        if module == "sklearn":   # a dependency of the package itself
            how = "pip install scikit-learn (shadergpgpu depends on it: reinstall shadergpgpu)"
        elif extra:
            how = f"pip install 'shadergpgpu[{extra}]'"
        else:
            how = f"pip install {pkg}"
        fail(f"{why} needs {pkg}, which is not installed: {how}")


def have(module: str) -> bool:
    try:
        importlib.import_module(module)
        return True
    except ImportError:
        return False


# ---- files ----------------------------------------------------------------------------------

def output_path(parser: Parser, given: str | None, default_name: str,
                suffixes: tuple[str, ...] | None = None, option: str = "--out") -> Path:
    """Where to write: ``given`` as is, or ``out/default_name``. The suffix is checked (and the
    folder made) before any work, so a run never ends in a refused file name."""
    path = Path(given) if given else OUT_DIR / default_name
    if suffixes is not None and path.suffix.lower() not in suffixes:
        shown = [x for x in (".png", ".jpg", ".tiff", ".bmp", ".webp", ".pdf", ".svg")
                 if x in suffixes] or list(suffixes)[:6]
        parser.fail(f"{option} {str(path)!r}: the file type is taken from the suffix, and "
                    f"{path.suffix or 'no suffix'!r} is not one this writer knows; use e.g. "
                    + ", ".join(shown))
    if path.exists() and path.is_dir():
        parser.fail(f"{option} {str(path)!r} is a folder; give a file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        parser.fail(f"{option} {str(path)!r}: cannot create its folder ({e.strerror})")
    if not os.access(path.parent, os.W_OK):
        parser.fail(f"{option} {str(path)!r}: the folder is not writable")
    return path


def image_suffixes() -> tuple[str, ...]:
    """File suffixes pillow can write."""
    from PIL import Image
    Image.init()
    return tuple(sorted(ext for ext, fmt in Image.EXTENSION.items() if fmt in Image.SAVE))


def input_file(parser: Parser, given: str, what: str = "input") -> Path:
    path = Path(given)
    if not path.exists():
        parser.fail(f"{what} file {given!r} does not exist")
    if path.is_dir():
        parser.fail(f"{what} {given!r} is a folder, not a file")
    if not os.access(path, os.R_OK):
        parser.fail(f"{what} file {given!r} is not readable")
    return path


def need_window(option: str = "--window"):
    """Check, before any work, that a GLFW window can be opened: the 'window' extra and a
    display."""
    glfw = need("glfw", option)
    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY")
                                                 or os.environ.get("WAYLAND_DISPLAY")):
        fail(f"{option} needs a display: DISPLAY is not set (run without {option}, or under "
             "xvfb-run)")
    glfw.ERROR_REPORTING = "ignore"   # failures below come back as one-line errors
    return glfw
