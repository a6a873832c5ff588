"""Plan on a laptop, run on the server: predict the GPU's times from this machine.

    # on the GPU:   shadergpgpu calibrate; python benchmarks/model.py --gpu-sizes --out DIR
    # here:         python benchmarks/model_cross.py --profile GPU.json --record DIR/model_record.json

For each of ``benchmarks/model.py``'s GPU configurations that the record holds, the passes and
work are counted HERE (this device, under the GPU profile's limits) and priced with the GPU
profile's calibrated speeds; the table holds the prediction against the time the GPU measured
(the record), with MISSED beyond +-30 % and the median |log(measured / predicted)|. Where this
device runs other kernels than the GPU did (a kernel chosen by device), the line says so: those
kernels have no calibrated efficiency in the GPU's profile.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import shadergpgpu as sg  # noqa: E402
from shadergpgpu.analysis import cost_model as M  # noqa: E402
from shadergpgpu.analysis.reports import model_cases as MC  # noqa: E402
from shadergpgpu.analysis.reports.common import markdown_table  # noqa: E402


def _kernels(snap: dict) -> set:
    return {k for s in snap.values() for k in (s.get("kernels") or {})}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profile", required=True, help="the GPU's calibrated profile (.json)")
    p.add_argument("--record", required=True, help="model_record.json of the GPU's run")
    p.add_argument("--cases", default="", help="comma-separated substrings selecting cases")
    p.add_argument("--out", default="", help="also write the rows as JSON here")
    a = p.parse_args(argv)
    prof = json.loads(Path(a.profile).read_text())
    speeds = M.Speeds.from_dict(prof["speeds"], prof.get("description", ""))
    record = json.loads(Path(a.record).read_text())
    measured = {c["case"]: c for c in record["cases"]}
    dev = sg.Device(profile=a.profile)
    print(f"# predicting {prof.get('description', a.profile)}\n# from {dev.caps.renderer}\n")
    rows = []
    for case in MC.default_cases(software=False):
        name = f"{case.algo} {case.label}"
        if name not in measured or (a.cases and not any(s in name for s in
                                                          a.cases.split(","))):
            continue
        # counted as the GPU's run counted it: a call timed in a run of calls (no wait after
        # it) or alone (one finish after it)
        snap = MC.count(case, dev, finish=False)
        if MC.finishes(measured[name]["snapshot"]) > MC.finishes(snap):
            snap = MC.count(case, dev)
        pred = M.predict(snap, speeds)
        t = M.total(pred)
        wall = measured[name]["wall_s"]
        other = sorted(_kernels(snap) - _kernels(measured[name]["snapshot"]))
        rows.append({"case": name, "GPU measured ms": wall * 1e3, "predicted here ms": t * 1e3,
                     "measured / predicted": wall / t if t else None,
                     "verdict": M.verdict(wall, t), "bound": M.blamed(pred),
                     "kernels the GPU did not run": ", ".join(other)})
        r = rows[-1]
        print(f"{name:44} {r['GPU measured ms']:9.3f} {r['predicted here ms']:9.3f} "
              f"x{r['measured / predicted']:.2f} {r['verdict']}", flush=True)
    dev.release()
    print()
    print(markdown_table(rows, floatfmt=".3g"))
    logs = [abs(math.log(r["measured / predicted"])) for r in rows if r["measured / predicted"]]
    ok = sum(r["verdict"] == "ok" for r in rows)
    med = statistics.median(logs) if logs else float("nan")
    print(f"\n{ok} of {len(rows)} within +-30 %; median |log(measured / predicted)| = "
          f"{med:.3f} (x{math.exp(med):.2f}).")
    for r in rows:
        if r["verdict"] != "ok":
            print(f"MISSED: {r['case']}: x{r['measured / predicted']:.2f}"
                  + (f" (kernels chosen here, not on the GPU: {r['kernels the GPU did not run']})"
                     if r["kernels the GPU did not run"] else ""))
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1))
    return 0 if ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
