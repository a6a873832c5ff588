"""How far a configuration's measured time moves from round to round on this device, timed as
``benchmarks/model.py`` times it: whether ONE prediction could be within +-30 % of every round.

    python benchmarks/diag/model_noise.py [--rounds 6] [--gpu-sizes] [--only svm,sgemm]

Per configuration: the time of each round (the fastest call of the round, ``timed_call``), the
spread (slowest round / fastest round) and NOISE where the spread exceeds 1.3 / 0.7 = 1.86:
then no single prediction is within +-30 % of every round. Rounds go over all configurations
in turn, so a round's configurations are minutes apart from the next round's. Each round says
how much CPU time the hypervisor gave to other guests meanwhile (steal, :mod:`hostload`).
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.analysis.cost_model import TOLERANCE  # noqa: E402
from shadergpgpu.analysis.reports import model_cases as MC  # noqa: E402
from shadergpgpu.analysis.reports.hostload import cpu_times, steal_share  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--gpu-sizes", action="store_true")
    p.add_argument("--only", default="")
    a = p.parse_args(argv)
    warnings.simplefilter("ignore", RuntimeWarning)      # SMO's max_iter warnings
    dev = sg.Device()
    cases = MC.default_cases(dev.is_software and not a.gpu_sizes)
    if a.only:
        keep = set(a.only.split(","))
        cases = [c for c in cases if c.algo in keep]
    times = [[] for _ in cases]
    for r in range(a.rounds):
        t0 = cpu_times()
        for i, case in enumerate(cases):
            times[i].append(MC.timed_call(case, dev)[0])
        st = steal_share(t0, cpu_times())
        print(f"round {r + 1} of {a.rounds}: CPU time stolen by the host's other guests "
              f"{'unknown' if st is None else f'{100 * st:.0f} %'}", flush=True)
    limit = (1 + TOLERANCE) / (1 - TOLERANCE)
    noisy = 0
    print(f"\n{'configuration':44} {'fastest':>9} {'slowest':>9} {'spread':>7}  rounds (ms)")
    for case, ts in zip(cases, times):
        lo, hi = min(ts), max(ts)
        flag = "  NOISE" if hi / lo > limit else ""
        noisy += bool(flag)
        print(f"{case.algo + ' ' + case.label:44} {lo * 1e3:9.3f} {hi * 1e3:9.3f} "
              f"{hi / lo:7.2f}  {' '.join(f'{t * 1e3:.3g}' for t in ts)}{flag}")
    print(f"\n{noisy} of {len(cases)} configurations move more than {limit:.2f}x between rounds")
    dev.release()
    return 0


if __name__ == "__main__":
    sys.exit(main())
