"""``fit_sammon``: Sammon mapping with the points of the gather split in row ranges over workers.

Each worker holds the single-device fit state with its passes restricted to its rows
(:class:`_SammonShard`); the client gathers the partial results (:class:`_SammonDriver`) and
runs the step rule (``step="source"`` or the adaptive step) on the host.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..engine import validation as V
from .cluster import resolve_client, device_info
from .shards import Shards
from ..engine.passes import Pass


# ---- Sammon mapping, rows of points split across workers -------------------------------------
def _rows_rect(layout, first: int, last: int):
    """The texture rows of ``layout`` that hold its rows ``first`` .. ``last`` (a rect over
    the whole width; where rows share texture rows with their neighbours, as when a wrapped
    layout's rows are not whole texture rows, the neighbours' texels are computed too, the same
    way as on one device), or None (the whole texture) for column order."""
    if layout.order != "row":
        return None
    y0 = layout.texel_of(first, 0)[1]
    y1 = layout.texel_of(last, layout.cols - 1)[1]
    return (0, y0, layout.tex_w, y1 - y0 + 1)


def _restricted(p, n: int, lo: int, hi: int, k_pts: int):
    """The prepared pass ``p`` of a Sammon fit, drawn only over the texels of points
    lo .. hi-1: outputs with one texel per point (positions, direction, stress) or one per
    fragment of ``k_pts`` points (the tiled sweep's sums)."""
    lay = next(iter(p.outputs.values())).layout
    if lay.rows == n:
        first, last = lo, hi - 1
    elif lay.rows == -(-n // k_pts):
        first, last = lo // k_pts, (hi - 1) // k_pts
    else:  # pragma: no cover - a new output kind of the single-device fit
        raise NotImplementedError(f"{p.kernel.name}: outputs of {lay.rows} rows for {n} "
                                  "points; shadergpgpu.distributed does not know how its "
                                  "texels map to points")
    rect = _rows_rect(lay, first, last)
    uniforms = {k: v for k, v in p.values.items() if k in p.kernel.uniforms}
    return Pass(p.device, p.kernel, p.inputs, p.outputs, uniforms, p.defines, p.blend, rect)


class _SammonShard:
    """One worker's part of a Sammon fit: the single-device fit state (``sammon.SammonRun``: all
    the source points, since the sweep over j needs them, and the position textures) with
    its passes restricted to the texture rows of this worker's points lo .. hi-1 (the i of
    the gather): the setup's row sums of dn (their sum is this worker's part of sum dn) and
    every update pass. Chunks and per-point sums are the single-device ones, so each point's
    update is the same float32 computation as on one device given the same sum dn."""

    def __init__(self, dev, shard):
        from ..algorithms import sammon as S
        c = shard["common"]
        Xc = c["X"]
        self.lo, self.hi = lo, hi = int(shard["start"]), int(shard["stop"])
        self.dev = dev
        n = Xc.shape[0]
        est = S.Sammon(**dict(c["params"], cache=False))
        rowsums = tuple(S.ROW_SUMS.values())
        cleared = set()
        plain_run = dev.run

        def rows_only(kernel, outputs, *args, **kwargs):
            # the setup's row sums of dn: this worker's rows only, zeros elsewhere (so the
            # device sum that follows is the sum over this worker's rows)
            if any(kernel is k for k in rowsums) and kwargs.get("rect") is None:
                if id(outputs) not in cleared:
                    dev.fill(outputs, 0.0)
                    cleared.add(id(outputs))
                kwargs["rect"] = _rows_rect(outputs.layout, lo, hi - 1)
            return plain_run(kernel, outputs, *args, **kwargs)

        dev.run = rows_only
        try:
            self.run = run = S.run.SammonRun(dev, Xc, np.zeros((n, int(est.n_components))), est,
                                    rows=(lo, hi))
        finally:
            del dev.run
        try:
            # shards cut at whole texture rows of V (fit_sammon's bounds): the device sum is
            # over exactly these rows; otherwise sum them here from V
            lay = run.V.layout
            if lay.texel_of(lo, 0)[0] == 0 and (hi == n or lay.texel_of(hi, 0)[0] == 0):
                self.rowsum = float(run.sum_dn)
            else:
                self.rowsum = float(run.V.get().reshape(-1)[lo:hi].sum(dtype=np.float64))
            k_pts = run.k_pts
            run.passes = [_restricted(p, n, lo, hi, k_pts) for p in run.passes]
            if run.finish is not None:
                run.finish = _restricted(run.finish, n, lo, hi, k_pts)
            self.floor = run.dm_floor
        except BaseException:
            run.release()
            raise

    def evaluate(self, y_in, mu: float, dm_floor: float):
        """Update of this worker's points from positions ``y_in`` (all N): their next
        positions (eq. 3, step ``mu``), direction g and the sum of their stress terms."""
        run, dev = self.run, self.dev
        if dm_floor != self.floor:           # from the whole sum dn (the client's)
            for p in run.passes:
                if "dm_floor" in p.kernel.uniforms:
                    p.set(dm_floor=float(dm_floor))
            self.floor = dm_floor
        run.Y[0].set(y_in)
        with dev.phase("sammon/update"):
            if run.finish is not None:
                for p in run.passes:
                    p.run()
                run.finish.run(mu=float(mu))
            else:
                for p in run.passes:
                    p.run(mu=float(mu))
        lo, hi = self.lo, self.hi
        s = float(run.S.get().reshape(-1)[lo:hi].sum(dtype=np.float64))
        return run.Y[1].get()[lo:hi], run.G[0].get()[lo:hi], s

    def release(self):
        self.run.release()


def _sammon_setup(dev, st):
    r = st.run
    return {"rowsum": st.rowsum, "setup_s": r.setup_s, "split": r.split,
            "chunks": len(r.chunks), "tiled": bool(r.tiled),
            "tile_jb": getattr(r, "tile_jb", None)}


def _sammon_eval(dev, st, y_in, mu, dm_floor):
    return st.evaluate(y_in, mu, dm_floor)


class _SammonDriver:
    def __init__(self, shards, dm_floor):
        self.sh, self.dm_floor = shards, dm_floor
        self.eval_s = []

    def evaluate(self, y, mu):
        """(next positions, direction, stress of y) gathered from every shard."""
        t0 = time.perf_counter()
        parts = self.sh.map(_sammon_eval, np.ascontiguousarray(y, np.float32), float(mu),
                            self.dm_floor)
        nxt = np.concatenate([p[0] for p in parts]).astype(np.float32)
        g = np.concatenate([p[1] for p in parts]).astype(np.float32)
        s = float(sum(p[2] for p in parts))
        self.eval_s.append(time.perf_counter() - t0)
        return nxt, g, s


def fit_sammon(est, X, client=None, n_shards=None):
    """``Sammon.fit(X, client=)``: the points i of the gather split in row ranges across the
    workers, every worker holding all the source points (the sweep over j); each evaluation
    broadcasts the positions, every worker runs the single-device passes restricted to its
    rows and returns their next positions, direction and stress partial sum; the step rule
    (``step="source"`` or ``"adaptive"``) runs on the client. The distances are recomputed
    (``cache=True`` is refused: an N x N cache does not split by rows of points here)."""
    from sklearn.utils.validation import validate_data
    from ..algorithms import sammon as S
    est._check_params()
    if est.cache is True or (isinstance(est.cache, np.bool_) and bool(est.cache)):
        raise ValueError("cache=True is not available with client=: every worker recomputes "
                         "the distances of its rows (use cache=False or 'auto')")
    if hasattr(X, "device") and hasattr(X, "layout") and hasattr(X, "get"):
        raise TypeError("X: pass a host array (Sammon reads the source points once)")
    X = validate_data(est, X, dtype=np.float32, ensure_min_samples=2)
    m = int(est.n_components)
    Y0 = np.asarray(est._start(X, m), dtype=np.float64)
    n = X.shape[0]
    # the parameters, not the estimator: its device (if any) lives in this process
    params = {k: v for k, v in est.get_params(deep=False).items() if k != "device"}
    common = {"X": X, "params": params}
    client = resolve_client(client)
    info = device_info(client)
    k = len(info) if n_shards is None else V.integer(n_shards, "n_shards", lo=1)
    # shards cut at whole rows of the per-point textures (SammonRun's near-square wrap)
    w = min(max(1, math.isqrt(n - 1) + 1), min(i["max_texture_size"] for i in info))
    rows = -(-n // w)
    cuts = sorted({min(n, w * round(rows * t / k)) for t in range(k + 1)} | {0, n})
    with Shards(client, n, _SammonShard, bounds=cuts, common=common) as sh:
        # every worker made the single-device setup with the row sums of dn of its rows
        parts = sh.map(_sammon_setup)
        info = parts[0]
        sum_dn = float(sum(p["rowsum"] for p in parts))
        if not sum_dn > 0 or not math.isfinite(sum_dn):  # pragma: no cover - SammonRun refuses
            raise ValueError("X: all samples coincide (every source distance is 0); the "
                             "Sammon stress is undefined")
        mu = 2.0 * float(est.learning_rate) / sum_dn
        drv = _SammonDriver(sh, S.DM_FLOOR * sum_dn / (n * (n - 1)))
        info["setup_s"] = max(p["setup_s"] for p in parts)
        if est.step == "source":
            y, hist, evals, rejected, step = _sammon_source(est, drv, Y0, mu, sum_dn)
        else:
            y, hist, evals, rejected, step = _sammon_adaptive(est, drv, Y0, mu, sum_dn)
        n_shards = sh.n_shards
    if not np.isfinite(y).all():  # pragma: no cover - guarded by the clamps
        raise FloatingPointError("the embedding became non-finite; lower learning_rate")
    est.embedding_ = np.asarray(y, np.float32)
    est.stress_ = float(hist[-1])
    est.stress_history_ = [float(v) for v in hist]
    est.n_iter_ = evals
    est.n_rejected_ = rejected
    est.step_ = float(step)
    est.mu_ = mu
    est.cached_ = False
    est.tiled_ = info["tiled"]
    if info["tile_jb"] is not None:
        est.tile_jb_ = info["tile_jb"]
    est.split_ = info["split"]
    est.chunks_ = info["chunks"]
    est.timings_ = {"setup_s": info["setup_s"], "eval_s": list(drv.eval_s)}
    est.n_shards_ = n_shards
    return est


def _sammon_source(est, drv, Y0, mu, sum_dn):
    cur = Y0.astype(np.float32)
    history = []
    for it in range(int(est.n_iter)):
        nxt, _, s = drv.evaluate(cur, mu)
        e = s / sum_dn
        history.append(e)
        cur = nxt
        if est.tol is not None and it > 0 and abs(history[-2] - e) <= est.tol * history[-2]:
            break
    history.append(drv.evaluate(cur, 0.0)[2] / sum_dn)
    return cur, history, len(history), 0, mu


def _saxpy(alpha, x, y):
    """``alpha x + y`` in float32, as the device's SAXPY pass."""
    return (np.float32(alpha) * x + y).astype(np.float32)


def _sammon_adaptive(est, drv, Y0, mu, sum_dn):
    from ..algorithms import sammon as S
    n = Y0.shape[0]
    ya = Y0.astype(np.float32)
    _, ga, s = drv.evaluate(ya, 0.0)
    e_a = s / sum_dn
    n_evals, history = 1, [e_a]
    g2 = float((ga.astype(np.float64) ** 2).sum())
    spread = float(np.sqrt(((Y0 - Y0.mean(axis=0)) ** 2).sum() / n))
    rms_g = math.sqrt(max(g2, 0.0) / n)
    step = S.start_step(mu, rms_g, spread)
    if step is None:
        return ya, history, n_evals, 0, 0.0
    yb = _saxpy(step, ga, ya)
    rule = S.StepRule(step, est.tol)
    while n_evals < est.n_iter:
        yc, gb, s = drv.evaluate(yb, rule.trial)
        e_b = s / sum_dn
        n_evals += 1
        accepted, stop = rule.judge(e_a, e_b)
        if accepted:
            ya, yb = yb, yc
            ga = gb
            e_a = e_b
            history.append(e_b)
        if stop:
            break
        if not accepted:
            yb = _saxpy(rule.step, ga, ya)
    return ya, history, n_evals, rule.rejected, rule.step
