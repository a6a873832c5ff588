"""What a case's timed rounds come to (:func:`rounds_estimate`), for the calibration and the
checks it is judged on alike (:func:`.calibrate.calibrate_and_time`), whole calls
and per-draw timings alike (:func:`rank`)."""
from __future__ import annotations

#: Each measurement keeps the round at this share of its rounds, counted from the fastest
#: (:func:`rank`): the fastest of up to three rounds, the second fastest of four to six, the
#: third of seven to nine. A software renderer's machine runs a whole round of calls faster
#: in a few rounds of ten (a machine state lasting seconds), so the fastest or second fastest
#: of six can fall into that state on one side of the comparison and not the other; at this
#: rank the calibration and its checks keep rounds of the same state.
RANK_SHARE = 0.3
#: The same on a GPU: the fastest round. A GPU's calls have no faster spells than its floor;
#: their slow state (a small call's host issue time up to twice its fastest, round by round)
#: is what the rounds are there to step past, on both sides of the comparison.
GPU_RANK_SHARE = 0.0


def rank(n: int, share: float = RANK_SHARE) -> int:
    """The index, from the fastest, of the round a measurement of ``n`` rounds keeps
    (``share`` of them: :data:`RANK_SHARE`, on a GPU :data:`GPU_RANK_SHARE`)."""
    return max(0, min(int(n * share), n - 1))


def rank_share(dev) -> float:
    """The share of its rounds a measurement on ``dev`` keeps (:func:`rank`):
    :data:`RANK_SHARE` on a software renderer (or without a device), else
    :data:`GPU_RANK_SHARE`."""
    return RANK_SHARE if getattr(dev, "is_software", True) else GPU_RANK_SHARE


def rounds_estimate(history: list, share: float = RANK_SHARE) -> list:
    """Per case over ``history`` (one :func:`.model_cases.timed_rounds` result per round):
    the wall, issue and device time of its rounds at :func:`rank` (the fastest of a few, a
    faster one than the median of many), with its first round's snapshot; the exception a
    case raised in any round instead."""
    if not history:
        return []
    k = rank(len(history), share)
    out = []
    for entries in zip(*history):
        err = next((e for e in entries if isinstance(e, Exception)), None)
        if err is not None:
            out.append(err)
            continue
        cols = [sorted(e[j] for e in entries)[k] for j in range(len(entries[0])) if j != 2]
        out.append((cols[0], cols[1], entries[0][2], *cols[2:]))
    return out


def beside(cases: list, checks: list, start: int = 0) -> list:
    """The order one round times ``cases`` (the calibration's) and ``checks`` in: each
    algorithm's calibration cases, then at once its checks, algorithms in the order of their
    first calibration case, from the ``start``-th on (round ``r`` starts at the ``r``-th:
    no algorithm is always the one timed right after the engine's probes, or after the same
    neighbour); checks of an algorithm without calibration cases last. A list of
    (0, index into ``cases``) and (1, index into ``checks``). A machine state that lasts
    seconds (a software renderer's fast spells) then meets a check and the cases that price
    it together, not one side of the comparison alone."""
    algos: dict = {}
    for i, c in enumerate(cases):
        algos.setdefault(c.algo, ([], []))[0].append((0, i))
    rest = []
    for i, c in enumerate(checks):
        (algos[c.algo][1] if c.algo in algos else rest).append((1, i))
    groups = list(algos.values())
    if groups:
        k = start % len(groups)
        groups = groups[k:] + groups[:k]
    return [x for a, b in groups for x in a + b] + rest


def split_round(order: list, got: list, sizes: tuple) -> tuple:
    """``got`` (one timed round in :func:`beside` order) back to (the cases' entries, the
    checks' entries), each in its list's order."""
    out = ([None] * sizes[0], [None] * sizes[1])
    for (side, i), g in zip(order, got):
        out[side][i] = g
    return out
