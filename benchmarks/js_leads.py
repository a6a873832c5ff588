"""Our lead over tfjs-webgl and gpu.js on the same machine: matmul, a fused MLP step, exact blur.

    python benchmarks/js_leads.py [--quick] [--out DIR] [--libs DIR] [--only matmul,mlp,blur]

Each workload runs, with the same float32 data and sizes, in shadergpgpu on this machine's
native GL (``sg.Device()``, headless EGL; Mesa llvmpipe here) and in headless Chromium
(WebGL2 through ANGLE on the same Mesa llvmpipe) under tfjs (webgl backend; the page checks
``tf.getBackend() == 'webgl'``, WebGL2 and float32 render targets) and under gpu.js (every
kernel checked to run as ``WebGL2Kernel``, mode 'gpu', single precision; gpu.js otherwise falls
back to its CPU kernel silently). The browser side is ``benchmarks/js/leads.html`` +
``leads.js``, served and run by :func:`shadergpgpu.frontends.browser.run_page`.

Workloads:
  1. matmul n x n, n = 256, 512, 1024: C = A B, A and B uniform in [-1, 1], A divided by its
     spectral radius (so that the chained calls below, C <- A C, neither overflow nor vanish).
     shadergpgpu: ``sg.sgemm`` on device arrays (its public call: staging, product, combine);
     tfjs: ``tf.matMul``; gpu.js: one kernel, a K loop per output element.
  2. one full-batch MLP training step (forward, error backpropagation, gradients, plain SGD,
     sigmoid units, E = 1/2 sum (y - t)^2, lr = 0.5 / N), nets 2-64-1 with N = 1,024 and
     64-256-10 with N = 4,096. shadergpgpu: ``BackpropNet(schedule="fused")``; tfjs:
     ``tf.variable`` weights, ``tf.fused.matMul`` (bias + sigmoid) forward, deltas and
     gradients by hand (``matMul`` with transposes, ``sum``), ``assign``; gpu.js: a kernel per
     layer forward, the output and hidden deltas, and per layer one gradient-and-update kernel
     (two copies used in turn, since a pipeline kernel may not read its own output).
  3. exact Gaussian blur of a 1,024 x 1,024 grayscale image, sigma 4, separable with the taps of
     ``sg.gaussian_blur(method="exact")`` (radius int(4 sigma + 0.5) = 16, 33 normalised taps,
     scipy's truncate=4), zeros outside the image (border "constant", which tfjs' 'same'
     padding gives). shadergpgpu: ``gaussian_blur(method="exact", border="constant")`` on a
     device array; tfjs: two ``conv2d`` and, separately, two ``depthwiseConv2d`` (the faster
     is tfjs' figure); gpu.js: a horizontal and a vertical kernel (taps as kernel constants).

Checks, before timing, one call of every side against float64 numpy (scipy for the blur): the
largest error relative to the largest |reference| must be <= 1e-4 (matmul: C; MLP: the weights
after one step from the same start, and the update W - W0 itself within 1e-2 of the float64
update, so a step that forgets the update cannot pass; blur: the image). A side that fails
prints ``MISMATCH`` and the script exits 1.

Timing, the same rule on every side (``time_batches`` here, ``timeBatches`` in leads.js):
``warmup`` calls (compile, first run) and a sync; one call and a sync timed to size the batch
(the fewest calls, at most ``max_batch``, that last ``min_batch_s``); then ``repeats`` batches,
each timed from its first call to the end of the sync after its last call; ms per call = batch
time / calls. Calls are chained on every side: call k + 1 takes call k's result as its input
(matmul: B; blur: the image; the MLP step chains through its weights), so every call's work
is needed by the final sync. Independent calls would let the renderer skip a result that is
overwritten before anything reads it: under Chromium on llvmpipe, 8 gpu.js blur calls into
the same textures took 20 ms a call against 88 ms for one call with a sync and 112 ms for 8
chained calls (natively, 8 draws into one output 20 ms a draw, into two in turn 35 ms). The
sides take turns: each round runs shadergpgpu, then tfjs, then gpu.js on a
workload (``--rounds``; 2 by default, 1 with ``--quick``), so a change of load on a shared
machine reaches all of them. Reported: the fastest batch of any round and the median of all
batches; the lead is their fastest / ours (the lead of the medians is printed beside it).
The sync: shadergpgpu ``dev.finish()``; tfjs ``dataSync()`` of a 1-element slice of the last
result; gpu.js a 1-output kernel reading the last result's element [0][0], read back. Data
stays resident on the device on every side: inputs are uploaded once before timing (tensors,
textures, device arrays), outputs stay on the GPU, no call uploads host data. ``--quick``: 3
repeats, batches of >= 0.1 s; default: 7 repeats, batches of >= 0.5 s.

Output: a table per workload, ms per call for each side, the leads, and the figures of issue
20 item 6 (measured 2026-11-22: matmul 1.9-3.1x, fused MLP step 5.9-11.8x, exact blur 1.18x at
1,024^2 sigma 4) beside them. A lead < 1.0 (we are slower) prints ``MISSED`` and the script
exits 1; a page that fails prints ``FAILED`` and exits 1. ``--out DIR`` writes
``js_leads.json``/``.csv``/``.md``.

The libraries are not part of the repository. The harness reads ``tf.min.js`` (the
@tensorflow/tfjs browser bundle, ``dist/tf.min.js`` of its npm package) and
``gpu-browser.min.js`` (gpu.js' browser bundle, ``dist/gpu-browser.min.js`` of its npm package
or of github.com/gpujs/gpu.js) from ``~/.cache/shadergpgpu/js/`` or ``--libs DIR``; without
them it says so and exits 2 (as it does without Chromium). Get them with an npm install
(``npm pack @tensorflow/tfjs gpu.js`` and copy the two files out of the tarballs' ``dist/``)
or from a CDN (jsdelivr: ``npm/@tensorflow/tfjs@4.22.0/dist/tf.min.js``,
``npm/gpu.js@2.16.0/dist/gpu-browser.min.js``). Measured with tfjs 4.22.0 and gpu.js 2.16.0.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.algorithms import backprop as bp  # noqa: E402
from shadergpgpu.algorithms import blur  # noqa: E402
from shadergpgpu.algorithms.sgemm import sgemm  # noqa: E402
from shadergpgpu.frontends import browser  # noqa: E402
from shadergpgpu.analysis.reports.common import markdown_table, write_outputs  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_LIBS = Path.home() / ".cache" / "shadergpgpu" / "js"
LIB_FILES = {"tfjs": "tf.min.js", "gpujs": "gpu-browser.min.js"}
LIB_NAMES = {"tfjs": "tfjs", "gpujs": "gpu.js"}
WORKLOADS = ("matmul", "mlp", "blur")
#: issue 20, item 6: the leads measured 2026-11-22 (ranges over sizes and both libraries)
ISSUE = {"matmul": "1.9-3.1x", "mlp": "5.9-11.8x", "blur": "1.18x"}
MATMUL_NS = (256, 512, 1024)
MLP_CASES = (((2, 64, 1), 1024), ((64, 256, 10), 4096))
BLUR_SHAPE, BLUR_SIGMA = (1024, 1024), 4.0
#: small sizes for the check-only run of tests/frontends/test_js_leads.py (odd shapes on purpose)
SMALL = {"matmul": (33, 64), "mlp": (((2, 8, 1), 64), ((5, 16, 3), 100)), "blur": (40, 53)}
TOL = 1e-4
UPDATE_TOL = 1e-2
RULES = {"quick": {"warmup": 2, "repeats": 3, "min_batch_s": 0.1, "max_batch": 200},
         "full": {"warmup": 2, "repeats": 7, "min_batch_s": 0.5, "max_batch": 1000}}

MISSING = """the tfjs and gpu.js browser bundles are not in {dir} (they are not part of the
repository; this harness only reads them). Missing: {missing}. Put there:
  tf.min.js           the @tensorflow/tfjs browser bundle (dist/tf.min.js of the npm package)
  gpu-browser.min.js  gpu.js' browser bundle (dist/gpu-browser.min.js of the npm package or
                      of github.com/gpujs/gpu.js)
for instance `npm pack @tensorflow/tfjs gpu.js` and copy the two files out of the tarballs'
dist/ folders, or download them from a CDN (jsdelivr: npm/@tensorflow/tfjs@4.22.0/dist/tf.min.js,
npm/gpu.js@2.16.0/dist/gpu-browser.min.js); or pass --libs DIR."""


# ---- the timing rule (leads.js' timeBatches is the same) ---------------------------------------
def time_batches(call, sync, rule: dict | None) -> dict:
    """``warmup`` calls and a sync; one timed call + sync sizes the batch; ``repeats`` batches
    each timed to the end of the sync after its last call: ms per call, fastest and median.
    A rule of None times nothing (the check-only run of the tests)."""
    if rule is None:
        return {}
    for _ in range(rule["warmup"]):
        call()
    sync()
    t0 = time.perf_counter()
    call()
    sync()
    one = time.perf_counter() - t0
    batch = max(1, min(rule["max_batch"], int(np.ceil(rule["min_batch_s"] / max(one, 1e-6)))))
    times = []
    for _ in range(rule["repeats"]):
        t0 = time.perf_counter()
        for _ in range(batch):
            call()
        sync()
        times.append((time.perf_counter() - t0) / batch * 1e3)
    s = sorted(times)
    return {"min_ms": s[0], "median_ms": s[len(s) // 2], "batch": batch,
            "repeats": rule["repeats"], "times_ms": times}


# ---- the cases: data, float64 references, and the page's view of them ------------------------
class Blob:
    """float32 arrays concatenated into one file for the page; ``add`` gives [offset, length]."""

    def __init__(self):
        self.parts, self.n = [], 0

    def add(self, a) -> list:
        a = np.ascontiguousarray(a, dtype="<f4").ravel()
        self.parts.append(a)
        self.n += a.size
        return [self.n - a.size, a.size]

    def bytes(self) -> bytes:
        return np.concatenate(self.parts).tobytes() if self.parts else b""


def blur_taps(sigma: float) -> np.ndarray:
    """The exact method's taps: scipy's sampled Gaussian, radius int(4 sigma + 0.5), sum 1."""
    r = blur.exact_radius(sigma)
    x = np.arange(-r, r + 1, dtype=np.float64)
    w = np.exp(-0.5 * (x / sigma) ** 2)
    return w / w.sum()


def make_cases(work: str, blob: Blob, small: bool = False) -> list[dict]:
    """The cases of a workload: ``page`` (what the page gets), ``data`` (float32 arrays for our
    side), ``ref`` (float64 reference of one call); ``small``: the sizes of :data:`SMALL`."""
    cases = []
    if work == "matmul":
        for n in SMALL["matmul"] if small else MATMUL_NS:
            rng = np.random.default_rng(n)
            A = rng.uniform(-1, 1, (n, n))
            # A / its spectral radius: the chained calls (C <- A C) neither overflow nor vanish
            A = (A / np.max(np.abs(np.linalg.eigvals(A)))).astype(np.float32)
            B = rng.uniform(-1, 1, (n, n)).astype(np.float32)
            cases.append({"name": f"n={n}", "page": {"name": f"n={n}", "n": n, "A": blob.add(A),
                                                     "B": blob.add(B)},
                          "data": (A, B), "ref": A.astype(np.float64) @ B.astype(np.float64)})
    elif work == "mlp":
        for sizes, n in SMALL["mlp"] if small else MLP_CASES:
            rng = np.random.default_rng(n)
            X = rng.uniform(0, 1, (n, sizes[0])).astype(np.float32)
            T = rng.uniform(0, 1, (n, sizes[-1])).astype(np.float32)
            W0 = [w.astype(np.float32) for w in bp.init_weights(list(sizes), 0)]
            lr = 0.5 / n
            ref = bp.numpy_step([w.astype(np.float64) for w in W0], X.astype(np.float64),
                                T.astype(np.float64), lr)[0]
            name = f"{'-'.join(map(str, sizes))} N={n}"
            cases.append({"name": name, "page": {"name": name, "sizes": list(sizes), "N": n,
                                                 "lr": lr, "X": blob.add(X), "T": blob.add(T),
                                                 "W": [blob.add(w) for w in W0]},
                          "data": (list(sizes), X, T, W0, lr), "ref": (ref, W0)})
    elif work == "blur":
        from scipy.ndimage import gaussian_filter
        h, w = SMALL["blur"] if small else BLUR_SHAPE
        img = np.random.default_rng(h).random((h, w)).astype(np.float32)
        taps = blur_taps(BLUR_SIGMA)
        ref = gaussian_filter(img.astype(np.float64), BLUR_SIGMA, mode="constant", truncate=4.0)
        name = f"{h}x{w} sigma {BLUR_SIGMA:g}"
        cases.append({"name": name, "page": {"name": name, "h": h, "w": w, "K": taps.size,
                                             "img": blob.add(img), "taps": blob.add(taps)},
                      "data": img, "ref": ref})
    return cases


def error(work: str, got, ref) -> tuple[float, str]:
    """(relative error, text) of one call's result against the float64 reference; the MLP's
    is the larger of the weights' error / 1e-4 and the update's error / 1e-2, times 1e-4."""
    if work == "mlp":
        ref, W0 = ref
        if not isinstance(got, list):          # the page's flat (b; W) per layer
            flat, got, off = np.asarray(got, np.float64), [], 0
            for r in ref:
                got.append(flat[off:off + r.size].reshape(r.shape))
                off += r.size
        w_err = (max(float(np.max(np.abs(g - r))) for g, r in zip(got, ref))
                 / max(float(np.max(np.abs(r))) for r in ref))
        u_err = (max(float(np.max(np.abs((g - w0) - (r - w0)))) for g, r, w0 in zip(got, ref, W0))
                 / max(float(np.max(np.abs(r - w0))) for r, w0 in zip(ref, W0)))
        return max(w_err, u_err * TOL / UPDATE_TOL), f"weights {w_err:.1e}, update {u_err:.1e}"
    got = np.asarray(got, np.float64).reshape(ref.shape)
    e = float(np.max(np.abs(got - ref))) / float(np.max(np.abs(ref)))
    return e, f"{e:.1e}"


# ---- shadergpgpu -------------------------------------------------------------------------------
def run_ours(dev, work: str, cases: list[dict], rule: dict | None) -> list[dict]:
    """shadergpgpu's rows: one call checked, then timed by ``rule`` (None: not timed); calls
    chained as on the other sides (matmul: B, blur: the image is the previous result)."""
    out = []
    for c in cases:
        if work == "mlp":
            sizes, X, T, W0, lr = c["data"]
            net = bp.BackpropNet(dev, sizes, X, T, weights=W0, lr=lr, schedule="fused")
            net.step()
            got = net.weights()
            t = time_batches(net.step, dev.finish, rule)
            net.release()
        else:
            if work == "matmul":
                A, first = (dev.array(x) for x in c["data"])
                fn = lambda y: sgemm(A, y, device=dev)  # noqa: E731
            else:
                A, first = None, dev.array(c["data"])
                fn = lambda y: blur.gaussian_blur(y, BLUR_SIGMA, method="exact",  # noqa: E731
                                                  border="constant", device=dev)
            held = {"y": first}

            def call():
                prev = held["y"]
                held["y"] = fn(prev)
                if prev is not first:
                    prev.release()
            call()
            got = held["y"].get()
            t = time_batches(call, dev.finish, rule)
            for x in (A, first, held["y"]):
                if x is not None:
                    x.release()
        err, text = error(work, got, c["ref"])
        out.append({"case": c["name"], "variant": {"matmul": "sgemm", "mlp": "fused",
                                                   "blur": "exact"}[work],
                    "err": err, "err_text": text, **t})
    return out


# ---- the browser sides -------------------------------------------------------------------------
def run_js(lib: str, libs: Path, work: str, cases: list[dict], blob: Blob, rule: dict | None,
           timeout: float) -> tuple[dict, list[dict]]:
    """A library's page: (what the page says of the library, rows: one call checked, then
    timed by ``rule``, None: not timed)."""
    cfg = {"work": work, "rule": rule, "data": "/data.bin", "cases": [c["page"] for c in cases]}
    files = {"/leads.html": HERE / "js" / "leads.html", "/leads.js": HERE / "js" / "leads.js",
             f"/lib/{LIB_FILES[lib]}": libs / LIB_FILES[lib],
             "/cfg.json": json.dumps(cfg).encode(), "/data.bin": blob.bytes()}
    meta, arrays = browser.run_page("leads.html", files, f"lib={lib}&cfg=/cfg.json", timeout)
    by = {c["name"]: c for c in cases}
    rows = []
    for r, got in zip(meta["results"], arrays):
        err, text = error(work, got, by[r["case"]]["ref"])
        if "webgl2_kernels" in r:
            text += f" ({r['webgl2_kernels']} kernels checked WebGL2)"
        rows.append({**r, "err": err, "err_text": text})
    return meta["info"], rows


def file_version(path: Path) -> str:
    head = path.read_bytes()[:4000].decode(errors="replace")
    m = re.search(r"@version\s+(\S+)", head)
    return m.group(1) if m else "?"


def chromium_version() -> str:
    try:
        out = subprocess.run([browser.find_chromium(), "--version"], capture_output=True,
                             text=True, timeout=60).stdout
        return out.strip().splitlines()[-1] if out.strip() else "?"
    except (OSError, subprocess.SubprocessError):
        return "?"


def best(rows: list[dict], case: str) -> dict | None:
    """The fastest variant of a side for a case (tfjs' blur has two)."""
    rs = [r for r in rows if r["case"] == case]
    return min(rs, key=lambda r: r["min_ms"]) if rs else None


def merge_rounds(rounds: list[list[dict]]) -> list[dict]:
    """One row per (case, variant) over the rounds: the fastest batch of any round, the median
    of every round's batches, the largest check error."""
    merged: dict = {}
    for rows in rounds:
        for r in rows:
            key = (r["case"], r["variant"])
            m = merged.get(key)
            if m is None:
                merged[key] = {**r, "times_ms": list(r["times_ms"]), "rounds": 1}
                continue
            m["times_ms"] += r["times_ms"]
            m["rounds"] += 1
            m["min_ms"] = min(m["min_ms"], r["min_ms"])
            if r["err"] > m["err"]:
                m["err"], m["err_text"] = r["err"], r["err_text"]
    for m in merged.values():
        t = sorted(m["times_ms"])
        m["median_ms"] = t[len(t) // 2]
        m["repeats"] = len(t)
    return list(merged.values())


def measure_workload(dev, work, libs, rule, rounds, timeout, verdicts, meta):
    """The cases of a workload and every side's rows, the sides taking turns in each round
    (shadergpgpu, tfjs, gpu.js), so that a change of load on a shared machine reaches them all."""
    blob = Blob()
    cases = make_cases(work, blob)
    got = {"shadergpgpu": [], "tfjs": [], "gpujs": []}
    for k in range(rounds):
        if rounds > 1:
            print(f"  {work}: round {k + 1} of {rounds}", flush=True)
        got["shadergpgpu"].append(run_ours(dev, work, cases, rule))
        for lib in ("tfjs", "gpujs"):
            try:
                info, rows = run_js(lib, libs, work, cases, blob, rule, timeout)
                meta["pages"][lib] = info
                got[lib].append(rows)
            except (browser.BrowserError, KeyError) as e:
                verdicts.append(f"FAILED: {work} in {LIB_NAMES[lib]}: {e}")
                print(f"  FAILED: {work} in {LIB_NAMES[lib]}: {e}", flush=True)
    return cases, {side: merge_rounds(rs) for side, rs in got.items()}


def lead_table(work: str, cases: list[dict], sides: dict, verdicts: list) -> list[dict]:
    """One row per case: each side's ms per call (fastest / median; a library's fastest
    variant), the leads (their fastest / ours, and by medians), the issue's figure; a lead
    below 1.0 adds a MISSED verdict."""
    table = []
    for c in cases:
        ours = best(sides["shadergpgpu"], c["name"])
        row = {"case": c["name"],
               "shadergpgpu ms": f"{ours['min_ms']:.3f} / {ours['median_ms']:.3f}"}
        for lib in ("tfjs", "gpujs"):
            th = best(sides[lib], c["name"])
            nm = LIB_NAMES[lib]
            if th is None:
                row[f"{nm} ms"], row[f"lead {nm}"] = "failed", "-"
                continue
            lead = th["min_ms"] / ours["min_ms"]
            lead_med = th["median_ms"] / ours["median_ms"]
            several = sum(r["case"] == c["name"] for r in sides[lib]) > 1
            var = f" ({th['variant']})" if several else ""
            row[f"{nm} ms"] = f"{th['min_ms']:.3f} / {th['median_ms']:.3f}{var}"
            row[f"lead {nm}"] = f"{lead:.2f}x (median {lead_med:.2f}x)"
            if lead < 1.0:
                verdicts.append(f"MISSED: {work} {c['name']}: {nm} {th['min_ms']:.3f} ms < "
                                f"ours {ours['min_ms']:.3f} ms (lead {lead:.3f}x < 1.0)")
        row["2026-11-22"] = ISSUE[work]
        table.append(row)
    return table


TITLES = {"matmul": "matmul n x n", "mlp": "fused MLP training step (sigmoid, plain SGD)",
          "blur": "exact Gaussian blur 1,024^2, sigma 4, radius 16, border constant"}


def check_rows(work: str, sides: dict, verdicts: list) -> list[dict]:
    """The rows of the output files; a check above the bound adds a MISMATCH verdict."""
    rows_out = []
    for side, rows in sides.items():
        for r in rows:
            ok = r["err"] <= TOL
            if not ok:
                verdicts.append(f"MISMATCH: {work} {r['case']} {side} {r['variant']}: "
                                f"error {r['err_text']} (bound {TOL:g} of max |ref|)")
            rows_out.append({"workload": work, "side": side, "case": r["case"],
                             "variant": r["variant"], "min_ms": r["min_ms"],
                             "median_ms": r["median_ms"], "batch": r["batch"],
                             "repeats": r["repeats"], "err": r["err"], "check_ok": ok})
    return rows_out


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, shorter batches")
    ap.add_argument("--out", default=None, help="write js_leads.json/.csv/.md under DIR")
    ap.add_argument("--libs", default=str(DEFAULT_LIBS),
                    help="folder holding tf.min.js and gpu-browser.min.js (default: %(default)s)")
    ap.add_argument("--only", default=",".join(WORKLOADS), help="workloads, comma-separated")
    ap.add_argument("--rounds", type=int, default=None,
                    help="rounds of all three sides per workload (default: 1 quick, 2 full)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per browser page")
    a = ap.parse_args(argv)
    a.works = [w.strip() for w in a.only.split(",") if w.strip()]
    bad = [w for w in a.works if w not in WORKLOADS]
    if bad:
        ap.error(f"unknown workload(s) {bad}; choose from {', '.join(WORKLOADS)}")
    return a


def main(argv=None) -> int:
    a = parse(argv)
    libs = Path(a.libs).expanduser()
    missing = [f for f in LIB_FILES.values() if not (libs / f).is_file()]
    if missing:
        print("ERROR: " + MISSING.format(dir=libs, missing=", ".join(missing)), file=sys.stderr)
        return 2
    if browser.find_chromium() is None:
        print("ERROR: no Chromium found to run the tfjs and gpu.js pages (install Debian's "
              "'chromium' package, or set SHADERGPGPU_CHROMIUM to a Chromium binary)",
              file=sys.stderr)
        return 2
    rule = RULES["quick" if a.quick else "full"]
    rounds = max(1, a.rounds or (1 if a.quick else 2))
    dev = sg.Device()
    meta = {"date": time.strftime("%Y-%m-%d"), "renderer": dev.caps.renderer,
            "gl_version": dev.caps.version, "backend": dev.caps.backend,
            "chromium": chromium_version(),
            "gpujs_file_version": file_version(libs / LIB_FILES["gpujs"]), "libs": str(libs),
            "rule": rule, "rounds": rounds, "quick": a.quick, "pages": {}}
    head = [f"shadergpgpu: {dev.caps.renderer}, GL {dev.caps.version} [{dev.caps.backend}] | "
            f"{meta['chromium']} | {meta['date']}",
            f"timing: {rule['warmup']} warm-up calls, then the fastest / median of "
            f"{rule['repeats']} batches of >= {rule['min_batch_s']:g} s (sized from one call) "
            f"in each of {rounds} round(s) taken in turn by the three sides, each batch ending "
            "with a sync (ours dev.finish(); tfjs, gpu.js a 1-element readback); inputs "
            "resident on the device on every side, no host upload per call"]
    print("\n".join(head), flush=True)
    verdicts, rows_out, md = [], [], []
    for work in a.works:
        cases, sides = measure_workload(dev, work, libs, rule, rounds, a.timeout, verdicts,
                                        meta)
        rows_out += check_rows(work, sides, verdicts)
        text = markdown_table(lead_table(work, cases, sides, verdicts))
        errs = "; ".join(f"{s} {r['case']} {r['variant']} {r['err_text']}"
                         for s, rows in sides.items() for r in rows)
        part = (f"{TITLES[work]}: ms per call, fastest / median; lead = their fastest / ours "
                f"(2026-11-22: issue 20 item 6, a range over sizes and both libraries)\n\n"
                f"{text}\nchecks vs float64 (largest error / max |ref|): {errs}\n")
        print("\n" + part, end="", flush=True)
        md.append(part)
    libs_line = []
    for lib, info in meta["pages"].items():
        libs_line.append(f"{LIB_NAMES[lib]}: " + ", ".join(f"{k} {v}" for k, v in info.items()))
    libs_line.append(f"gpu.js file header: version {meta['gpujs_file_version']}")
    print("\n" + "\n".join(libs_line))
    for v in verdicts:
        print(f"  {v}")
    if not verdicts:
        print("all sides match float64; every lead >= 1.0")
    if a.out:
        out = write_outputs(a.out, "js_leads", rows_out, meta)
        (out / "js_leads.md").write_text(
            "# Leads over tfjs-webgl and gpu.js\n\n" + "\n\n".join(head) + "\n\n"
            + "\n".join(md) + "\n" + "\n\n".join(libs_line) + "\n\n"
            + "\n\n".join(verdicts or ["all sides match float64; every lead >= 1.0"]) + "\n")
        print(f"wrote {out}/js_leads.json, .csv, .md")
    return 1 if verdicts else 0


if __name__ == "__main__":
    sys.exit(main())
