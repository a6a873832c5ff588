"""Limits of the fragment path that kernels must respect, shared by every algorithm."""

# Mesa llvmpipe stops a fragment shader's loops after 65,535 iterations in total per fragment
# (nested loops count together) and gives no error: the result is silently wrong. Kernels keep
# the loop iterations of one fragment in one pass below this budget, splitting the work over
# several (blended) passes where needed.
LOOP_BUDGET = 60_000


def ceil_div(a: int, b: int) -> int:
    """Smallest integer >= a / b for positive b."""
    return -(-int(a) // int(b))
