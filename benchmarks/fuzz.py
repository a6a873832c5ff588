"""Long runs of the call-sequence test (tests/ops/test_sequences.py) in parallel processes.

    python benchmarks/fuzz.py --examples 20000 --procs 8 [--chunk 250] [--steps 30]
                              [--seed 1000] [--budget-s 3000] [--log-dir out/fuzz]

Each chunk is one pytest run of ``--chunk`` examples with its own hypothesis seed
(``SG_FUZZ_SEED``); ``--procs`` chunks run at once. Prints one line per chunk and the total of
examples run; a failing chunk prints MISMATCH with its log and the script exits non-zero.
``--budget-s`` stops starting new chunks after that many seconds (the count says what ran).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_chunk(seed: int, examples: int, steps: int, log_dir: Path, deadline: float):
    if time.time() > deadline:
        return seed, None, 0.0, "skipped (budget)"
    env = dict(os.environ, SG_FUZZ_EXAMPLES=str(examples), SG_FUZZ_SEED=str(seed),
               SG_FUZZ_STEPS=str(steps), PYTHONUNBUFFERED="1")
    log = log_dir / f"chunk_{seed}.log"
    t = time.time()
    with open(log, "w") as f:
        rc = subprocess.call([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                              str(ROOT / "tests" / "ops" / "test_sequences.py")],
                             stdout=f, stderr=subprocess.STDOUT, cwd=ROOT, env=env)
    tail = log.read_text().strip().splitlines()[-1:] or [""]
    return seed, rc, time.time() - t, tail[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--procs", type=int, default=max(1, (os.cpu_count() or 2) // 2))
    ap.add_argument("--chunk", type=int, default=250)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--budget-s", type=float, default=float("inf"))
    ap.add_argument("--log-dir", default="out/fuzz")
    a = ap.parse_args(argv)
    log_dir = Path(a.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    n_chunks = -(-a.examples // a.chunk)
    deadline = time.time() + a.budget_s
    ran, failed = 0, []
    t0 = time.time()
    with ThreadPoolExecutor(a.procs) as pool:
        futs = [pool.submit(run_chunk, a.seed + i, a.chunk, a.steps, log_dir, deadline)
                for i in range(n_chunks)]
        for f in futs:
            seed, rc, secs, tail = f.result()
            if rc is None:
                continue
            if rc == 0:
                ran += a.chunk
            else:
                failed.append(seed)
                print(f"MISMATCH seed={seed}: see {log_dir / f'chunk_{seed}.log'}", flush=True)
            print(f"seed={seed} examples={a.chunk} steps={a.steps} rc={rc} {secs:.0f} s: {tail}",
                  flush=True)
    print(f"total: {ran} examples passed, {len(failed)} chunks failed {failed}, "
          f"{time.time() - t0:.0f} s, {a.procs} processes", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
