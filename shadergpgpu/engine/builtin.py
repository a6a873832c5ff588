"""The engine's own kernels: fill, copy, saxpy (used by the device and by the algorithms)."""
from __future__ import annotations

from .kernels import In, declare

FILL = declare("engine/fill.frag", uniforms={"value": "float"}, name="engine/fill")
COPY = declare("engine/copy.frag", inputs={"X": In(like="OUT")}, name="engine/copy")
SAXPY = declare("engine/saxpy.frag", inputs={"X": In(like="OUT"), "Y": In(like="OUT")},
                uniforms={"alpha": "float"}, name="engine/saxpy")
COMBINE = declare("engine/combine.frag", inputs={"A": In(like="OUT"), "B": In(like="OUT")},
                  defines={"MODE": 0}, name="engine/combine")
