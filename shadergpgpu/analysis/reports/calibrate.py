"""``shadergpgpu calibrate``: the complete calibration of a device, in rounds.

* **The engine's probes** (:mod:`shadergpgpu.analysis.calibration`): pass overhead, ALU, fetch
  and write rates, transfers, the host's paths.
* **The kernels' efficiencies**: :mod:`.calibrate_kernels`.
* **The one-liners' call cost** and **each algorithm's call cost** (``api:<algorithm>``):
  :mod:`.calibrate_calls`.
* **Rounds** (:func:`calibrate_and_time`): the engine's probes, the calibration cases
  (:mod:`.calibrate_cases`) and the checks the model is judged on, interleaved; each
  measurement keeps the reading at the same rank of its rounds (:func:`.rounds.rank`; the
  engine's: :func:`ranked_engine`).

All are written into the device's measured profile (``speeds``, ``speeds.efficiency``,
``speeds.host_us``).
"""
from __future__ import annotations

from .. import calibration as C
from .. import cost_model as M
from . import model_cases as MC
from .calibrate_calls import call_cost_us, call_costs
from .calibrate_cases import calibration_cases
from .calibrate_kernels import (counted_round, kernel_efficiencies, residual_efficiencies,
                                whole_call_efficiencies)
from .rounds import beside, rank, rank_share, rounds_estimate, split_round


def ranked_engine(readings: list, share: float) -> dict:
    """The first of ``readings`` (the speeds of one engine calibration per round) with each
    host cost and the pass overhead at :func:`.rounds.rank` of its rounds counted from the
    lowest, each rate (ALU, fetches, writes, transfers) counted from the highest: the round
    each reading keeps at the rank the cases and checks keep theirs (``share``; the fastest
    on a GPU). A software renderer's wait reads fast only in rare rounds, and the checks meet
    the slower state, so a reading from the rare fast round would predict them too fast."""
    speeds = readings[0]
    host = speeds["host_us"]

    def at(values, highest=False):
        values = sorted(values, reverse=highest)
        return values[rank(len(values), share)]
    for k in {k for r in readings for k in r["host_us"]}:
        host[k] = at([r["host_us"][k] for r in readings if k in r["host_us"]])
    speeds["pass_overhead_us"] = at([r["pass_overhead_us"] for r in readings])
    for k in RATES:
        got = [r[k] for r in readings if k in r]
        if got:
            speeds[k] = at(got, highest=True)
    return speeds


#: The engine calibration's rates that :func:`ranked_engine` counts from the highest.
RATES = ("alu_gflops", "texel_rate_gtexels", "buffer_texel_rate_gtexels", "write_gbs",
         "upload_gbs", "readback_gbs")


#: Rounds of a calibration (:func:`calibrate_and_time`) on a software renderer and on a GPU.
#: A software renderer's machine changes speed for seconds at a time (a hypervisor takes a
#: varying share of the CPU, and one call's fastest of a round moves by up to 2x from round
#: to round); a GPU's small calls move between two states within a lease, and its host's
#: speed moves too. Each measurement is taken over rounds spread across the whole run, at
#: :func:`.rounds.rank` of them: on a software renderer eight, the third fastest kept; on a
#: GPU five, the fastest kept (three rounds are too few for a GPU's host to show its fast
#: state in every case; docs/model.md describes the checks).
SOFTWARE_ROUNDS = 8
GPU_ROUNDS = 5


def calibration_rounds(dev, quick: bool = False) -> int:
    """Rounds of :func:`calibrate_and_time`: 1 when ``quick``, else :data:`SOFTWARE_ROUNDS`
    or :data:`GPU_ROUNDS`."""
    if quick:
        return 1
    return SOFTWARE_ROUNDS if dev.is_software else GPU_ROUNDS


def calibrate_all(dev, quick: bool = False, save: bool = True, progress=None) -> dict:
    """The engine's calibration, then the kernels' efficiencies and the call cost: the
    complete measured profile (saved in the cache folder when ``save``)."""
    return calibrate_and_time(dev, (), quick=quick, save=save, progress=progress)[0]


def calibrate_and_time(dev, checks=(), quick: bool = False, save: bool = True,
                       progress=None, rounds: int | None = None) -> tuple[dict, list]:
    """(the complete measured profile, :func:`.model_cases.timed_rounds` of ``checks``): the
    calibration and the timing of the cases it will be judged on, interleaved. Each round
    runs the engine's probes, times every calibration case once and every check once (each
    algorithm's checks right after its calibration cases, :func:`.rounds.beside`, each round
    starting at the next algorithm), then the cases' per-draw timings; each
    keeps its reading at :func:`.rounds.rank` of the rounds (:func:`calibration_rounds`: the
    fastest of a GPU's five, the third fastest of a software renderer's eight; per-draw
    timings alike, :func:`counted_round`), so that both sides see the same spells
    of a loaded machine or a GPU's state (a process's first seconds can also run its host
    paths at half speed). Then the kernels' efficiencies and the calls' costs are fitted
    on those times."""
    from ...engine.device import Device
    rounds = calibration_rounds(dev, quick) if rounds is None else max(1, int(rounds))
    cases = calibration_cases(dev.is_software)
    if quick:                       # the first configuration of each algorithm only
        firsts = {}
        for c in cases:
            firsts.setdefault(c.algo, c)
        cases = list(firsts.values())
    checks = list(checks)
    prof = counted = None
    history, check_history = [], []          # each round's times of the cases, the checks
    engine = []                              # each round's engine calibration
    tdev = Device(timing=True)          # the per-draw timings, in the rounds too
    try:
        for r in range(rounds):
            got = C.calibrate(dev, quick=quick, save=False)
            prof = prof or got
            engine.append(got["speeds"])
            # each algorithm's checks beside its cases (rounds.beside)
            order = beside(cases, checks, r)
            got = MC.timed_rounds([(checks if s else cases)[i] for s, i in order], dev, 1)
            mine, theirs = split_round(order, got, (len(cases), len(checks)))
            history.append(mine)
            if checks:
                check_history.append(theirs)
            counted = counted_round(cases, tdev, history[-1], counted,
                                    calls=1 if rounds > 1 else 3, share=rank_share(dev))
            if progress:
                progress(f"calibration round {r + 1} of {rounds}")
    finally:
        tdev.release()
    ranked_engine(engine, rank_share(dev))
    timed = rounds_estimate(history, rank_share(dev))
    timed_checks = rounds_estimate(check_history, rank_share(dev))
    sp = prof["speeds"]
    sp.pop("efficiency", None)
    speeds = M.Speeds.from_dict(sp, prof["description"])
    host = sp["host_us"]
    # the one-liner writes a given output: its Device.run and draw are priced apart
    host["call"] = max(call_cost_us(dev) - host.get("run", 0.0) - host.get("draw", 0.0), 0.0)
    eff, seen, floors = kernel_efficiencies(dev, speeds, cases, progress=progress, timed=timed,
                                            counted=counted)
    sp["efficiency"] = eff
    sp["floor_factor"] = floors
    speeds = M.Speeds.from_dict(sp, prof["description"])
    api, api_seen = call_costs(dev, speeds, cases, progress=progress, timed=timed)
    host.update(api)
    if dev.is_software:
        now = M.Speeds.from_dict(sp, prof["description"])
        seen.update(residual_efficiencies(now, cases, timed, counted, seen))
        sp["efficiency"] = whole_call_efficiencies(dev, now, cases, timed, seen)
    prof["call_samples_us"] = {k: [[round(q[0], 1), round(q[1], 2)]
                                    + ([round(q[2], 1)] if q[2] else []) for q in v]
                                for k, v in api_seen.items()}
    prof["efficiency_samples"] = {k: [[round(f, 1), round(x, 4)] for f, x in v]
                                  for k, v in seen.items()}
    prof["calibration_cases"] = [f"{c.algo} {c.label}" for c in cases]
    prof["calibration_rounds"] = rounds
    if save:
        prof["path"] = C.save_profile(prof)
    return prof, (timed_checks or [])
