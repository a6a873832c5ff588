"""The cost model on configurations drawn at random (``benchmarks/model.py --random K``): the
draws are reproducible from their seed and cover every algorithm's space, every drawn
configuration runs and is predicted, and the distribution and its bound are computed as
documented. The timed run itself is the benchmark's (``benchmarks/model.py --random``), not a
test's."""
import math

import pytest

from shadergpgpu.analysis import cost_model as M
from shadergpgpu.analysis.reports import model_cases as MC
from shadergpgpu.analysis.reports import model_random as MR


def test_draw_is_reproducible_and_covers_every_space():
    a = MR.draw(3, 123, quick=True)
    b = MR.draw(3, 123, quick=True)
    assert [(c.algo, c.label) for c in a] == [(c.algo, c.label) for c in b]
    assert len(a) == 3 * len(MR.SPACES)
    other = MR.draw(3, 124, quick=True)
    assert [c.label for c in a] != [c.label for c in other]
    assert {"backprop", "sgemm", "blur", "svm", "rbf", "sammon", "kmeans"} <= {c.algo for c in a}
    assert MR.draw(2, 5, algorithms={"sgemm"}) and \
        {c.algo for c in MR.draw(2, 5, algorithms={"sgemm"})} == {"sgemm"}


def test_drawn_configurations_run_and_are_predicted(dev):
    speeds = M.Speeds.from_dict({"pass_overhead_us": 5.0, "alu_gflops": 10.0,
                                 "texel_rate_gtexels": 1.0, "write_gbs": 10.0}, "test")
    for case in MR.draw(1, 2026, quick=True):
        snap = MC.count(case, dev)
        assert sum(s["passes"] for s in snap.values()) > 0, case
        assert M.total(M.predict(snap, speeds)) > 0, case


def test_distribution_and_bound():
    rows = [{"algorithm": "a", "measured / predicted": r} for r in (0.5, 1.0, 1.0, 2.0, 4.0)]
    rows.append({"algorithm": "b", "measured / predicted": 1.1})
    dist = MR.distribution(rows)
    assert [d["algorithm"] for d in dist] == ["a", "b", "overall"]
    a = dist[0]
    assert a["n"] == 5 and a["median"] == 1.0 and a["p25"] == 1.0 and a["p75"] == 2.0
    assert a["worst"] == 4.0 and a["within 2x"] == pytest.approx(0.8)
    assert a["median |log|"] == pytest.approx(2.0)
    overall = dist[-1]
    assert overall["n"] == 6
    assert MR.verdict(overall) == []          # median |log| x1.48, 80th percentile x2.00
    half = MR.summarize([1.0, 2.0, 2.0, 0.5, 1.0])                # median |log| x2
    assert [m for m in MR.verdict(half) if "median" in m] and \
        not [m for m in MR.verdict(half) if "80th" in m]
    good = MR.summarize([1.0, 1.1, 0.9, 1.2, 0.8])
    assert MR.verdict(good) == []
    bad = MR.summarize([1.0, 3.0, 0.3, 4.0, 1.0])
    assert any("80th" in m for m in MR.verdict(bad))
    assert MR.verdict({"n": 0})
    worst = MR.worst_by_algorithm(rows)
    assert [(w["algorithm"], w["measured / predicted"]) for w in worst] == [("a", 4.0),
                                                                           ("b", 1.1)]
    assert MR._quantile([1.0, 2.0, 3.0], 0.5) == 2.0
    assert MR._quantile([1.0, 3.0], 0.25) == pytest.approx(1.5)
    assert math.isclose(MR.BOUND["p80_abs_log"], math.log(2.0))


def test_the_calibration_cases_fit_the_arg_reductions_index_range():
    """Every arg-reduction calibration case (software and GPU sizes) stays below the 2**24
    elements whose indices float32 carries exactly: a case beyond would be refused at run
    time and leave argmax uncalibrated on that device."""
    from shadergpgpu.analysis.reports.calibrate_cases import calibration_cases
    for software in (True, False):
        for c in calibration_cases(software):
            if c.algo == "reduce" and c.params.get("op") in ("argmax", "argmin"):
                assert c.params["rows"] * c.params["cols"] < 2 ** 24, c
