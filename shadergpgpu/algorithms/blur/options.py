"""The blur's options (methods, borders, schedules; the border codes of the kernels' BORDER
define) and its limits (the truncation of the kernel, the largest exact radius and recursive
sigma)."""
from __future__ import annotations

METHODS = ("recursive", "exact")
BORDERS = ("reflect", "nearest", "constant")
SCHEDULES = ("hv", "vtvt")
BORDER_CODE = {"reflect": 0, "nearest": 1, "constant": 2}

TRUNCATE = 4.0
# Largest kernel radius (taps on each side, int(4 sigma + 0.5)) of the exact method: its weights
# live in one texture and every output pixel reads 2 r + 1 taps (sigma up to about 1e6).
MAX_EXACT_RADIUS = 1 << 22
# Largest sigma of the recursive method (float32 poles p = exp(-(b + i w) / sigma) still differ
# from 1 enough for the recursion to stay accurate: tested to 1e4, within 1e-4 of the range).
MAX_RECURSIVE_SIGMA = 1e4
