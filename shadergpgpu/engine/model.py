"""A cost model: predict each pass's time from its declared work, and calibrate the device.

The time of one pass is predicted as ``overhead + max(flops / ALU rate, fetches / fetch rate,
bytes / write bandwidth)``: a roofline per pass, summed per phase. The work comes from the
kernels' declarations (``Kernel(work=...)``), accumulated by the pass counter; the speeds come
from :func:`calibrate` (measured on this device, stored as a profile JSON in the user's cache
folder, named after renderer and driver) or from a profile's ``speeds`` (the GeForce 7800 GTX's
published specifications).
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

SPEED_KEYS = ("pass_overhead_us", "alu_gflops", "texel_rate_gtexels", "buffer_texel_rate_gtexels",
              "write_gbs", "upload_gbs", "readback_gbs")


@dataclass
class Speeds:
    """Device speeds the model uses (per second rates)."""

    pass_overhead_us: float
    alu_gflops: float
    texel_rate_gtexels: float
    write_gbs: float
    buffer_texel_rate_gtexels: float = 0.0
    upload_gbs: float = 0.0
    readback_gbs: float = 0.0
    device: str = ""
    #: how a pass's ALU, fetch and write times combine: "max" (a GPU overlaps them: the
    #: roofline) or "sum" (a software renderer runs them on the same CPU cores, one after the
    #: other)
    overlap: str = "max"
    #: the part of the pass overhead spent on the device (GPU time of an empty pass, from timer
    #: queries; 0 when unknown): the diagnosis compares GPU time with work + this per pass
    pass_gpu_us: float = 0.0

    @classmethod
    def from_dict(cls, d: dict, device: str = "") -> "Speeds":
        need = ("pass_overhead_us", "alu_gflops", "texel_rate_gtexels")
        missing = [k for k in need if not d.get(k)]
        if missing:
            raise ValueError(f"speeds lack {missing}")
        write = d.get("write_gbs") or d.get("memory_bandwidth_gbs")
        if not write:
            raise ValueError("speeds lack write_gbs (or memory_bandwidth_gbs)")
        return cls(pass_overhead_us=float(d["pass_overhead_us"]),
                   alu_gflops=float(d["alu_gflops"]),
                   texel_rate_gtexels=float(d["texel_rate_gtexels"]),
                   write_gbs=float(write),
                   buffer_texel_rate_gtexels=float(d.get("buffer_texel_rate_gtexels") or
                                                   d["texel_rate_gtexels"]),
                   upload_gbs=float(d.get("upload_gbs") or 0.0),
                   readback_gbs=float(d.get("readback_gbs") or 0.0),
                   device=device or str(d.get("device", "")),
                   overlap=str(d.get("overlap") or "max"),
                   pass_gpu_us=float(d.get("pass_gpu_us") or 0.0))

    def bound(self, terms: dict) -> float:
        """Seconds of the ALU, fetch and write terms together (see ``overlap``)."""
        return sum(terms.values()) if self.overlap == "sum" else max(terms.values())

    def terms(self, fragments: float, flops: float, fetches: float, nbytes: float,
              buffer_fetches: float = 0.0) -> dict:
        """Seconds of each roofline term for the given work totals (``buffer_fetches``: the
        part of ``fetches`` that reads buffer textures, at the buffer fetch rate)."""
        buf = min(max(buffer_fetches, 0.0), fetches)
        brate = self.buffer_texel_rate_gtexels or self.texel_rate_gtexels
        return {"alu": flops / (self.alu_gflops * 1e9),
                "fetch": (fetches - buf) / (self.texel_rate_gtexels * 1e9) + buf / (brate * 1e9),
                "write": nbytes / (self.write_gbs * 1e9)}

    def pass_time(self, flops: float, fetches: float, nbytes: float,
                  buffer_fetches: float = 0.0) -> float:
        """Predicted seconds of one pass doing this much work in total."""
        t = self.terms(0, flops, fetches, nbytes, buffer_fetches)
        return self.pass_overhead_us * 1e-6 + self.bound(t)


def predict(snapshot: dict, speeds: Speeds) -> dict:
    """Per phase of a counter snapshot: predicted seconds and the dominant term.

    Passes of a phase are taken as alike (the counter sums their work): time = passes x
    overhead + the largest (``overlap="max"``) or the sum (``"sum"``) of the phase's ALU, fetch
    and write times.
    """
    out = {}
    for label, s in snapshot.items():
        t = speeds.terms(s["fragments"], s.get("flops", 0.0), s.get("fetches", 0.0),
                         s.get("bytes", 0.0), s.get("buffer_fetches", 0.0))
        over = s["passes"] * speeds.pass_overhead_us * 1e-6
        work = speeds.bound(t)
        bound = max(t, key=t.get)
        dominant = "overhead" if over >= work else bound
        out[label] = {"predicted_s": over + work, "overhead_s": over, "work_s": work,
                      **{f"{k}_s": v for k, v in t.items()}, "dominant": dominant,
                      "passes": s["passes"]}
    return out


def total(pred: dict) -> float:
    """Predicted seconds of all phases of :func:`predict`'s result."""
    return sum(p["predicted_s"] for p in pred.values())


TOLERANCE = 0.30


def verdict(measured: float, predicted: float, tol: float = TOLERANCE) -> str:
    """"ok" within +-tol of the measured time, else "MISSED"."""
    if not measured or not predicted:
        return "n/a"
    return "ok" if abs(predicted - measured) <= tol * measured else "MISSED"


def diagnose(snapshot: dict, pred: dict, measured_s: float, speeds: Speeds,
             gpu_snapshot: dict | None = None) -> str:
    """Which term is wrong when the prediction misses ``measured_s`` (seconds, the whole run).

    With a ``timing=True`` snapshot of the same run (``gpu_snapshot``: per-phase GPU time), the
    GPU time is compared with the predicted work terms and the rest of the wall time with the
    predicted pass overhead; without one, the largest phase's dominant term is named.
    """
    p_total = total(pred)
    if verdict(measured_s, p_total) != "MISSED":
        return ""
    ratio = measured_s / p_total if p_total else float("inf")
    side = "under" if ratio > 1 else "over"
    if gpu_snapshot:
        gpu = sum(v.get("gpu_ms", 0.0) for v in gpu_snapshot.values()) * 1e-3
        n = sum(p["passes"] for p in pred.values())
        dev_over = min(speeds.pass_gpu_us, speeds.pass_overhead_us) * 1e-6
        # the device's share of the pass overhead counts with the work
        work = sum(p["work_s"] + p["passes"] * dev_over for p in pred.values())
        over = sum(p["overhead_s"] - p["passes"] * dev_over for p in pred.values())
        host = max(measured_s - gpu, 0.0)
        if gpu > 0 and abs(gpu - work) >= abs(host - over):
            def dev_pred(k):
                return pred[k]["work_s"] + pred[k]["passes"] * dev_over
            worst = max(pred, key=lambda k: abs(gpu_snapshot.get(k, {}).get("gpu_ms", 0) * 1e-3
                                                - dev_pred(k)))
            g = gpu_snapshot.get(worst, {}).get("gpu_ms", 0) * 1e-3
            term = max(("alu", "fetch", "write"), key=lambda k: pred[worst][f"{k}_s"])
            return (f"work terms {side}-predicted: GPU time {gpu * 1e3:.3g} ms vs predicted "
                    f"{work * 1e3:.3g} ms; worst phase {worst!r} ({g * 1e3:.3g} ms GPU vs "
                    f"{dev_pred(worst) * 1e3:.3g} ms, its {term} term)")
        msg = (f"pass overhead {side}-predicted: {host * 1e3:.3g} ms outside GPU time vs "
               f"{over * 1e3:.3g} ms predicted for {n} passes "
               f"({speeds.pass_overhead_us:.3g} us each)")
        if host > 3 * over:
            msg += ("; most of it is host work between the passes that the model does not "
                    "count (readbacks and their waits, uploads, allocations, Python)")
        return msg
    worst = max(pred, key=lambda k: pred[k]["predicted_s"])
    return (f"{side}-predicted x{ratio:.2f}; the largest phase {worst!r} is "
            f"{pred[worst]['dominant']}-bound: that term is the suspect")


# ---- calibration ---------------------------------------------------------------------------------
def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "shadergpgpu"


def profile_name(dev) -> str:
    """A file-safe name for the device: renderer and driver version."""
    raw = f"{dev.caps.renderer} {dev.caps.version}"
    return re.sub(r"[^A-Za-z0-9.]+", "-", raw).strip("-").lower()[:120]


def calibrate(dev, quick: bool = False, save: bool = True) -> dict:
    """Measure the device's speeds (a few seconds; under a minute on any device); returns the
    measured profile (a dict in the profile format, ``speeds`` filled) and writes it to
    :func:`cache_folder` when ``save``.

    * pass overhead: one-texel passes drawn back to back into one target (``Pass.repeat`` of
      an accumulating pass with a changing uniform: the pattern of multipass accumulation,
      the bulk of every many-pass schedule); ``dependent_pass_us``, for information: one-texel
      copies that each read what the previous one wrote (a renderer cannot batch them);
    * ALU rate: ``alu.frag`` (4 independent vec4 multiply-adds per iteration, 32 flops);
    * fetch rates: ``fetch.frag`` (4 independent fetches per iteration) on a 2-D texture and on
      a buffer texture;
    * write bandwidth: a large fill; upload / readback: ``set`` / ``get`` of a large array;
    * each probe runs once per round over several interleaved rounds and keeps its fastest, so
      a burst of load from other work slows one round of every probe, not one probe.

    On a software renderer (``dev.is_software``) the ALU, fetch and write terms share the CPU,
    so the profile says ``overlap: "sum"``.
    """
    from .builtin import COPY, FILL, SAXPY
    from .glraw import BufferArray
    from .kernels import In, Kernel
    from .layout import BufferLayout

    alu = Kernel("engine/calibrate/alu.frag", uniforms={"n_iter": "int"},
                 loop=lambda a: a.uniforms["n_iter"], name="calibrate/alu",
                 work=lambda a: {"flops": 32 * a.uniforms["n_iter"], "fetches": 0})
    fetch = Kernel("engine/calibrate/fetch.frag", inputs={"X": In(buffer="either",
                                                                  packed=True)},
                   uniforms={"n_iter": "int"}, loop=lambda a: a.uniforms["n_iter"],
                   name="calibrate/fetch",
                   work=lambda a: {"flops": 16 * a.uniforms["n_iter"],
                                   "fetches": 4 * a.uniforms["n_iter"]})
    sw = dev.is_software
    reps = 3 if quick else 5
    side = 256 if sw else 1024
    iters = 512 if sw else 2048
    cap = dev.loop_cap or iters
    iters = min(iters, cap)

    def timed(run, n=1):
        def f():
            dev.finish()
            t0 = time.perf_counter()
            for _ in range(n):
                run()
            dev.finish()
            return (time.perf_counter() - t0) / n
        return f

    made = []

    def keep(a):
        made.append(a)
        return a

    from .counter import PassCounter
    saved_counter, dev.counter = dev.counter, PassCounter()   # keep the user's counts clean
    pass_gpu_us = 0.0
    try:
        out = keep(dev.empty((side, 4 * side)))
        frags = side * side
        n_f = iters // 4
        src = keep(dev.array(np.ones((512, 4 * 512), np.float32)))
        big = keep(dev.empty((4 * side, 16 * side)))
        a = keep(dev.array(np.ones((1, 4), np.float32)))
        b = keep(dev.empty((1, 4)))
        pa = dev.prepare(COPY, b, inputs={"X": a})
        pb = dev.prepare(COPY, a, inputs={"X": b})
        n_tiny = 100 if sw else 1000
        acc = keep(dev.empty((1, 4)))
        pacc = dev.prepare(SAXPY, acc, inputs={"X": a, "Y": a}, uniforms={"alpha": 0.0},
                           blend=bool(dev.float_blending))
        alphas = [float(k % 7) for k in range(n_tiny)]
        host = np.ones((4 * side, 16 * side), np.float32)

        def readback():
            t0 = time.perf_counter()
            big.get()
            return time.perf_counter() - t0

        probes = {
            "alu": timed(lambda: dev.run(alu, out, uniforms={"n_iter": iters})),
            "fetch": timed(lambda: dev.run(fetch, out, inputs={"X": src},
                                           uniforms={"n_iter": n_f})),
            "write": timed(lambda: dev.run(FILL, big, uniforms={"value": 1.0}), 3),
            "over": timed(lambda: pacc.repeat("alpha", alphas)),
            "dep": timed(lambda: (pa.run(), pb.run()), n_tiny),
            "up": timed(lambda: big.set(host)),
            "down": readback,
        }
        if getattr(dev, "buffer_textures", True):
            buf = BufferArray.from_host(dev, BufferLayout(512, 4 * 512), np.ones((512, 2048)))
            made.append(buf)
            probes["bfetch"] = timed(lambda: dev.run(fetch, out, inputs={"X": buf},
                                                     uniforms={"n_iter": n_f}))
        # interleaved rounds, the fastest of each: a burst of load from other work on the
        # machine slows one round of every probe, not every repeat of one probe
        best = {k: float("inf") for k in probes}
        for f in probes.values():
            f()                                          # warm-up (compiles, allocations)
        for _ in range(reps + 2):
            for k, f in probes.items():
                best[k] = min(best[k], f())
        alu_gflops = frags * iters * 32 / best["alu"] / 1e9
        texel_rate = frags * 4 * n_f / best["fetch"] / 1e9
        buffer_rate = frags * 4 * n_f / best["bfetch"] / 1e9 if "bfetch" in best else 0.0
        write_gbs = big.layout.nbytes / best["write"] / 1e9
        t_over = best["over"] / n_tiny
        t_dep = best["dep"] / 2
        t_up, t_down = best["up"], best["down"]
        if getattr(dev.caps, "timer_queries", False):
            # the device's share of the overhead: GPU time of the same passes (timer queries)
            was, dev.timing = dev.timing, True
            try:
                dev.counter.reset()
                pacc.repeat("alpha", alphas)           # pass by pass under timing
                dev.finish()
                snap = dev.counter.snapshot()
                ns = sum(v["gpu_ms"] for v in snap.values()) * 1e6
                n = sum(v["passes"] for v in snap.values())
                pass_gpu_us = min(ns / max(n, 1) / 1e3, t_over * 1e6)
            finally:
                dev.timing = was
    finally:
        for x in made:
            x.release()
        dev.counter = saved_counter
    speeds = {"pass_overhead_us": t_over * 1e6, "pass_gpu_us": pass_gpu_us,
              "dependent_pass_us": t_dep * 1e6,
              "alu_gflops": alu_gflops,
              "texel_rate_gtexels": texel_rate, "buffer_texel_rate_gtexels": buffer_rate,
              "write_gbs": write_gbs, "upload_gbs": host.nbytes / t_up / 1e9,
              "readback_gbs": host.nbytes / t_down / 1e9,
              "overlap": "sum" if sw else "max"}
    prof = {"name": profile_name(dev),
            "description": f"measured on {dev.caps.renderer} ({dev.caps.version}) "
                           f"on {time.strftime('%Y-%m-%d')}",
            "limits": {}, "speeds": speeds,
            "sources": {k: "measured by shadergpgpu calibrate" for k in speeds}}
    if save:
        folder = cache_folder()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{prof['name']}.json"
        path.write_text(json.dumps(prof, indent=2) + "\n")
        prof["path"] = str(path)
    return prof


def measured_speeds(dev, calibrate_if_missing: bool = True) -> Speeds:
    """This device's measured speeds, from the cache folder (calibrating once if missing)."""
    path = cache_folder() / f"{profile_name(dev)}.json"
    if path.is_file():
        d = json.loads(path.read_text())
    elif calibrate_if_missing:
        d = calibrate(dev)
    else:
        raise FileNotFoundError(f"no calibration for this device at {path}; run "
                                "`shadergpgpu calibrate`")
    return Speeds.from_dict(d["speeds"], d.get("description", ""))


def asdict_speeds(s: Speeds) -> dict:
    return asdict(s)
