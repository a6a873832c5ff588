"""A cost model: predict a run's time from what the pass counter saw, with measured speeds.

What a run costs, per phase of a counter snapshot (:meth:`PassCounter.snapshot`):

* **host**: the library's own work per draw and per call, by the path it took (a prepared
  pass's fast path, a value of ``Pass.repeat``, a draw through the device's full path, a
  ``Device.run`` call, a one-liner call, an allocation, a new texture) times its calibrated
  cost, plus uploads and readbacks (a latency per transfer and the bytes at the measured rate;
  a readback also waits for the device);
* **device**: each kernel's draws priced apart: its ALU, fetch and write times (a roofline:
  ``max`` on a GPU, ``sum`` on a software renderer), slowed where a pass has fewer fragments
  than the device runs at once (``saturation_fragments``), times the kernel's measured
  efficiency (calibrated: register pressure, integer work, cache behaviour), and never less
  than the device time of an empty pass (``pass_gpu_us``) per pass;
* **calls**: the host work of an algorithm's call outside the engine (validation, planning,
  its Python between passes): per call (the ``api:<algorithm>`` events), calibrated;
* host and device overlap on a GPU (the host issues while the device draws: the phase takes
  the larger, plus what the host issued before the driver handed the device its first work,
  the calibrated ``start_lag``, plus its transfers and calls), not on a software renderer (the
  same CPU cores do both: the sum). A call that never waits for the device (no readback, no
  finish in its snapshot) is priced as one of a run of calls: the larger of its host work
  (its algorithm's own included) and its device time, plus its transfers.

Profiles without host costs (the GeForce 7800 GTX's published speeds) fall back to the first
model: ``passes x pass_overhead_us`` plus the roofline of the phase's work.

The speeds come from :mod:`.calibration` (``shadergpgpu calibrate``) or a profile's
``speeds``. ``calibrate``, ``measured_speeds``, ``cache_folder`` and ``profile_name`` are
re-exported from there.
"""
from __future__ import annotations

import math
from dataclasses import asdict

from .calibration import cache_folder, calibrate, measured_speeds, profile_name  # noqa: F401
from .speeds import SPEED_KEYS, Speeds, busiest_thread, tiles  # noqa: F401


def kernel_device(speeds: Speeds, name: str, k: dict) -> tuple[float, dict]:
    """(seconds on the device, its terms) of one kernel's draws in one phase.

    Each draw's ALU, fetch and write times, slowed by the occupancy of its fragments: on a
    GPU, independent draws of a kernel run side by side (the occupancy of all its fragments
    in the phase), while its dependent ones (reading what the previous draw wrote) run alone
    (each draw's own occupancy); a software renderer takes each draw's tiles apart. Times the
    kernel's calibrated efficiency, and never less than the device's per-pass floor."""
    terms = {"alu": 0.0, "fetch": 0.0, "write": 0.0}
    work = 0.0
    draws = k.get("draws", ())
    passes = k.get("passes", 0)
    dep = min(k.get("dependent", 0) / passes, 1.0) if passes else 0.0
    together = speeds.occupancy(sum(frags * n for frags, n, *_ in draws))
    # passes drawn by Pass.repeat accumulate into one target: each waits for the previous
    # one's blends (the floor's per-fragment part); other passes pay the empty pass's floor
    rep = min((k.get("paths") or {}).get("repeat", 0) / passes, 1.0) if passes else 0.0
    floor = 0.0
    for frags, n, flops, fetches, nbytes, bfetch, *size in draws:
        size = size[:2] if len(size) >= 2 else None     # the drawn rectangle, if known
        alone = speeds.occupancy(frags, size)
        occ = alone if speeds.threads else dep * alone + (1.0 - dep) * together
        f = frags * n
        t = speeds.terms(f, f * flops, f * fetches, f * nbytes, f * bfetch)
        for key in terms:
            terms[key] += t[key] * occ
        work += speeds.bound(t) * occ
        floor += n * (rep * speeds.pass_floor(frags, size) + (1.0 - rep) * speeds.pass_floor(0))
    drawn = sum(n for _, n, *_ in draws)
    per = sum(f * n for f, n, *_ in draws) / drawn if drawn else 0
    eff = speeds.efficiency_at(name, per)
    floor += max(passes - drawn, 0) * speeds.pass_floor(0)   # passes of no declared work
    floor *= speeds.efficiency_at(name, per, speeds.floor_factor)
    return max(work * eff, floor), {key: v * eff for key, v in terms.items()} | \
        {"floor": floor}


def _predict_detailed(s: dict, speeds: Speeds) -> dict:
    host_parts = {}
    for path, n in (s.get("paths") or {}).items():
        host_parts[path] = n * speeds.host_cost(path)
    ev, evb = s.get("events") or {}, s.get("event_bytes") or {}
    xfer = api = 0.0
    for kind, n in ev.items():
        c = n * speeds.host_cost(kind)
        if kind.startswith("api:"):       # an algorithm call's own host work: serial
            api += c
            continue
        if kind == "upload" and speeds.upload_gbs:
            c += evb.get(kind, 0) / (speeds.upload_gbs * 1e9)
        elif kind == "readback" and speeds.readback_gbs:
            c += evb.get(kind, 0) / (speeds.readback_gbs * 1e9)
        if kind in ("upload", "readback", "finish", "buffer_copy"):   # waits: serial
            xfer += c
        else:
            host_parts[kind] = host_parts.get(kind, 0.0) + c
    host = sum(host_parts.values())
    device = 0.0
    terms = {"alu": 0.0, "fetch": 0.0, "write": 0.0, "floor": 0.0}
    per_kernel = {}
    counted = 0
    for name, k in (s.get("kernels") or {}).items():
        t, kt = kernel_device(speeds, name, k)
        per_kernel[name] = t
        device += t
        counted += k.get("passes", 0)
        for key in terms:
            terms[key] += kt[key]
    rest = max(s.get("passes", 0) - counted, 0) * speeds.pass_floor(0)
    device += rest
    terms["floor"] += rest
    dep = s.get("dependent", 0) * speeds.host_cost("dependent")   # passes that must wait
    device += dep
    terms["dependent"] = dep
    switches = s.get("switches", 0)
    if speeds.overlap == "sum":
        # a software renderer's wait hands over the scene drawn before it; the draw after it
        # counts as a switch but hands nothing over (it costs about what a pass into the same
        # target costs): one free per wait
        switches = max(switches - ev.get("finish", 0) - ev.get("readback", 0), 0)
    sw = switches * speeds.host_cost("switch")   # a new target's hand-over
    device += sw
    terms["switch"] = sw
    if speeds.overlap == "sum":
        total = host + device + xfer + api
    else:   # the call-level overlap is settled in predict()
        total = max(host, device) + xfer + api
    parts = {"host": host, "device": device, "transfer": xfer, "api": api}
    blamed = max(parts, key=parts.get)
    if blamed == "device":
        term = max(terms, key=terms.get)
        dominant = {"floor": "passes", "dependent": "dependent passes",
                    "switch": "target switches"}.get(term, term)
    elif blamed == "host":
        dominant = "host:" + max(host_parts, key=host_parts.get) if host_parts else "host"
    elif blamed == "api":
        dominant = "host:call"
    else:
        dominant = "transfer"
    return {"predicted_s": total, "host_s": host, "device_s": device, "transfer_s": xfer,
            "api_s": api,
            "overhead_s": host, "work_s": device,
            **{f"{k}_s": v for k, v in terms.items()}, "dominant": dominant,
            "passes": s.get("passes", 0), "host_parts": host_parts, "kernels": per_kernel}


def predict(snapshot: dict, speeds: Speeds) -> dict:
    """Per phase of a counter snapshot: predicted seconds, its parts and the dominant term.

    With detailed speeds (``host_us`` measured): host, device and transfer times as the module
    docstring says. Otherwise the first model: passes x ``pass_overhead_us`` + the largest
    (``overlap="max"``) or the sum (``"sum"``) of the phase's ALU, fetch and write times.
    """
    out = {}
    if speeds.detailed:
        for label, s in snapshot.items():
            out[label] = _predict_detailed(s, speeds)
        # an algorithm's host work per pass of its call (calibrated beside the per-call part)
        passes = sum(s.get("passes", 0) for s in snapshot.values())
        for label, s in snapshot.items():
            extra = sum(n * passes * speeds.host_cost(kind + "/pass")
                        for kind, n in (s.get("events") or {}).items()
                        if kind.startswith("api:"))
            if extra:
                q = out[label]
                q["api_s"] += extra
                q["predicted_s"] += extra
        if speeds.overlap != "sum" and out:
            # on a GPU host and device overlap over the whole run, not phase by phase: the
            # larger side, plus what the host issued before the driver handed the device its
            # first work (the calibrated start lag; the shorter side if less); each phase
            # gets its share of that time
            h = sum(q["host_s"] for q in out.values())
            d = sum(q["device_s"] for q in out.values())
            api = sum(q["api_s"] for q in out.values())
            serial = sum(q["transfer_s"] for q in out.values())
            if syncs(snapshot):
                t = max(h, d) + min(h, d, speeds.host_cost("start_lag")) + serial + api
            else:
                # a call that never waits for the device, in a run of calls: the host issues
                # the next call (its own work included) while the device draws this one, and
                # the start lag is the run's, not the call's
                t = max(h + api, d) + serial
            raw = sum(q["predicted_s"] for q in out.values())
            for q in out.values():
                q["predicted_s"] *= t / raw if raw else 0.0
        return out
    for label, s in snapshot.items():
        t = speeds.terms(s["fragments"], s.get("flops", 0.0), s.get("fetches", 0.0),
                         s.get("bytes", 0.0), s.get("buffer_fetches", 0.0))
        over = s["passes"] * speeds.pass_overhead_us * 1e-6
        work = speeds.bound(t)
        bound = max(t, key=t.get)
        dominant = "overhead" if over >= work else bound
        out[label] = {"predicted_s": over + work, "overhead_s": over, "work_s": work,
                      "host_s": over, "device_s": work, "transfer_s": 0.0,
                      **{f"{k}_s": v for k, v in t.items()}, "floor_s": 0.0,
                      "dominant": dominant, "passes": s["passes"]}
    return out


def syncs(snapshot: dict) -> int:
    """How often a counter snapshot's call waits for the device (readbacks, finishes)."""
    return sum((s.get("events") or {}).get(k, 0) for s in snapshot.values()
               for k in ("readback", "finish"))


def total(pred: dict) -> float:
    """Predicted seconds of all phases of :func:`predict`'s result."""
    return sum(p["predicted_s"] for p in pred.values())


def blamed(pred: dict) -> str:
    """The term that takes the most predicted time over a run's phases: ``host:<path>``,
    ``alu``, ``fetch``, ``write``, ``passes`` (the device's per-pass floor), ``transfer`` or
    ``overhead`` (first model)."""
    if not pred:
        return ""
    by = {}
    for q in pred.values():
        by[q["dominant"]] = by.get(q["dominant"], 0.0) + q["predicted_s"]
    return max(by, key=by.get)


TOLERANCE = 0.30


def verdict(measured: float, predicted: float, tol: float = TOLERANCE) -> str:
    """"ok" within +-tol of the measured time, else "MISSED"."""
    if not measured or not predicted:
        return "n/a"
    return "ok" if abs(predicted - measured) <= tol * measured else "MISSED"


def diagnose(snapshot: dict, pred: dict, measured_s: float, speeds: Speeds,
             gpu_snapshot: dict | None = None, device_s: float | None = None,
             issue_s: float | None = None) -> str:
    """Which term is wrong when the prediction misses ``measured_s`` (seconds, the whole run).

    The measured device time is ``device_s`` (one timer query around the call) where given,
    else the sum of a ``timing=True`` run's device times (``gpu_snapshot``, per phase and
    kernel: a timer query per draw, which lengthens short draws); the measured host time is
    ``issue_s`` (the time the call took to return) on a GPU, the rest of the wall time on a
    software renderer. The side further from its prediction is named; for the device, with the
    kernel furthest off in ``gpu_snapshot``. Without measurements, the largest phase's dominant
    term is named.
    """
    p_total = total(pred)
    if verdict(measured_s, p_total) != "MISSED":
        return ""
    ratio = measured_s / p_total if p_total else float("inf")
    side = "under" if ratio > 1 else "over"
    timed = sum(v.get("gpu_ms", 0.0) for v in (gpu_snapshot or {}).values()) * 1e-3
    dev = device_s if device_s and math.isfinite(device_s) else timed
    note = ""
    if speeds.overlap == "sum" and dev > measured_s:
        # a software renderer's per-draw times (a finish around each draw) past the whole
        # call's wall time: they say nothing of the call's split
        note = (f" (the per-draw times, {dev * 1e3:.3g} ms, exceed the call's: a finish "
                "around each draw lengthens them)")
        dev = 0.0
    if dev > 0:
        dev_pred = sum(q.get("device_s", q["work_s"]) for q in pred.values())
        host_pred = sum(q.get("host_s", q["overhead_s"]) + q.get("transfer_s", 0.0) +
                        q.get("api_s", 0.0) for q in pred.values())
        if speeds.overlap == "sum" or issue_s is None:
            host = max(measured_s - dev, 0.0)
        else:
            host = issue_s
        if abs(dev - dev_pred) >= abs(host - host_pred):
            worst, off = "", 0.0
            for label, q in pred.items():
                kg = ((gpu_snapshot or {}).get(label) or {}).get("kernels") or {}
                for name, t in (q.get("kernels") or {}).items():
                    g = (kg.get(name) or {}).get("gpu_ms", 0.0) * 1e-3
                    if g and abs(g - t) > off:
                        worst, off = f"{label}/{name}: {g * 1e3:.3g} ms timed vs " \
                                     f"{t * 1e3:.3g} ms predicted", abs(g - t)
            msg = (f"device time {'under' if dev > dev_pred else 'over'}-predicted: "
                   f"{dev * 1e3:.3g} ms measured vs {dev_pred * 1e3:.3g} ms predicted")
            return msg + (f"; furthest off {worst}" if worst else "")
        what = "to issue the call" if speeds.overlap != "sum" and issue_s is not None else \
            "outside the device"
        return (f"host time {'under' if host > host_pred else 'over'}-predicted: "
                f"{host * 1e3:.3g} ms {what} vs {host_pred * 1e3:.3g} ms predicted (host "
                "paths, calls, transfers, waits)")
    worst = max(pred, key=lambda k: pred[k]["predicted_s"])
    return (f"{side}-predicted x{ratio:.2f}; the largest phase {worst!r} is "
            f"{pred[worst]['dominant']}-bound: that term is the suspect{note}")


def asdict_speeds(s: Speeds) -> dict:
    return asdict(s)
