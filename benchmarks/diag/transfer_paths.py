"""Which GL path moves float32 data fastest between host and texture (raw moderngl), beside
torch on the same GPU: direct texture write/read, through a pixel buffer object, into a
preallocated numpy array. 256 MB by default. Decides the engine's transfer path (issue 20).

    python benchmarks/diag/transfer_paths.py [--mb 256] [--repeat 5]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import shadergpgpu as sg  # noqa: E402


def best(fn, repeat):
    fn()
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=float, default=256)
    p.add_argument("--repeat", type=int, default=5)
    a = p.parse_args()
    dev = sg.Device()
    ctx = dev.ctx
    n = int(a.mb * 2**20 / 4)
    side = int(np.sqrt(n / 4))
    host = np.random.default_rng(0).standard_normal((side, 4 * side)).astype(np.float32)
    nbytes = host.nbytes
    x = dev.array(host)
    tex = x.texture
    out = np.empty_like(host)
    pbo = ctx.buffer(reserve=nbytes)
    rows = []

    def fin():
        dev.finish()

    def w_direct():
        tex.write(host); fin()

    def w_pbo():
        pbo.write(host); tex.write(pbo); fin()

    def w_pbo_orphan():
        pbo.orphan(); pbo.write(host); tex.write(pbo); fin()

    def r_bytes():
        tex.read()

    def r_into():
        tex.read_into(out)

    def r_pbo():
        tex.read_into(pbo); pbo.read_into(out)

    def r_pbo_split():  # readback issued, then mapped: the wait is in pbo.read_into
        tex.read_into(pbo); fin(); pbo.read_into(out)

    pbo_s = ctx.buffer(reserve=nbytes)                 # used for readbacks only
    pbo_d = ctx.buffer(reserve=nbytes, dynamic=True)

    def r_pbo_static():
        tex.read_into(pbo_s); pbo_s.read_into(out)

    def r_pbo_dynamic():
        tex.read_into(pbo_d); pbo_d.read_into(out)

    def get_out():
        x.get(out=out)

    def set_():
        x.set(host); fin()

    def get_():
        x.get()

    for name, fn in [("write direct", w_direct), ("write via PBO", w_pbo),
                     ("write via PBO (orphan)", w_pbo_orphan), ("DeviceArray.set", set_),
                     ("read -> bytes", r_bytes), ("read_into numpy", r_into),
                     ("read via PBO -> numpy", r_pbo), ("read via PBO, finish, copy", r_pbo_split),
                     ("read via read-only PBO (static)", r_pbo_static),
                     ("read via read-only PBO (dynamic)", r_pbo_dynamic),
                     ("DeviceArray.get", get_), ("DeviceArray.get(out=)", get_out)]:
        t = best(fn, a.repeat)
        rows.append((name, nbytes / t / 1e9))
    try:
        import torch
        if torch.cuda.is_available():
            g = torch.empty(host.shape, device="cuda")
            th = torch.from_numpy(host)
            tout = torch.from_numpy(out)
            pin = torch.empty(host.shape).pin_memory()

            def t_h2d():
                g.copy_(th); torch.cuda.synchronize()

            def t_d2h():
                tout.copy_(g); torch.cuda.synchronize()

            def t_cpu():
                g.cpu()

            def t_pin():
                pin.copy_(g); torch.cuda.synchronize()
            for name, fn in [("torch H2D pageable", t_h2d), ("torch D2H into preallocated", t_d2h),
                             ("torch .cpu()", t_cpu), ("torch D2H pinned", t_pin)]:
                rows.append((name, nbytes / best(fn, a.repeat) / 1e9))
    except ImportError:
        pass
    print(f"# {dev.caps.renderer}, {nbytes / 2**20:.0f} MB float32")
    for name, gbs in rows:
        print(f"{name:<32} {gbs:7.2f} GB/s")


if __name__ == "__main__":
    main()
