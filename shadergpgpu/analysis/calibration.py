"""Calibration: measure the speeds the cost model (:mod:`.model`) prices a run with.

:func:`calibrate` measures, in a few seconds, on the engine's own code paths:

* the host cost of each draw path (a prepared pass's fast path, a value of ``Pass.repeat``, a
  draw through the device's full path), of a ``Device.run`` call on top of its draw, of an
  allocation from the pool and of a new texture, and the latency of a small upload and of a
  small readback (which waits for an idle device);
* the device time of an empty pass (timer queries on a GPU; on a software renderer the wall
  time a batch of empty passes takes beyond issuing them), and on a GPU what an accumulating
  pass adds per tile of its rectangle (squares and one-texel strips; the tile side fitted,
  :func:`_fit_tiles`);
* the ALU, texel fetch (2-D and buffer textures) and write rates, the upload and readback
  bandwidths, and the fragments the device shades at once (the ALU probe on a small target);

and stores them as a profile JSON (the format of ``shadergpgpu/profiles/*.json``) in the user's
cache folder, named after renderer and driver. Per-kernel efficiencies (``efficiency``) and
the one-liners' call cost are added by the frontends' calibration, which runs the algorithms
(``shadergpgpu calibrate``; :mod:`shadergpgpu.analysis.reports.calibrate_kernels`).
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import numpy as np

from .speeds import Speeds, tiles
from ..engine.layout import BufferLayout
from ..engine.kernels import In, Kernel
from ..engine.glraw import BufferArray
from ..engine.counter import PassCounter
from ..engine.builtin import COPY, FILL, SAXPY
from ..engine.blocks import BlockArray, BlockLayout


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "shadergpgpu"


def profile_name(dev) -> str:
    """A file-safe name for the device: renderer and driver version."""
    raw = f"{dev.caps.renderer} {dev.caps.version}"
    return re.sub(r"[^A-Za-z0-9.]+", "-", raw).strip("-").lower()[:120]


def profile_path(dev) -> Path:
    return cache_folder() / f"{profile_name(dev)}.json"


def save_profile(prof: dict) -> str:
    folder = cache_folder()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{prof['name']}.json"
    body = {k: v for k, v in prof.items() if k != "path"}
    path.write_text(json.dumps(body, indent=2) + "\n")
    return str(path)


def _issue_and_wall(dev, run, n):
    """(seconds to issue ``n`` calls of ``run``, seconds until the device is done) per call."""
    dev.finish()
    t0 = time.perf_counter()
    for _ in range(n):
        run()
    t1 = time.perf_counter()
    dev.finish()
    t2 = time.perf_counter()
    return (t1 - t0) / n, (t2 - t0) / n


def _finish_latency(dev, run, n):
    """(seconds to issue one short pass, seconds until the device is done with it): each of
    ``n`` passes issued on an idle device, then waited for."""
    issue = wall = 0.0
    for _ in range(n):
        dev.ctx.finish()
        t0 = time.perf_counter()
        run()
        t1 = time.perf_counter()
        dev.ctx.finish()
        t2 = time.perf_counter()
        issue += t1 - t0
        wall += t2 - t0
    return issue / n, wall / n


def calibrate(dev, quick: bool = False, save: bool = True) -> dict:
    """Measure the device's speeds (see the module docstring; a few seconds); returns the
    measured profile (a dict in the profile format, ``speeds`` filled) and writes it to
    :func:`cache_folder` when ``save``. Each probe runs once per round over several
    interleaved rounds and keeps its fastest, so a burst of load from other work slows one
    round of every probe, not one probe. On a software renderer the profile says
    ``overlap: "sum"`` (host work, ALU, fetches and writes share the CPU cores)."""

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
    iters = min(iters, dev.loop_cap or iters)
    n_f = iters // 4
    small_side = 16 if sw else 64            # the occupancy probe: side^2 fragments
    small_iters = min(iters * (16 if sw else 64), dev.loop_cap or 10 ** 9)

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

    saved_counter, dev.counter = dev.counter, PassCounter()   # keep the user's counts clean
    pass_gpu_us = per_kfrag = per_tile = 0.0
    tile = (0, 0)
    try:
        out = keep(dev.empty((side, 4 * side)))
        small = keep(dev.empty((small_side, 4 * small_side)))
        src = keep(dev.array(np.ones((512, 4 * 512), np.float32)))
        big = keep(dev.empty((4 * side, 16 * side)))
        a = keep(dev.array(np.ones((1, 4), np.float32)))
        b = keep(dev.empty((1, 4)))
        pa = dev.prepare(COPY, b, inputs={"X": a})
        pb = dev.prepare(COPY, a, inputs={"X": b})
        c = keep(dev.empty((1, 4)))
        pc = dev.prepare(COPY, c, inputs={"X": a})        # with pa: switches, no dependence
        pr = dev.prepare(COPY, b, inputs={"X": a}, rect=(0, 0, 1, 1))   # the full draw path
        n_tiny = 200 if sw else 1000
        lag_iters = max(iters // 8, 1)
        acc = keep(dev.empty((1, 4)))
        pacc = dev.prepare(SAXPY, acc, inputs={"X": a, "Y": a}, uniforms={"alpha": 0.0},
                           blend=bool(dev.float_blending))
        alphas = [float(k % 7) for k in range(n_tiny)]
        host = np.ones((4 * side, 16 * side), np.float32)
        tiny_host = np.ones((1, 4), np.float32)

        def readback():
            t0 = time.perf_counter()
            big.get()
            return time.perf_counter() - t0

        def alloc():
            dev.empty((1, 4)).release()

        blk = BlockArray(dev, BlockLayout(1), reserve=16)       # a texture into a buffer
        made.append(blk)
        probes = {
            "alu": timed(lambda: dev.run(alu, out, uniforms={"n_iter": iters})),
            "alu_small": timed(lambda: dev.run(alu, small, uniforms={"n_iter": small_iters})),
            "fetch": timed(lambda: dev.run(fetch, out, inputs={"X": src},
                                           uniforms={"n_iter": n_f})),
            "write": timed(lambda: dev.run(FILL, big, uniforms={"value": 1.0}), 3),
            "dep": timed(lambda: (pa.run(), pb.run()), n_tiny // 2),
            "switch": timed(lambda: (pa.run(), pc.run()), n_tiny // 2),
            # the device's start lag: a long pass, then host work issuing short ones; the
            # device starts the long pass only once the driver hands it over
            "short_alu": timed(lambda: dev.run(alu, out, uniforms={"n_iter": lag_iters})),
            "lag": timed(lambda: (dev.run(alu, out, uniforms={"n_iter": lag_iters}),
                                  *[pa.run() for _ in range(n_tiny)])),
            "up": timed(lambda: big.set(host)),
            "down": readback,
        }
        # host paths: seconds to issue one, and to be done (the device's share is the rest)
        paths = {
            "prepared": lambda: _issue_and_wall(dev, pa.run, n_tiny),
            "repeat": lambda: tuple(x / n_tiny for x in _issue_and_wall(
                dev, lambda: pacc.repeat("alpha", alphas), 1)),
            "draw": lambda: _issue_and_wall(dev, pr.run, n_tiny),
            "run": lambda: _issue_and_wall(dev, lambda: dev.run(COPY, b, inputs={"X": a}),
                                           n_tiny),
            "alloc": lambda: _issue_and_wall(dev, alloc, n_tiny),
            "upload": lambda: _issue_and_wall(dev, lambda: a.set(tiny_host), n_tiny // 4),
            "readback": lambda: _issue_and_wall(dev, b.get, n_tiny // 4),
            "finish": lambda: _finish_latency(dev, pa.run, n_tiny // 10),
            "copy": lambda: _issue_and_wall(dev, lambda: (pa.run(), blk.write_from_texture(b)),
                                            n_tiny // 4),
        }
        if getattr(dev, "buffer_textures", True):
            buf = BufferArray.from_host(dev, BufferLayout(512, 4 * 512), np.ones((512, 2048)))
            made.append(buf)
            probes["bfetch"] = timed(lambda: dev.run(fetch, out, inputs={"X": buf},
                                                     uniforms={"n_iter": n_f}))
        best = {k: float("inf") for k in probes}
        issue = {k: float("inf") for k in paths}
        wall = {k: float("inf") for k in paths}
        for f in probes.values():
            f()                                          # warm-up (compiles, allocations)
        for f in paths.values():
            f()
        for _ in range(reps + 2):
            for k, f in probes.items():
                best[k] = min(best[k], f())
            for k, f in paths.items():
                i, w = f()
                issue[k], wall[k] = min(issue[k], i), min(wall[k], w)
        texture_us = _texture_cost(dev, 40 if sw else 100)
        alu_gflops = out.layout.tex_w * out.layout.tex_h * iters * 32 / best["alu"] / 1e9
        frags_small = small.layout.tex_w * small.layout.tex_h
        t_small_ideal = frags_small * small_iters * 32 / (alu_gflops * 1e9)
        saturation = frags_small * best["alu_small"] / t_small_ideal \
            if best["alu_small"] > t_small_ideal else float(frags_small)
        frags = out.layout.tex_w * out.layout.tex_h
        texel_rate = frags * 4 * n_f / best["fetch"] / 1e9
        buffer_rate = frags * 4 * n_f / best["bfetch"] / 1e9 if "bfetch" in best else 0.0
        write_gbs = big.layout.nbytes / best["write"] / 1e9
        # the device's time of an empty pass: timer queries where they exist; on a software
        # renderer (timer queries do not see the rasterizer threads) what a batch of empty
        # prepared passes takes beyond issuing them
        if getattr(dev.caps, "timer_queries", False) and not sw:
            # one timer query around the whole batch (a query per pass costs GPU time itself)
            def batch_us(p):
                best_ns = float("inf")
                for _ in range(5):
                    dev.finish()
                    # a long pass first: the GPU is busy, its clocks up, when the batch comes
                    dev.run(alu, out, uniforms={"n_iter": iters})
                    q = dev.ctx.query(time=True)
                    with q:
                        p.repeat("alpha", alphas)
                    dev.finish()
                    best_ns = min(best_ns, q.elapsed)
                return best_ns / n_tiny / 1e3
            pass_gpu_us = batch_us(pacc)

            def accumulating(rows, cols):
                """An accumulating pass over a rows x cols texel target."""
                x = keep(dev.array(np.ones((rows, cols), np.float32), packed=False))
                y = keep(dev.empty((rows, cols), packed=False))
                p = dev.prepare(SAXPY, y, inputs={"X": x, "Y": x}, uniforms={"alpha": 0.0},
                                blend=bool(dev.float_blending))
                p.repeat("alpha", alphas[:4])
                return p
            # the same accumulating passes over 1024 fragments: what a blended pass adds
            per_kfrag = max(batch_us(accumulating(32, 32)) - pass_gpu_us, 0.0) / (1023 / 1e3)
            # and over squares and strips: the tiles they cover
            tile, per_tile = _fit_tiles(
                {(w, h): max(batch_us(accumulating(h, w)) - pass_gpu_us, 0.0)
                 for w, h in TILE_PROBES})
        else:
            pass_gpu_us = max(wall["prepared"] - issue["prepared"], 0.0) * 1e6
        draw_us = issue["draw"] * 1e6
        host_us = {"prepared": issue["prepared"] * 1e6, "repeat": issue["repeat"] * 1e6,
                   "draw": draw_us, "run": max(issue["run"] * 1e6 - draw_us, 0.0),
                   "alloc": issue["alloc"] * 1e6, "texture": texture_us,
                   "upload": issue["upload"] * 1e6, "readback": wall["readback"] * 1e6,
                   # a pass writing a texture, then the texture copied into a buffer on the
                   # device, beyond the pass
                   "buffer_copy": max(wall["copy"] - wall["prepared"], 0.0) * 1e6,
                   # waiting for the device after a short pass, beyond issuing it
                   "finish": max(wall["finish"] - issue["finish"], 0.0) * 1e6,
                   # a pass reading what the previous one wrote, beyond an independent one
                   # a draw into another target than the previous one's, beyond a draw
                   # into the same target; a pass reading what the previous one wrote,
                   # beyond such a switch
                   "switch": max(best["switch"] / 2 - wall["prepared"], 0.0) * 1e6,
                   "dependent": max(best["dep"] - best["switch"], 0.0) / 2 * 1e6,
                   # host time issued before the device starts on it (a driver hands work
                   # over in batches): at most the host time of the probe's short passes
                   "start_lag": 0.0 if sw else min(max(best["lag"] - best["short_alu"], 0.0),
                                                   issue["prepared"] * n_tiny) * 1e6}
        t_over = wall["repeat"]
    finally:
        for x in made:
            x.release()
        dev.counter = saved_counter
    speeds = {"pass_overhead_us": t_over * 1e6, "pass_gpu_us": pass_gpu_us,
              "dependent_pass_us": best["dep"] / 2 * 1e6,
              "alu_gflops": alu_gflops,
              "texel_rate_gtexels": texel_rate, "buffer_texel_rate_gtexels": buffer_rate,
              "write_gbs": write_gbs, "upload_gbs": host.nbytes / best["up"] / 1e9,
              "readback_gbs": host.nbytes / best["down"] / 1e9,
              "saturation_fragments": saturation, "host_us": host_us,
              "pass_gpu_us_per_kfragment": per_kfrag,
              "tile": list(tile), "pass_gpu_us_per_tile": per_tile,
              "threads": _threads() if sw else 0,
              "overlap": "sum" if sw else "max"}
    prof = {"name": profile_name(dev), "kind": "software" if sw else "gpu",
            "description": f"measured on {dev.caps.renderer} ({dev.caps.version}) "
                           f"on {time.strftime('%Y-%m-%d')}",
            "limits": {}, "speeds": speeds,
            "sources": {k: "measured by shadergpgpu calibrate" for k in speeds}}
    old = _read(profile_path(dev))
    if old and old.get("speeds", {}).get("efficiency"):
        # per-kernel efficiencies come from the frontends' calibration: kept until it reruns
        speeds["efficiency"] = old["speeds"]["efficiency"]
        if "call" in old["speeds"].get("host_us", {}):
            host_us["call"] = old["speeds"]["host_us"]["call"]
    if save:
        prof["path"] = save_profile(prof)
    return prof


#: The tile sides (pixels) :func:`_fit_tiles` tries, as width and as height.
TILE_SIDES = (1, 2, 4, 8, 16, 32)
#: The rectangles (w, h) the calibration times accumulating passes over: squares, strips
#: one texel high or wide, and strips a few texels high.
TILE_PROBES = ((64, 64), (4096, 1), (1, 4096), (1024, 3), (1024, 4), (256, 16))


def _fit_tiles(costs: dict) -> tuple[tuple, float]:
    """((tile width, tile height), us per tile) that best explain ``costs`` ({(w, h): us an
    accumulating pass over a w x h rectangle adds to an empty one}): per tile of
    :data:`TILE_SIDES` the least squares cost per tile, the tile with the smallest relative
    error (the smaller tile of equal ones); ((0, 0), 0.0) when nothing was measured."""
    best = (float("inf"), (0, 0), 0.0)
    for tw in TILE_SIDES:
        for th in TILE_SIDES:
            n = {k: tiles(k, (tw, th)) for k in costs}
            per = sum(costs[k] * n[k] for k in costs) / sum(n[k] ** 2 for k in costs)
            err = sum(((per * n[k] - c) / max(c, 1e-3)) ** 2 for k, c in costs.items())
            if per > 0 and err < best[0] * (1 - 1e-9):
                best = (err, (tw, th), per)
    return best[1], best[2]


def _threads() -> int:
    """llvmpipe's rasterizer threads: ``LP_NUM_THREADS``, else one per CPU (at most 16)."""
    env = os.environ.get("LP_NUM_THREADS")
    if env and env.isdigit():
        return max(int(env), 1)
    try:
        n = len(os.sched_getaffinity(0))
    except AttributeError:
        n = os.cpu_count() or 1
    return max(1, min(n, 16))


def _texture_cost(dev, n: int) -> float:
    """Microseconds to make a new texture (an allocation the pool cannot serve): ``n``
    sizes not seen before, each taken and released, then the pool trimmed."""
    dev.finish()
    t0 = time.perf_counter()
    arrs = [dev.empty((3, 4 * (1000 + k))) for k in range(n)]
    t = (time.perf_counter() - t0) / n
    for x in arrs:
        x.release()
    dev.pool.trim()
    return t * 1e6


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def measured_speeds(dev, calibrate_if_missing: bool = True):
    """This device's measured speeds, from the cache folder (calibrating once if missing)."""
    path = profile_path(dev)
    d = _read(path)
    if d is None or "host_us" not in d.get("speeds", {}):
        if not calibrate_if_missing:
            raise FileNotFoundError(f"no calibration for this device at {path}; run "
                                    "`shadergpgpu calibrate`")
        d = calibrate(dev)
    return Speeds.from_dict(d["speeds"], d.get("description", ""))
