"""The passes of one line filter (:func:`line_passes`, read by the pass plans ``blur/*`` of
:mod:`shadergpgpu.analysis.plans.blur`) and the traffic model of the benchmark's bandwidth
ratio (:func:`traffic_bytes`)."""
from __future__ import annotations

from .tiling import DEFAULT_TILING, Tiling, line_config


def device_limits(device, max_outputs, loop_cap, float_blending):
    """(max_outputs, loop_cap, float_blending) from a device (its profile included) or as given."""
    if device is not None:
        return device.max_outputs, device.loop_cap, device.float_blending
    return max_outputs, loop_cap, float_blending


def line_passes(npos: int, tiling: Tiling | None = DEFAULT_TILING, seq: bool = False,
                max_outputs: int = 8, loop_cap: int | None = None) -> dict:
    """Passes of one line filter over lines of ``npos`` texels, per step (``seq``: a packed
    grayscale row; ``tiling`` None: the one :func:`fit_tiling` picks for ``loop_cap``)."""
    cfg = line_config(seq, tiling, max_outputs, loop_cap)
    n = len(cfg.tiling.levels(npos))
    p = len(cfg.parts)
    return {"reduce": p, "combine": p * (n - 1), "carry": p, "down": p * (n - 1), "apply": 1}


def row_texels(w: int, gray: bool) -> int:
    return -(-w // 4) if gray else w


# ---- traffic model (for the benchmark's bandwidth ratio) ---------------------------------------
def _line_traffic(nlines: int, npos: int, tiling: Tiling, nsum: int = 8) -> int:
    """Texels read + written by one line filter (each texel of each pass once); ``nsum``
    arrays per summary set (8, or 2 for a packed single lane)."""
    nb = tiling.levels(npos)
    t = nlines * npos + nsum * nb[0] * nlines                      # reduce
    for a, b in zip(nb[:-1], nb[1:]):
        t += nsum * nlines * (3 * a + 2 * b)                       # combine (r a, w b) + down
    t += 2 * nsum * nb[-1] * nlines                                # carry
    nfb = -(-npos // 8)
    t += nlines * npos + nsum * nb[0] * nlines + 8 * nfb * nlines  # apply
    return t


def traffic_bytes(h: int, w: int, gray: bool, schedule: str = "hv",
                  tiling: Tiling = DEFAULT_TILING) -> int:
    """Bytes the recursive blur must move (RGBA32F texels, each read or written once per pass)."""
    wt = row_texels(w, gray)
    if schedule == "hv":
        wp = -(-wt // 8)
        t = (_line_traffic(h, wt, tiling, 2 if gray else 8) + _line_traffic(8 * wp, h, tiling)
             + 2 * h * wt)
    else:
        ht = row_texels(h, gray)
        t = _line_traffic(wt, h, tiling) + 2 * h * wt + _line_traffic(ht, w, tiling) + 2 * h * wt
    return 16 * t
