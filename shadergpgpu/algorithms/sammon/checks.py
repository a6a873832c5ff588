"""The spot checks against a renderer that drops or cuts long passes: a few of the setup's row
sums (:func:`spot_check_rowsums`) and a few rows of the first update
(:func:`spot_check_update`) against float64 on the host (:func:`host_row`)."""
from __future__ import annotations

import numpy as np
from ...engine.errors import ShaderGPGPUError

#: The update's spot check (:func:`spot_check_update`) allows each pair's float32 dn - dm
#: this relative error (of dn + dm + |y_i| + |y_j|, 1-norms of the positions): far above the
#: kernels' rounding, far below a dropped pass.
UPDATE_CHECK_EPS = 1e-4


def spot_check_rowsums(dev, V, Xc, lo: int = 0, hi: int | None = None,
                        rows: int = 3) -> None:
    """Compare a few of the device's row sums of dn with the host's (float64): a driver that
    drops or cuts a long draw (zeros, no GL error) must raise, never feed a wrong sum into the
    fit."""
    hi = Xc.shape[0] if hi is None else int(hi)
    idx = np.unique(np.linspace(int(lo), hi - 1, rows).astype(int))
    Xd = np.asarray(Xc, dtype=np.float64)
    ref = np.array([np.sqrt(((Xd - Xd[i]) ** 2).sum(axis=1)).sum() for i in idx])
    got = V.get().reshape(-1)[idx].astype(np.float64)
    bad = np.abs(got - ref) > 1e-3 * np.maximum(ref, 1e-30)
    if bad.any():
        i = int(idx[np.argmax(bad)])
        raise ShaderGPGPUError(
            f"Sammon setup: the renderer returned a wrong row sum of source distances for "
            f"point {i} ({got[np.argmax(bad)]:.6g} vs {ref[np.argmax(bad)]:.6g} on the host); "
            f"{dev.caps.renderer} dropped or cut a pass. Try split= larger, cache=False, or "
            "fewer points per device (shadergpgpu.distributed).")


def host_row(Xd, Yd, i: int, dm_floor: float) -> dict:
    """Point ``i``'s row of one update in float64 on the host (``Xd``, ``Yd``: float64 data
    and positions): g (eq. 3's direction), s (eq. 1's row terms) and the per-pair terms
    (dn, dm, dy, ok: pairs that count, sd, e = dn - dm, den, terms: g's summands)."""
    dn = np.sqrt(((Xd - Xd[i]) ** 2).sum(axis=1))
    dy = Yd[i] - Yd
    dm = np.sqrt((dy ** 2).sum(axis=1))
    ok = dn > 0
    ok[i] = False
    sd = np.where(ok, dn, 1.0)
    e = dn - dm
    den = sd * np.maximum(dm, dm_floor)
    terms = np.where(ok, e / den, 0.0)[:, None] * dy
    return dict(dn=dn, dm=dm, dy=dy, ok=ok, sd=sd, e=e, den=den, terms=terms,
                g=terms.sum(axis=0), s=np.where(ok, e ** 2 / sd, 0.0).sum())


def spot_check_update(dev, G, S, Xc, Y, dm_floor: float, lo: int = 0, hi: int | None = None,
                       rows: int = 3) -> None:
    """Compare a few rows of one update's direction g and stress terms s (eq. 3 and 1, from
    positions ``Y``) with float64 on the host: like :func:`spot_check_rowsums`, a dropped or
    cut pass of the sweep must raise (a wrong row by more than 1e-3 of its size). Each pair's
    float32 dn - dm is allowed an error delta = UPDATE_CHECK_EPS (dn + dm + |y_i| + |y_j|)
    on top (a near-converged row cancels: dn ~ dm), propagated to s and g; g's tolerance is
    measured against the sum of its terms' magnitudes (g itself may cancel)."""
    hi = Xc.shape[0] if hi is None else int(hi)
    idx = np.unique(np.linspace(int(lo), hi - 1, rows).astype(int))
    Xd = np.asarray(Xc, dtype=np.float64)
    Yd = np.asarray(Y, dtype=np.float64)
    got_g = G.get().astype(np.float64)
    got_s = S.get().reshape(len(Xd), -1)[:, 0].astype(np.float64)
    m = Yd.shape[1]
    for i in idx:
        r = host_row(Xd, Yd, i, dm_floor)
        dn, dm, dy, ok, sd, e, den = (r[k] for k in ("dn", "dm", "dy", "ok", "sd", "e", "den"))
        g, s, scale = r["g"], r["s"], np.abs(r["terms"]).sum(axis=0)
        delta = UPDATE_CHECK_EPS * (dn + dm + np.abs(Yd[i]).sum() + np.abs(Yd).sum(axis=1))
        tol_s = 1e-3 * s + np.where(ok, (2 * np.abs(e) + delta) * delta / sd, 0.0).sum()
        tol_g = 1e-3 * scale + (np.where(ok, delta / den, 0.0)[:, None] * np.abs(dy)).sum(0)
        bad_g = np.abs(got_g[i, :m] - g) > np.maximum(tol_g, 1e-30)
        bad_s = abs(got_s[i] - s) > max(tol_s, 1e-30)
        if bad_g.any() or bad_s:
            raise ShaderGPGPUError(
                f"Sammon update: the renderer returned a wrong direction or stress row for "
                f"point {i} (g {got_g[i, :m]} vs {g}, s {got_s[i]:.6g} vs {s:.6g} on the "
                f"host); {dev.caps.renderer} dropped or cut a pass. Try split= larger, or "
                "fewer points per device (shadergpgpu.distributed).")

