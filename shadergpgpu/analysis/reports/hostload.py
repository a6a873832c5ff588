"""The host's CPU time taken by others: the share of a virtual machine's CPU time its
hypervisor gave to other guests ("steal", Linux ``/proc/stat``), over an interval.

A software renderer's timings move with it: on a small virtual machine steal rises while
llvmpipe runs, and the same call then takes up to several times its fastest from one round to
the next (``benchmarks/diag/model_noise.py`` records it). ``benchmarks/model.py``
prints the share over its run beside the verdicts.
"""
from __future__ import annotations


def cpu_times() -> tuple[int, int] | None:
    """(steal ticks, all ticks) of the machine's CPUs since boot, or None where the system
    does not say (not Linux)."""
    try:
        with open("/proc/stat") as f:
            head = f.readline().split()
    except OSError:
        return None
    if not head or head[0] != "cpu" or len(head) < 9:
        return None
    ticks = [int(x) for x in head[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice: inside user, nice]
    return ticks[7], sum(ticks[:8])


def steal_share(before, after) -> float | None:
    """The share of CPU time stolen between two :func:`cpu_times` readings (None unknown)."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])
