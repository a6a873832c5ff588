"""The device run of one fit (:class:`SammonRun`): textures, prepared passes and the state kept on
the device between iterations; the update and stress of a position set
(:meth:`SammonRun.evaluate`) and the two step rules (``step="source"`` and ``"adaptive"``)."""
from __future__ import annotations

import math
import time

import numpy as np

from ...engine.builtin import SAXPY
from ...ops import reduce as _reduce
from . import step as _step
from .checks import spot_check_rowsums, spot_check_update
from .chunking import chunk_work, host_waits, sweep_chunks
from .geometry import fit_geometry
from .kernels import (DISTANCES, FINISH, ROW_SUMS, SOURCES, SQUARED_NORMS, UPDATE, tile_outputs,
                      update_kernel)
from .step import StepRule, start_step
from .tiles import blocked_source

class SammonRun:
    """Device state of one fit: textures, prepared passes and the step control."""

    def __init__(self, dev, X, Y0, est, rows=None, sum_dn=None, geo=None):
        # rows: (lo, hi) when only those points' row sums are computed (a Dask shard);
        # sum_dn: sum dn known from an earlier setup of the same X (no row-sum passes; for
        # timing update variants, benchmarks/diag/sammon_variants.py); geo: fit_geometry's
        # answer for this device, X's shape and est, when the caller has it already
        self.dev, self.est = dev, est
        self._geo = geo
        self.rows = rows
        self._known_sum_dn = sum_dn
        self._check_update = False
        self._arrays = []
        self._chains = []
        try:
            self._setup(dev, X, Y0, est)
        except BaseException:
            # Setup can fail after allocating textures (e.g. all samples coincide): free them.
            self.release()
            raise

    def _setup(self, dev, X, Y0, est):
        t_setup = time.perf_counter()
        self.eval_s = []
        self._y0 = np.asarray(Y0, dtype=np.float64)
        n, d = X.shape
        self.n, self.m = n, Y0.shape[1]
        # every layout, the cache, the sweep and its loop-cap cuts from the shapes: a fit the
        # device cannot hold is refused before anything is allocated
        geo = self._geo or fit_geometry(dev, n, d, self.m, est)
        order = geo.order
        # Centred on the host (float64): distances unchanged, norms small (the tiled sweep's
        # |x_i|^2 + |x_j|^2 - 2 x_i.x_j cancels less).
        X64 = np.asarray(X, dtype=np.float64)
        Xc = self._xc = (X64 - X64.mean(axis=0)).astype(np.float32)
        self.X = self._keep(dev.array(Xc, packed=True, order=order, name="X"))
        # Positions, direction and stress terms: one texel per point, near-square wrap.
        self.pos_layout = geo.pos_layout
        self.vec_layout = geo.vec_layout
        self.Y = [self._keep(dev.alloc(self.pos_layout)) for _ in range(3)]
        # the start positions as uploaded: the first update's spot check reads them here
        # instead of back from the device
        self._y0_32 = Y0.astype(np.float32)
        self.Y[0].set(self._y0_32)
        self.G = [self._keep(dev.alloc(self.pos_layout)) for _ in range(2)]
        self.S = self._keep(dev.alloc(self.vec_layout))
        self.V = self._keep(dev.alloc(self.vec_layout))
        self.cached = geo.cached
        self.tiled = geo.tiled
        source = self.source = geo.source
        self.tile_jb = geo.tile_jb
        self.tile_unroll = geo.tile_unroll
        self.tile_s_lane = geo.tile_s_lane
        self.k_pts = geo.k_pts
        self.tile_il = geo.tile_il
        self.chunks = geo.chunks
        with dev.phase("sammon/setup"):
            if self.cached:
                self.D = self._keep(dev.empty((n, n), packed=True, order="row"))
                dev.run(DISTANCES, self.D, inputs={"X": self.X},
                        defines={"SOURCE": SOURCES[est.layout], "SHARED": int(geo.fetch_variants)})
                sum_dn = _reduce.total(dev, self.D)
                src_inputs = {"D": self.D}
            elif self._known_sum_dn is not None:
                sum_dn = float(self._known_sum_dn)
                src_inputs = {"X": self.X}
            else:
                rs_chunks = sweep_chunks(n, d, est.layout, 1, tuning=geo.tuning)
                waits = host_waits([chunk_work(n, d, est.layout, nb) for _, nb in rs_chunks],
                                   geo.tuning.sync_work)
                for k, (b0, nb) in enumerate(rs_chunks):
                    dev.run(ROW_SUMS[est.layout], self.V, inputs={"X": self.X},
                            uniforms={"blk0": b0, "n_blk": nb},
                            accumulate="add" if k > 0 else None)
                    if waits[k]:
                        dev.finish()
                sum_dn = _reduce.total(dev, self.V)
                spot_check_rowsums(dev, self.V, Xc, *(self.rows or ()))
                src_inputs = {"X": self.X}
        if not sum_dn > 0 or not math.isfinite(sum_dn):
            raise ValueError("X: all samples coincide (every source distance is 0); the Sammon "
                             "stress is undefined")
        self.sum_dn = sum_dn
        self.setup_s = time.perf_counter() - t_setup
        pairs = n * (n - 1)
        self.dm_floor = _step.DM_FLOOR * sum_dn / pairs
        self.mu_source = 2.0 * float(est.learning_rate) / sum_dn
        # The update passes: the first chunk writes (and adds prev), the others accumulate
        # (blending, or the engine's ping-pong passes where float blending is missing).
        self.passes = []
        self.finish = None
        if self.tiled:
            k_pts, sl = self.k_pts, self.tile_s_lane
            self.n_part = geo.n_part
            tl = geo.tile_layout
            names = tile_outputs(k_pts, sl)
            tiles = [self._keep(dev.alloc(tl)) for _ in names]
            nrm = (Xc.astype(np.float64) ** 2).sum(axis=1)
            self.NRM = self._keep(dev.array(nrm[None, :], packed=True, order="row",
                                            name="norms"))
            xb, pts_row, pt_texels = blocked_source(
                Xc, dev.max_texture_size, self.tile_unroll,
                self.tile_jb if self.tile_il else 1)
            self.XB = self._keep(dev.array(xb, packed=True, order="row", name="X"))
            kern = update_kernel("tiled", dev.max_outputs, self.tile_jb, sl, k_pts)
            for k, (b0, nb) in enumerate(self.chunks):
                self.passes.append(dev.prepare(
                    kern, dict(zip(names, tiles)),
                    inputs={"X": self.XB, "NRM": self.NRM, "Y": self.Y[0]},
                    uniforms={"blk0": b0, "n_blk": nb, "dm_floor": self.dm_floor,
                              "n_pts": n, "pts_row": pts_row, "pt_texels": pt_texels,
                              "n_part": self.n_part},
                    defines={"UNROLL": self.tile_unroll, "IL": int(self.tile_il)},
                    accumulate="add" if k > 0 else None))
            self.finish = dev.prepare(FINISH[k_pts, sl], [self.Y[1], self.G[0], self.S],
                                      inputs=dict(zip(names, tiles), Y=self.Y[0]),
                                      uniforms={"mu": 0.0, "n_part": self.n_part})
        else:
            for k, (b0, nb) in enumerate(self.chunks):
                p = dev.prepare(UPDATE[source], [self.Y[1], self.G[0], self.S],
                                inputs=dict(src_inputs, Y=self.Y[0]),
                                uniforms={"blk0": b0, "n_blk": nb,
                                          "keep_prev": 1.0 if k == 0 else 0.0,
                                          "dm_floor": self.dm_floor, "mu": 0.0},
                                defines={"Y_STEP": int(geo.fetch_variants),
                                         "Y_DIMS": self.m if geo.fetch_variants else 4},
                                accumulate="add" if k > 0 else None)
                self.passes.append(p)
        self.waits = host_waits([chunk_work(n, d, source, nb) for _, nb in self.chunks],
                                geo.tuning.sync_work)
        self.split = geo.split
        self.tuning = geo.tuning
        self.stress_host = bool(geo.tuning.stress_on_host)
        if not self.stress_host:
            self.stress_sum = _reduce.SumReduction(dev, self.vec_layout, source=self.S)
            self._chains.append(self.stress_sum)

    # ---- helpers ---------------------------------------------------------------------------
    def _keep(self, a):
        self._arrays.append(a)
        return a

    def release(self):
        for c in self._chains:
            c.release()
        self._chains.clear()
        for a in self._arrays:
            a.release()
        self._arrays.clear()

    def evaluate(self, y_in, y_out, g_out, mu):
        """One update (all passes of the sweep) from y_in; returns the stress of y_in (one
        float read)."""
        dev = self.dev
        t0 = time.perf_counter()
        with dev.phase("sammon/update"):
            if self.finish is not None:
                for p, wait in zip(self.passes, self.waits):
                    p.bind(Y=y_in)
                    p.run()
                    if wait:
                        dev.finish()
                self.finish.bind(Y=y_in, OUT0=y_out, OUT1=g_out)
                self.finish.run(mu=float(mu))
            else:
                for p, wait in zip(self.passes, self.waits):
                    p.bind(Y=y_in, OUT0=y_out, OUT1=g_out)
                    p.run(mu=float(mu))
                    if wait:
                        dev.finish()
        with dev.phase("sammon/stress"):
            if self.stress_host:
                s = float(self.S.get()[:, 0].sum(dtype=np.float64))
            else:
                self.stress_sum.run()
                s = float(self.stress_sum.result.get()[0])
        self.eval_s.append(time.perf_counter() - t0)
        if self._check_update:
            # the first update of a fit (from the start positions): a few rows of g and s
            # against float64 on the host (a dropped or cut pass must raise, not fit)
            self._check_update = False
            y = self._y0_32 if y_in is self.Y[0] else y_in.get()
            spot_check_update(dev, g_out, self.S, self._xc, y, self.dm_floor,
                               *(self.rows or ()))
        return s / self.sum_dn

    # ---- the two step rules ------------------------------------------------------------------
    def fit(self):
        est = self.est
        self._check_update = True
        if est.step == "source":
            self._fit_source()
        else:
            self._fit_adaptive()
        est.mu_ = self.mu_source
        est.cached_ = self.cached
        est.tiled_ = self.tiled
        est.tile_jb_ = self.tile_jb
        est.tile_points_ = self.k_pts if self.tiled else None
        est.tile_s_lane_ = self.tile_s_lane if self.tiled else None
        est.tile_unroll_ = self.tile_unroll if self.tiled else None
        est.tile_interleaved_ = self.tile_il if self.tiled else None
        est.split_ = self.split
        est.chunks_ = len(self.chunks)
        est.tuning_ = self.tuning
        est.timings_ = {"setup_s": self.setup_s, "eval_s": list(self.eval_s)}

    def _finish(self, y, history, n_evals, rejected, step):
        est = self.est
        emb = y.get().astype(np.float32)
        if not np.isfinite(emb).all():  # pragma: no cover - guarded by the clamps
            raise FloatingPointError("the embedding became non-finite; lower learning_rate")
        est.embedding_ = emb
        est.stress_ = float(history[-1])
        est.stress_history_ = [float(v) for v in history]
        est.n_iter_ = n_evals
        est.n_rejected_ = rejected
        est.step_ = float(step)

    def _fit_source(self):
        est, mu = self.est, self.mu_source
        cur, nxt = self.Y[0], self.Y[1]
        history = []
        for it in range(int(est.n_iter)):
            e = self.evaluate(cur, nxt, self.G[0], mu)
            history.append(e)
            cur, nxt = nxt, cur
            if est.tol is not None and it > 0 and abs(history[-2] - e) <= est.tol * history[-2]:
                break
        # The stress of the final positions: one more evaluation (its update is discarded).
        history.append(self.evaluate(cur, nxt, self.G[1], 0.0))
        self._finish(cur, history, len(history), 0, mu)

    def _fit_adaptive(self):
        est, dev = self.est, self.dev
        ya, yb, yc = self.Y
        ga, gb = self.G
        # Stress and direction at the start.
        e_a = self.evaluate(ya, yb, ga, 0.0)
        n_evals, history = 1, [e_a]
        with dev.phase("sammon/step"):
            dev.run(SQUARED_NORMS, self.V, inputs={"G": ga})
            g2 = _reduce.total(dev, self.V)
        y0 = self._y0
        spread = float(np.sqrt(((y0 - y0.mean(axis=0)) ** 2).sum() / self.n))
        rms_g = math.sqrt(max(g2, 0.0) / self.n)
        step = start_step(self.mu_source, rms_g, spread)
        if step is None:
            self._finish(ya, history, n_evals, 0, 0.0)
            return
        with dev.phase("sammon/step"):
            dev.run(SAXPY, yb, inputs={"X": ga, "Y": ya}, uniforms={"alpha": step})
        rule = StepRule(step, est.tol)
        while n_evals < est.n_iter:
            # Evaluate candidate yb; its own update (with the grown step) goes to yc.
            e_b = self.evaluate(yb, yc, gb, rule.trial)
            n_evals += 1
            accepted, stop = rule.judge(e_a, e_b)
            if accepted:
                ya, yb, yc = yb, yc, ya
                ga, gb = gb, ga
                e_a = e_b
                history.append(e_b)
            if stop:
                break
            if not accepted:
                with dev.phase("sammon/step"):
                    dev.run(SAXPY, yb, inputs={"X": ga, "Y": ya},
                            uniforms={"alpha": rule.step})
        self._finish(ya, history, n_evals, rule.rejected, rule.step)

