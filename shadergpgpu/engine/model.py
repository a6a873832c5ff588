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
                   device=device or str(d.get("device", "")))

    def terms(self, fragments: float, flops: float, fetches: float, nbytes: float) -> dict:
        """Seconds of each roofline term for ``fragments`` x per-fragment work (totals given)."""
        return {"alu": flops / (self.alu_gflops * 1e9),
                "fetch": fetches / (self.texel_rate_gtexels * 1e9),
                "write": nbytes / (self.write_gbs * 1e9)}

    def pass_time(self, flops: float, fetches: float, nbytes: float) -> float:
        """Predicted seconds of one pass doing this much work in total."""
        t = self.terms(0, flops, fetches, nbytes)
        return self.pass_overhead_us * 1e-6 + max(t.values())


def predict(snapshot: dict, speeds: Speeds) -> dict:
    """Per phase of a counter snapshot: predicted seconds and the dominant term.

    Passes of a phase are taken as alike (the counter sums their work): time = passes x
    overhead + the largest of the phase's ALU, fetch and write times.
    """
    out = {}
    for label, s in snapshot.items():
        t = speeds.terms(s["fragments"], s.get("flops", 0.0), s.get("fetches", 0.0),
                         s.get("bytes", 0.0))
        over = s["passes"] * speeds.pass_overhead_us * 1e-6
        bound = max(t, key=t.get)
        dominant = "overhead" if over >= t[bound] else bound
        out[label] = {"predicted_s": over + t[bound], "overhead_s": over, **{
            f"{k}_s": v for k, v in t.items()}, "dominant": dominant}
    return out


# ---- calibration ---------------------------------------------------------------------------------
def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "shadergpgpu"


def profile_name(dev) -> str:
    """A file-safe name for the device: renderer and driver version."""
    raw = f"{dev.caps.renderer} {dev.caps.version}"
    return re.sub(r"[^A-Za-z0-9.]+", "-", raw).strip("-").lower()[:120]


def _best(fn, repeats: int) -> float:
    fn()
    return min(fn() for _ in range(repeats))


def calibrate(dev, quick: bool = False, save: bool = True) -> dict:
    """Measure the device's speeds (under a minute); returns the measured profile (a dict in the
    profile format, ``speeds`` filled) and writes it to :func:`cache_folder` when ``save``."""
    from .builtin import FILL
    from .glraw import BufferArray
    from .kernels import In, Kernel
    from .layout import BufferLayout

    alu = Kernel("engine/calibrate/alu.frag", uniforms={"n_iter": "int"},
                 loop=lambda a: a.uniforms["n_iter"], name="calibrate/alu")
    fetch = Kernel("engine/calibrate/fetch.frag", inputs={"X": In(buffer="either",
                                                                  packed=True)},
                   uniforms={"n_iter": "int"}, loop=lambda a: a.uniforms["n_iter"],
                   name="calibrate/fetch")
    sw = dev.is_software
    reps = 3 if quick else 5
    side = 128 if sw else 1024
    iters = 256 if sw else 2048

    def timed(run, n=1):
        def f():
            dev.finish()
            t0 = time.perf_counter()
            for _ in range(n):
                run()
            dev.finish()
            return (time.perf_counter() - t0) / n
        return f

    out = dev.empty((side, 4 * side))
    frags = side * side
    t_alu = _best(timed(lambda: dev.run(alu, out, uniforms={"n_iter": iters})), reps)
    alu_gflops = frags * iters * 32 / t_alu / 1e9
    src = dev.array(np.ones((512, 4 * 512), np.float32))
    t_fetch = _best(timed(lambda: dev.run(fetch, out, inputs={"X": src},
                                          uniforms={"n_iter": iters // 4})), reps)
    texel_rate = frags * (iters // 4) / t_fetch / 1e9
    buf = BufferArray.from_host(dev, BufferLayout(512, 4 * 512), np.ones((512, 2048)))
    t_bfetch = _best(timed(lambda: dev.run(fetch, out, inputs={"X": buf},
                                           uniforms={"n_iter": iters // 4})), reps)
    buffer_rate = frags * (iters // 4) / t_bfetch / 1e9
    big = dev.empty((4 * side, 16 * side))
    t_write = _best(timed(lambda: dev.run(FILL, big, uniforms={"value": 1.0}), 3), reps)
    write_gbs = big.layout.nbytes / t_write / 1e9
    tiny = dev.empty((4,))
    p = dev.prepare(FILL, tiny, uniforms={"value": 0.0})
    n_tiny = 200 if sw else 2000
    t_over = _best(timed(p.run, n_tiny), reps)
    host = np.ones((4 * side, 16 * side), np.float32)
    t_up = _best(timed(lambda: big.set(host)), reps)
    t_down = _best(lambda: (lambda t0: (big.get(), time.perf_counter() - t0)[1])(
        time.perf_counter()), reps)
    for a in (out, src, big, tiny):
        a.release()
    buf.release()
    speeds = {"pass_overhead_us": t_over * 1e6, "alu_gflops": alu_gflops,
              "texel_rate_gtexels": texel_rate, "buffer_texel_rate_gtexels": buffer_rate,
              "write_gbs": write_gbs, "upload_gbs": host.nbytes / t_up / 1e9,
              "readback_gbs": host.nbytes / t_down / 1e9}
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
