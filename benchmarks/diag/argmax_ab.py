"""A/B: arg-max over 16M elements, fetch batch 1/4, level vectors wrapped or in one row."""
import time, numpy as np, shadergpgpu as sg
from shadergpgpu.ops.reduce import arg as R
from shadergpgpu.ops.tuning import ReduceTuning
dev = sg.Device()
n = 16_000_000
x = np.random.default_rng(0).random(n, dtype=np.float32)
a = dev.array(x)
want = (float(x.max()), int(np.argmax(x)))
import sys
FBS = [int(v) for v in (sys.argv[1] if len(sys.argv) > 1 else "1,4").split(",")]
WRAPS = [int(v) for v in (sys.argv[2] if len(sys.argv) > 2 else "128,16384").split(",")]
FANS = [int(v) for v in (sys.argv[3] if len(sys.argv) > 3 else "16,32,64").split(",")]
res = {}
for rep in range(3):
    for fb in FBS:
        for wrap in WRAPS:
            dev.tune(ReduceTuning, arg_fetch_batch=fb, level_wrap=wrap)
            for F in FANS:
                got = R.argmax(dev, a, fanin=F)
                assert got == want, (fb, wrap, F, got, want)
                dev.finish(); t0 = time.perf_counter()
                for _ in range(10):
                    R.argmax_device(dev, a, fanin=F).release()
                dev.finish(); dt = (time.perf_counter() - t0) / 10
                k = (fb, wrap, F)
                res[k] = min(res.get(k, 1e9), dt)
bound = n * 4 / 112.5e9
for k, dt in sorted(res.items()):
    print(f"argmax batch={k[0]} wrap={k[1]} F={k[2]}: {dt*1e3:.3f} ms = {n/dt/1e9:.2f} Gred/s, {bound/dt*100:.0f}% of copy bound (112.5 GB/s read)")
