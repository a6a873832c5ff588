"""``python -m shadergpgpu``: the same as the ``shadergpgpu`` command."""
import sys

from .frontends.cli import main

if __name__ == "__main__":
    sys.exit(main())
