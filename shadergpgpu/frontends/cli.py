"""The ``shadergpgpu`` command: ``info``, ``report NAME``, ``bench NAME``, ``replay``,
``export-web``, ``web-run``.

``report NAME [options]`` and ``bench NAME [options]`` hand every option after NAME to the
report's (benchmark's) own parser, so ``shadergpgpu report blur --help`` prints the blur
report's options. Errors are one line on stderr and exit status 2; a report or benchmark
returns non-zero when a plan does not match the pass counter or a target is missed.
"""
from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

from ..analysis.reports import REPORTS

#: Benchmarks of a source checkout (benchmarks/NAME.py next to the package).
BENCHMARKS = ("backprop", "blur", "engine", "sammon", "sgemm", "svm")


def _version() -> str:
    from .. import __version__
    return __version__


def _error(msg: str) -> int:
    print(f"shadergpgpu: error: {msg}", file=sys.stderr)
    return 2


def _benchmarks_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "benchmarks"


def _device_error(e: Exception, device_index) -> str:
    """A one-line explanation of why the context could not be made."""
    cause = str(e.__cause__ or e)
    m = re.search(r"requested device index (\d+), but found (\d+) devices?", cause)
    if m:
        n = int(m.group(2))
        have = "device 0" if n == 1 else f"devices 0..{n - 1}"
        return (f"EGL device {m.group(1)} does not exist: this machine has {n} EGL "
                f"device{'s' if n != 1 else ''} ({have}); pass --device-index "
                f"{'0' if n == 1 else f'0 to {n - 1}'} or leave it out")
    if device_index is not None and "device" in cause.lower() and "index" in cause.lower():
        return f"EGL device {device_index} could not be opened: {cause.splitlines()[0]}"
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _info(args) -> int:
    from ..engine.context import BACKENDS
    from ..engine.device import Device
    from ..engine.errors import CapabilityError
    from ..engine.programs import shaders_root

    if args.device_index is not None and args.device_index < 0:
        return _error(f"--device-index must be >= 0, got {args.device_index}")
    try:
        dev = Device(backend=args.backend, device_index=args.device_index,
                     profile=args.profile, api=args.api)
    except CapabilityError as e:
        return _error(_device_error(e, args.device_index))
    except ValueError as e:  # an unknown backend or profile
        msg = str(e)
        if "backend" not in msg and "profile" not in msg and "api" not in msg:
            msg += f" (backends: {', '.join(BACKENDS)})"
        return _error(msg)
    print(dev.caps.format())
    print(f"{'profile':<24} {dev.profile.name}")
    if not dev.profile.is_native:
        print(f"{'  (as the profile) texture':<24} {dev.max_texture_size}")
        print(f"{'  draw buffers':<24} {dev.max_outputs}")
        print(f"{'  float32 blending':<24} {dev.float_blending}")
        print(f"{'  buffer textures':<24} {dev.buffer_textures}")
        print(f"{'  texture units':<24} {dev.max_inputs}")
        print(f"{'  GLSL':<24} {dev.profile.glsl}")
    print(f"{'loop_cap':<24} {dev.loop_cap if dev.loop_cap is not None else 'none'}")
    print(f"{'shaders':<24} {shaders_root()}")
    print(f"{'version':<24} {_version()}")
    dev.release()
    return 0


def _profiles(args) -> int:
    from ..engine import profiles

    for name in profiles.names():
        p = profiles.load(name)
        if args.verbose:
            print(p.format())
            for k, v in p.sources.items():
                print(f"    source {k}: {v}")
            print()
        else:
            print(f"{name:<18} {p.description}")
    return 0


def _export(args) -> int:
    from ..engine import export

    if args.list:
        print("\n".join(sorted(export.library_kernels())))
        return 0
    if not args.kernel:
        return _error("give a kernel name (or --list)")
    try:
        text = export.export(args.kernel, args.profile)
    except ValueError as e:
        return _error(str(e))
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}")
    else:
        print(text, end="")
    if args.check:
        if export.glslang() is None:
            return _error("--check needs glslangValidator (apt-get install glslang-tools)")
        ok, msg = export.check_es(text[text.index("#version"):])
        print(f"glslangValidator: {'ok' if ok else msg}", file=sys.stderr)
        return 0 if ok else 1
    return 0


def _replay(args) -> int:
    from .browser import BrowserError, BrowserNotFound, replay
    if not Path(args.bundle).is_file():
        return _error(f"no such bundle: {args.bundle}")
    try:
        outs, page = replay(args.bundle, timeout=args.timeout)
    except BrowserNotFound as e:
        return _error(str(e))
    except (BrowserError, ValueError) as e:
        return _error(str(e).splitlines()[0] if not args.verbose else str(e))
    np = importlib.import_module("numpy")
    np.savez(args.output, **{f"r{i}": o for i, o in enumerate(outs)})
    print(f"replayed {args.bundle} in {page.get('renderer', 'the browser')}: {len(outs)} "
          f"readback(s) in {page.get('ms', 0.0):.1f} ms; wrote {args.output}")
    return 0


def _export_web(args) -> int:
    from .webpage import xor_page
    if args.demo not in ("xor", "digits"):
        return _error(f"unknown page {args.demo!r} (known: xor, digits)")
    if args.demo == "digits":
        return _export_digits(args)
    try:
        cfg = xor_page(args.output, hidden=args.hidden or 4, steps=args.steps, lr=args.lr,
                       seed=args.seed)
    except ValueError as e:
        return _error(str(e))
    print(f"wrote {args.output}: XOR 2-{cfg['hidden']}-1, {cfg['steps']} fused steps in the "
          f"browser (recorded here at {cfg['python_ms_per_step']:.3f} ms per step)")
    return 0


def _export_digits(args) -> int:
    from .digitspage import digits_page
    try:
        cfg = digits_page(args.output, hidden=args.hidden or 100, epochs=args.epochs,
                          max_rows=args.max_rows, source=args.data, seed=args.seed)
    except (ValueError, TypeError, FileNotFoundError) as e:
        return _error(str(e))
    print(f"wrote {args.output}: a {'-'.join(map(str, cfg['layers']))} MLPClassifier trained "
          f"on {cfg['source']} in {cfg['fit_s']:.1f} s ({cfg['epochs']} epochs), held-out "
          f"accuracy {cfg['accuracy']:.4f}; the page predicts in WebGL2 (program of "
          f"{cfg['program_bytes']} bytes, up to {cfg['max_rows']} rows a run)")
    return 0


def _web_run(args) -> int:
    from .browser import BrowserError, BrowserNotFound
    from .webexport import load_program, web_run
    np = importlib.import_module("numpy")
    if not Path(args.program).is_file():
        return _error(f"no such program: {args.program}")
    inputs = {}
    for item in args.input:
        name, eq, file = item.partition("=")
        if not eq or not name or not file:
            return _error(f"--input: expected NAME=FILE.npy, got {item!r}")
        try:
            inputs[name] = np.load(file)
        except (OSError, ValueError) as e:
            return _error(f"--input {name}: cannot read {file}: {e}")
    try:
        meta, _ = load_program(args.program)
        want = [i["name"] for i in meta["program"]["inputs"]]
        if sorted(inputs) != sorted(want):
            return _error(f"--input: the program takes {', '.join(want)}, given "
                          f"{', '.join(sorted(inputs)) or 'none'}")
        outs = web_run(args.program, inputs, timeout=args.timeout)
    except BrowserNotFound as e:
        return _error(str(e))
    except (BrowserError, ValueError) as e:
        return _error(str(e).splitlines()[0])
    np.savez(args.output, **outs)
    print(f"ran {args.program} on {len(next(iter(inputs.values())))} row(s): "
          f"{', '.join(outs)}; wrote {args.output}")
    return 0


def _exit_code(e: SystemExit) -> int:
    c = e.code
    if c is None:
        return 0
    if isinstance(c, int):
        return c
    print(c, file=sys.stderr)
    return 1


_EXTRA_MODULES = {"matplotlib": "report", "scipy": "report", "glfw": "window"}


def _import_problem(what: str, e: ImportError) -> str:
    top = (getattr(e, "name", None) or "").split(".")[0]
    if top in _EXTRA_MODULES:
        return (f"{what} needs {top}, which is not installed: "
                f"pip install 'shadergpgpu[{_EXTRA_MODULES[top]}]'")
    return f"{what} could not be loaded: {e}"


def _report(name: str, rest: list[str]) -> int:
    try:
        mod = importlib.import_module(REPORTS[name])
    except ImportError as e:
        return _error(_import_problem(f"the {name} report", e))
    return _run_main(mod.main, rest)


def _bench(name: str, rest: list[str]) -> int:
    import importlib.util

    path = _benchmarks_dir() / f"{name}.py"
    if not path.is_file():
        return _error(f"benchmarks live in a source checkout of shadergpgpu; {path} not found")
    saved = sys.argv
    sys.argv = [f"shadergpgpu bench {name}"] + rest   # the benchmark's argparse shows this
    try:
        spec = importlib.util.spec_from_file_location(f"_shadergpgpu_bench_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return _run_main(mod.main, rest)
    except ImportError as e:
        return _error(_import_problem(f"the {name} benchmark", e))
    finally:
        sys.argv = saved


def _run_main(fn, rest: list[str]) -> int:
    """Run a report's or benchmark's ``main(argv)``: its exit status, one-line GL errors."""
    from ..engine.errors import CapabilityError

    try:
        return int(fn(rest) or 0)
    except SystemExit as e:  # its own argparse: --help, or a usage error
        return _exit_code(e)
    except CapabilityError as e:
        return _error(str(e).splitlines()[0])


def _names(kind: str) -> list[str]:
    if kind == "report":
        return sorted(REPORTS)
    here = _benchmarks_dir()
    found = sorted(p.stem for p in here.glob("*.py")) if here.is_dir() else []
    return found or list(BENCHMARKS)


def _sub_help(kind: str) -> str:
    names = ", ".join(_names(kind))
    if kind == "report":
        return (f"usage: shadergpgpu report NAME [options]\n\n"
                f"Pass-count analysis report: plan against the pass counter, timings, plots.\n\n"
                f"NAME: one of {names}\n"
                f"options: see `shadergpgpu report NAME --help` (common ones: --quick, --out "
                f"DIR, --no-plots, --backend)\n"
                f"Exit status 1 when a plan does not match the counter (MISMATCH) or a target "
                f"is missed (MISSED).\n")
    return (f"usage: shadergpgpu bench NAME [options]\n\n"
            f"Run benchmarks/NAME.py of a source checkout.\n\n"
            f"NAME: one of {names}\n"
            f"options: see `shadergpgpu bench NAME --help` (most take --quick)\n")


def _dispatch(kind: str, argv: list[str]) -> int:
    names = _names(kind)
    if not argv or argv[0] in ("-h", "--help"):
        print(_sub_help(kind), end="")
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in names:
        return _error(f"unknown {kind} {name!r}; choose one of {', '.join(names)}")
    return _report(name, rest) if kind == "report" else _bench(name, rest)


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line (and a pointer to --help), exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="shadergpgpu", description="GPGPU with fragment shaders and float textures",
        epilog="`shadergpgpu report NAME --help` and `shadergpgpu bench NAME --help` print the "
               "options of each report and benchmark.")
    p.add_argument("--version", action="version", version=f"shadergpgpu {_version()}")
    sub = p.add_subparsers(dest="cmd",
                           metavar="{info,profiles,export-glsl,replay,export-web,web-run,"
                                   "report,bench,calibrate,"
                                   "predict}")
    sub.required = True
    pi = sub.add_parser("info", help="print the GL context's capabilities",
                        description="Create a device and print what its GL context offers.")
    pi.add_argument("--backend", default=None, metavar="{egl,glfw,glfw-visible,standalone}",
                    help="GL backend (default: egl, or $SHADERGPGPU_BACKEND)")
    pi.add_argument("--api", default=None, metavar="{gl,gles}",
                    help="desktop OpenGL 3.3 (gl, the default) or a native OpenGL ES 3.0+ "
                         "context (gles); default: $SHADERGPGPU_API or gl")
    pi.add_argument("--device-index", type=int, default=None, metavar="N",
                    help="EGL device to open on a machine with several GPUs (default: the "
                         "first, or $SHADERGPGPU_EGL_DEVICE)")
    pi.add_argument("--profile", default=None, metavar="NAME",
                    help="device profile to behave as (see `shadergpgpu profiles`; default: "
                         "native, or $SHADERGPGPU_PROFILE)")
    pp = sub.add_parser("profiles", help="list the built-in device profiles",
                        description="List the built-in device profiles (limits as data).")
    pp.add_argument("-v", "--verbose", action="store_true",
                    help="every limit and its source")
    pe = sub.add_parser("export-glsl", help="write a kernel's GLSL ES source",
                        description="Write a library kernel's final source as GLSL ES "
                                    "(#version 300 es / 310 es) with a header listing its "
                                    "inputs, outputs and uniforms, e.g. for a WebGL2 page.")
    pe.add_argument("kernel", nargs="?", help="kernel name, e.g. engine/saxpy or sgemm/tile8x4")
    pe.add_argument("--list", action="store_true", help="list the library's kernel names")
    pe.add_argument("--profile", default="webgl2", metavar="NAME",
                    help="profile whose GLSL ES dialect and limits apply (default: webgl2)")
    pe.add_argument("-o", "--output", default=None, metavar="FILE",
                    help="write to FILE instead of standard output")
    pe.add_argument("--check", action="store_true",
                    help="compile the result with glslangValidator")
    pr = sub.add_parser("replay", help="replay a trace bundle in headless Chromium",
                        description="Replay a bundle saved by sg.trace(...).save(PATH) in "
                                    "headless Chromium (WebGL2) and write the browser's "
                                    "readbacks as r0, r1, ... in the order the host read them. "
                                    "The bundle's lengths, checksums and format are checked "
                                    "first: a damaged bundle is refused (exit status 2) with "
                                    "what is wrong.")
    pr.add_argument("bundle", help="the bundle file")
    pr.add_argument("-o", "--output", required=True, metavar="OUT.npz",
                    help="where to write the readbacks")
    pr.add_argument("--timeout", type=float, default=300.0, metavar="S",
                    help="seconds to wait for the browser (default 300)")
    pr.add_argument("-v", "--verbose", action="store_true", help="the browser's whole error")
    pw = sub.add_parser("export-web", help="write a self-contained web page of a demo",
                        description="Record a demo with sg.trace and write one HTML file that "
                                    "replays it in a browser (WebGL2): 'xor' trains the XOR "
                                    "network with the fused step, drawing the loss curve and "
                                    "the decision surface; 'digits' trains a classifier on "
                                    "handwritten digits in Python and writes a page where the "
                                    "user draws a digit and the exported network (sg.export_web) "
                                    "shows the class probabilities, computed in WebGL2.")
    pw.add_argument("demo", choices=["xor", "digits"], help="the page to write")
    pw.add_argument("-o", "--output", required=True, metavar="PAGE.html")
    pw.add_argument("--hidden", type=int, default=None,
                    help="hidden neurons (default 4 for xor, 100 for digits)")
    pw.add_argument("--epochs", type=int, default=15,
                    help="digits: training epochs in Python (default 15)")
    pw.add_argument("--max-rows", type=int, default=1000,
                    help="digits: the most rows one run of the program takes (default 1000)")
    pw.add_argument("--data", choices=["auto", "mnist", "sklearn"], default="auto",
                    help="digits: MNIST-10k from ~/.cache/shadergpgpu/mnist where present "
                         "(auto), or scikit-learn's 8x8 digits")
    pw.add_argument("--steps", type=int, default=2000, help="learning steps (default 2000)")
    pw.add_argument("--lr", type=float, default=2.0, help="learning rate (default 2.0)")
    pw.add_argument("--seed", type=int, default=0, help="weight seed (default 0)")
    pg = sub.add_parser("web-run", help="run a program (sg.export_web) in headless Chromium",
                        description="Run a program written by sg.export_web (a recorded "
                                    "computation with named inputs) on new inputs in headless "
                                    "Chromium (WebGL2) and write its outputs by name. The "
                                    "program is checked first: a damaged one is refused (exit "
                                    "status 2) with what is wrong.")
    pg.add_argument("program", help="the program file")
    pg.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                    help="an input's rows (repeat for several inputs)")
    pg.add_argument("-o", "--output", required=True, metavar="OUT.npz",
                    help="where to write the outputs")
    pg.add_argument("--timeout", type=float, default=300.0, metavar="S",
                    help="seconds to wait for the browser (default 300)")
    sub.add_parser("report", add_help=False,
                   help=f"analysis report NAME: {', '.join(_names('report'))} "
                        "(options: report NAME --help)")
    sub.add_parser("bench", add_help=False,
                   help=f"benchmark NAME of a source checkout: {', '.join(_names('bench'))} "
                        "(options: bench NAME --help)")
    sub.add_parser("calibrate", add_help=False,
                   help="measure this device's speeds for the cost model (calibrate --help)")
    sub.add_parser("predict", add_help=False,
                   help="predicted time of an algorithm here, on a profile and vs numpy "
                        "(predict --help)")
    return p


def _model_command(cmd: str, rest: list[str]) -> int:
    """``calibrate`` / ``predict``: the cost model's commands (analysis/reports/model.py)."""
    try:
        from ..analysis.reports import model
    except ImportError as e:
        return _error(_import_problem(f"shadergpgpu {cmd}", e))
    return _run_main(model.calibrate_main if cmd == "calibrate" else model.predict_main, rest)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # report/bench: everything after NAME belongs to the report's (benchmark's) own parser
    if argv and argv[0] in ("report", "bench"):
        return _dispatch(argv[0], argv[1:])
    if argv and argv[0] in ("calibrate", "predict"):
        return _model_command(argv[0], argv[1:])
    p = build_parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return _exit_code(e)
    if args.cmd == "profiles":
        return _profiles(args)
    if args.cmd == "export-glsl":
        return _export(args)
    if args.cmd == "replay":
        return _replay(args)
    if args.cmd == "export-web":
        return _export_web(args)
    if args.cmd == "web-run":
        return _web_run(args)
    return _info(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
