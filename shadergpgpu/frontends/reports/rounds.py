"""What a case's timed rounds come to (:func:`rounds_estimate`), for the calibration and the
checks it is judged on alike (:func:`.calibrate_kernels.calibrate_and_time`)."""
from __future__ import annotations


#: From this many rounds on, :func:`rounds_estimate` keeps each case's second fastest round:
#: on the 2-core development machine one llvmpipe round could fall into a fast spell that
#: no other round saw (an SVM calibration call read 35.7 ms where every other run's
#: fastest was 62-71 ms), and the fastest of one side's rounds then stood alone.
SECOND_FROM = 5


def rounds_estimate(history: list) -> list:
    """Per case over ``history`` (one :func:`.model_cases.timed_rounds` result per round):
    the fastest wall, issue and device time of its rounds (the second fastest of each with
    :data:`SECOND_FROM` rounds or more), with its first round's snapshot; the exception a
    case raised in any round instead."""
    if not history:
        return []
    k = 1 if len(history) >= SECOND_FROM else 0
    out = []
    for entries in zip(*history):
        err = next((e for e in entries if isinstance(e, Exception)), None)
        if err is not None:
            out.append(err)
            continue
        cols = [sorted(e[j] for e in entries)[k] for j in range(len(entries[0])) if j != 2]
        out.append((cols[0], cols[1], entries[0][2], *cols[2:]))
    return out
