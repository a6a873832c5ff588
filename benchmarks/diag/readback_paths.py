"""Readback into a preallocated numpy array: which GL path reaches torch's pace, and whether a
CUDA context in the same process changes it (issue 20, item 1: `get(out=)` measured 8.5 GB/s in
`transfer_paths.py` but ~5 GB/s in `benchmarks/engine.py`, which creates torch's CUDA context
before its transfers).

    python benchmarks/diag/readback_paths.py [--mb 256] [--repeat 5] [--torch-first]

Paths (raw GL through ctypes where moderngl has no call): the engine's ``get(out=)``; a pixel
buffer object with each usage hint (moderngl's default STATIC_DRAW, then STREAM_READ,
DYNAMIC_READ, STATIC_READ re-specified with glBufferData); an immutable persistently mapped
buffer in client storage (glBufferStorage) copied out with numpy after a finish; the same in
bands, the copy of band i overlapping the transfer of band i+1.
"""
import argparse
import ctypes
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import shadergpgpu as sg  # noqa: E402
from shadergpgpu.engine.glraw import GLRaw  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from transfer_paths import best  # noqa: E402  (warm call, then the fastest of the repeats)

GL_PIXEL_PACK_BUFFER = 0x88EB
HINTS = {"STREAM_READ": 0x88E1, "STATIC_READ": 0x88E5, "DYNAMIC_READ": 0x88E9}
MAP_READ, MAP_PERSISTENT, MAP_COHERENT, CLIENT_STORAGE = 0x1, 0x40, 0x80, 0x200
GL_SYNC_GPU_COMMANDS_COMPLETE, GL_SYNC_FLUSH_COMMANDS_BIT = 0x9117, 0x1


def gl_funcs():
    raw = GLRaw.get()
    get_proc = raw._egl.eglGetProcAddress if raw._egl is not None else None
    protos = {
        "glBindBuffer": (None, [ctypes.c_uint, ctypes.c_uint]),
        "glBufferData": (None, [ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p, ctypes.c_uint]),
        "glBufferStorage": (None, [ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_void_p,
                                   ctypes.c_uint]),
        "glGenBuffers": (None, [ctypes.c_int, ctypes.POINTER(ctypes.c_uint)]),
        "glMapBufferRange": (ctypes.c_void_p, [ctypes.c_uint, ctypes.c_ssize_t, ctypes.c_ssize_t,
                                               ctypes.c_uint]),
        "glFenceSync": (ctypes.c_void_p, [ctypes.c_uint, ctypes.c_uint]),
        "glClientWaitSync": (ctypes.c_uint, [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint64]),
        "glDeleteSync": (None, [ctypes.c_void_p]),
        "glGetError": (ctypes.c_uint, []),
    }
    f = {}
    for name, (res, args) in protos.items():
        addr = get_proc(name.encode()) if get_proc is not None else None
        if not addr:
            fn = getattr(raw._gl, name)
            fn.restype, fn.argtypes = res, args
        else:
            fn = ctypes.CFUNCTYPE(res, *args)(addr)
        f[name] = fn
    return f


def torch_rows(host, out, repeat):
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    g = torch.from_numpy(host).cuda()
    tout = torch.from_numpy(out)

    def d2h():
        tout.copy_(g)
        torch.cuda.synchronize()
    return [("torch D2H into preallocated", host.nbytes / best(d2h, repeat) / 1e9)]


def small_reads(repeat):
    """Latency of small readbacks: straight into host memory against the mapped buffer."""
    dev = sg.Device()
    print(f"# small readbacks on {dev.caps.renderer}: us per get(out=) (best of {repeat} x 50)")
    for n in (64, 1024, 16384, 262144, 1 << 20):
        x = dev.array(np.arange(n, dtype=np.float32).reshape(-1, 64))
        out = np.empty(x.shape, np.float32)
        res = {}
        for name, lo in (("straight", 1 << 40), ("mapped", 0)):
            dev.tune(sg.EngineTuning, pbo_min_bytes=lo)

            def f():
                for _ in range(50):
                    x.get(out=out)
            res[name] = best(f, repeat) / 50 * 1e6
            assert np.array_equal(out.reshape(-1), np.arange(n, dtype=np.float32))
        print(f"{n * 4:>9} bytes  straight {res['straight']:8.1f} us  mapped {res['mapped']:8.1f} us")
    dev.untune(sg.EngineTuning)


def main():
    if "--small" in sys.argv:
        return small_reads(5)
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=float, default=256)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--bands", type=int, default=8)
    p.add_argument("--torch-first", action="store_true",
                   help="create torch's CUDA context before the GL paths")
    a = p.parse_args()
    dev = sg.Device()
    ctx = dev.ctx
    gl = gl_funcs()
    n = int(a.mb * 2**20 / 4)
    side = int(np.sqrt(n / 4))
    host = np.random.default_rng(0).standard_normal((side, 4 * side)).astype(np.float32)
    nbytes = host.nbytes
    x = dev.array(host)
    tex = x.texture
    out = np.ones_like(host)
    rows = []
    if a.torch_first:
        rows += torch_rows(host, out, a.repeat)

    def ok():
        if not np.array_equal(out, host):
            raise SystemExit("MISMATCH: a readback path returned wrong values")
        out[:] = 0

    rows.append(("engine get(out=)", nbytes / best(lambda: x.get(out=out), a.repeat) / 1e9))
    ok()
    pbo = ctx.buffer(reserve=nbytes)
    rows.append(("PBO default (STATIC_DRAW)",
                 nbytes / best(lambda: (tex.read_into(pbo), pbo.read_into(out)), a.repeat) / 1e9))
    ok()
    for hint, enum in HINTS.items():
        b = ctx.buffer(reserve=nbytes)
        gl["glBindBuffer"](GL_PIXEL_PACK_BUFFER, b.glo)
        gl["glBufferData"](GL_PIXEL_PACK_BUFFER, nbytes, None, enum)
        gl["glBindBuffer"](GL_PIXEL_PACK_BUFFER, 0)
        rows.append((f"PBO {hint}",
                     nbytes / best(lambda: (tex.read_into(b), b.read_into(out)), a.repeat) / 1e9))
        ok()
        b.release()
    # immutable, persistently mapped, in client memory
    pers = ctx.buffer(reserve=4)
    pers_ok = True
    try:
        gl["glBindBuffer"](GL_PIXEL_PACK_BUFFER, pers.glo)
        gl["glBufferStorage"](GL_PIXEL_PACK_BUFFER, nbytes, None,
                              MAP_READ | MAP_PERSISTENT | MAP_COHERENT | CLIENT_STORAGE)
        ptr = gl["glMapBufferRange"](GL_PIXEL_PACK_BUFFER, 0, nbytes,
                                     MAP_READ | MAP_PERSISTENT | MAP_COHERENT)
        gl["glBindBuffer"](GL_PIXEL_PACK_BUFFER, 0)
        err = gl["glGetError"]()
        if not ptr or err:
            raise RuntimeError(f"persistent map failed (GL error 0x{err:04X})")
        view = np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)),
                                     shape=(nbytes // 4,))
        flat = out.reshape(-1)
    except Exception as e:  # noqa: BLE001
        print(f"# persistent mapping unavailable: {e}")
        pers_ok = False
    if pers_ok:
        fbo = ctx.framebuffer(color_attachments=[tex])
        h, w = tex.height, tex.width

        def whole():
            gl["glBindBuffer"](GL_PIXEL_PACK_BUFFER, pers.glo)
            fbo.use()
            ctx.finish()
            _read_pixels(0, h)
            gl["glBindBuffer"](GL_PIXEL_PACK_BUFFER, 0)
            ctx.finish()
            np.copyto(flat, view)

        row_bytes = w * 16

        def banded():
            gl["glBindBuffer"](GL_PIXEL_PACK_BUFFER, pers.glo)
            fbo.use()
            step = (h + a.bands - 1) // a.bands
            fences = []
            for y0 in range(0, h, step):
                y1 = min(h, y0 + step)
                _read_pixels(y0, y1 - y0, offset=y0 * row_bytes)
                fences.append((y0, y1, gl["glFenceSync"](GL_SYNC_GPU_COMMANDS_COMPLETE, 0)))
            gl["glBindBuffer"](GL_PIXEL_PACK_BUFFER, 0)
            for y0, y1, s in fences:
                gl["glClientWaitSync"](s, GL_SYNC_FLUSH_COMMANDS_BIT, 10**10)
                gl["glDeleteSync"](s)
                lo, hi = y0 * w * 4, y1 * w * 4
                np.copyto(flat[lo:hi], view[lo:hi])

        raw = GLRaw.get()
        rp = _read_pixels_fn(raw)

        def _read_pixels(y, hh, offset=0):
            rp(0, y, w, hh, 0x1908, 0x1406, ctypes.c_void_p(offset))   # RGBA, FLOAT

        rows.append(("persistent client-storage buffer", nbytes / best(whole, a.repeat) / 1e9))
        ok()
        rows.append((f"persistent, {a.bands} bands overlapped",
                     nbytes / best(banded, a.repeat) / 1e9))
        ok()
    rows.append(("memcpy numpy (host)", nbytes / best(lambda: np.copyto(out, host), a.repeat) / 1e9))
    ok()
    if not a.torch_first:
        rows += torch_rows(host, out, a.repeat)
        rows.append(("engine get(out=) after torch",
                     nbytes / best(lambda: x.get(out=out), a.repeat) / 1e9))
        ok()
    print(f"# {dev.caps.renderer}, {nbytes / 2**20:.0f} MB float32, torch first: {a.torch_first}")
    for name, gbs in rows:
        print(f"{name:<40} {gbs:7.2f} GB/s")


def _read_pixels_fn(raw):
    get_proc = raw._egl.eglGetProcAddress if raw._egl is not None else None
    args = [ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_uint, ctypes.c_uint,
            ctypes.c_void_p]
    addr = get_proc(b"glReadPixels") if get_proc is not None else None
    if addr:
        return ctypes.CFUNCTYPE(None, *args)(addr)
    fn = raw._gl.glReadPixels
    fn.restype, fn.argtypes = None, args
    return fn


if __name__ == "__main__":
    main()
