"""The ``shadergpgpu`` command: ``info``, ``report NAME``, ``bench NAME``."""
from __future__ import annotations

import argparse
import importlib
import runpy
import sys
from pathlib import Path


def _info(args) -> int:
    from ..engine.device import Device
    from ..engine.errors import CapabilityError
    from ..engine.programs import shaders_root

    try:
        dev = Device(backend=args.backend, device_index=args.device_index)
    except CapabilityError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(dev.caps.format())
    print(f"{'shaders':<24} {shaders_root()}")
    dev.release()
    return 0


def _report(args, rest) -> int:
    from .reports import REPORTS

    if args.name not in REPORTS:
        print(f"error: unknown report {args.name!r}; choose from {', '.join(sorted(REPORTS))}",
              file=sys.stderr)
        return 2
    try:
        mod = importlib.import_module(REPORTS[args.name])
    except ModuleNotFoundError as e:
        print(f"error: the {args.name} report is not available ({e})", file=sys.stderr)
        return 2
    return int(mod.main(rest) or 0)


def _bench(args, rest) -> int:
    here = Path(__file__).resolve().parent.parent / "benchmarks" / f"{args.name}.py"
    if not here.is_file():
        print(f"error: benchmarks live in the source checkout; {here} not found", file=sys.stderr)
        return 2
    sys.argv = [str(here)] + rest
    runpy.run_path(str(here), run_name="__main__")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="shadergpgpu",
                                description="GPGPU with fragment shaders and float textures")
    sub = p.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("info", help="print the GL context's capabilities")
    pi.add_argument("--backend", default=None, help="egl (default), glfw, glfw-visible, standalone")
    pi.add_argument("--device-index", type=int, default=None, help="EGL device index")
    pr = sub.add_parser("report", help="pass-count analysis report (see --help of each)")
    pr.add_argument("name")
    pb = sub.add_parser("bench", help="run benchmarks/NAME.py from a source checkout")
    pb.add_argument("name")
    args, rest = p.parse_known_args(argv)
    if args.cmd == "info":
        if rest:
            p.error(f"unrecognized arguments: {' '.join(rest)}")
        return _info(args)
    if args.cmd == "report":
        return _report(args, rest)
    return _bench(args, rest)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
