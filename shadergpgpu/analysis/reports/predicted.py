"""The cost model's prediction beside a report's measured times: :func:`predicted_columns`
(the columns for a counter snapshot), :class:`Predictor` (the columns of one timed call),
:func:`model_summary` (the closing sentence), :func:`bound_of` (the term a prediction blames)
and the columns' names and explanation (:data:`MODEL_COLUMNS`, :data:`MODEL_SENTENCE`)."""
from __future__ import annotations

from .. import cost_model as M
from .model_cases import snapshot_of_call


#: the columns :meth:`Predictor.of` adds to a timed row (``model error`` only where it failed)
MODEL_COLUMNS = ("predicted ms", "measured / predicted", "bound", "model")

MODEL_SENTENCE = (
    "**predicted ms**: the time the cost model of `docs/model.md` predicts for the pass counter's "
    "snapshot of one timed call (its passes and declared work) from this device's speeds "
    "measured by `shadergpgpu calibrate`; **bound**: the term the model blames (host, pass "
    "overhead, ALU, fetch, write, ...); **measured / predicted**: the row's measured time (the "
    "median of its repeats, or its one timed run) over the prediction; **model**: ok within "
    "+-30 % of the measured time, MISSED beyond (n/a: no "
    "prediction, **model error** says why).")


def predicted_columns(dev, snapshot: dict, measured_s: float | None = None,
                      speeds: M.Speeds | None = None) -> dict:
    """Columns any report can add to a timing row: the model's prediction for a counter
    ``snapshot`` of one call on ``dev`` (its measured speeds), beside the ``measured_s``."""
    speeds = speeds or M.measured_speeds(dev)
    pred = M.predict(snapshot, speeds)
    p = M.total(pred)
    row = {"predicted ms": p * 1e3, "bound": bound_of(pred)}
    if measured_s:
        row["measured / predicted"] = measured_s / p if p else None
        row["model"] = M.verdict(measured_s, p)
    return row


def bound_of(pred: dict) -> str:
    """What limits a predicted run: the term the model blames (:func:`model.blamed`)."""
    k = M.blamed(pred)
    n = sum(q["passes"] for q in pred.values())
    return f"{k}-bound ({n} passes)" if k in ("overhead", "passes") else f"{k}-bound"


def _error_columns(where: str, e: BaseException) -> dict:
    return {"model": "n/a", "model error": f"{where}: {type(e).__name__}: {e}"[:300]}


class Predictor:
    """The cost model's prediction beside a report's measured times, on one device::

        pred = Predictor(dev)                  # the speeds, read once per report
        row.update(pred.of(call, measured_s))  # predicted ms, bound, measured / predicted, model

    The speeds come from ``analysis.cost_model.measured_speeds`` (the calibration cached in
    ``~/.cache/shadergpgpu/``, measured on first use); :meth:`of` takes the counter snapshot of
    ONE call of ``call`` and returns :func:`predicted_columns` for it. Where the model,
    its calibration or the call raises, the row gets ``model = "n/a"`` and ``model error`` (the
    reason) instead, and the report goes on.
    """

    def __init__(self, dev):
        self.dev = dev
        self.speeds, self.error = None, None
        try:
            self.speeds = M.measured_speeds(dev)
        except Exception as e:  # noqa: BLE001 - a report without predictions, not a crash
            self.error = _error_columns("speeds", e)

    def snapshot(self, call) -> dict:
        """The pass counter's snapshot of one ``call`` (waiting for the device)."""
        return snapshot_of_call(call, self.dev, True)

    def columns(self, snap: dict, measured_s: float | None = None) -> dict:
        """The model's columns for a counter snapshot of one call that took ``measured_s``."""
        if self.speeds is None:
            return dict(self.error)
        try:
            return predicted_columns(self.dev, snap, measured_s, speeds=self.speeds)
        except Exception as e:  # noqa: BLE001
            return _error_columns("model", e)

    def of(self, call, measured_s: float | None = None) -> dict:
        """Snapshot one more ``call`` and predict it (:meth:`columns`)."""
        if self.speeds is None:
            return dict(self.error)
        try:
            snap = self.snapshot(call)
        except Exception as e:  # noqa: BLE001
            return _error_columns("counting the call", e)
        return self.columns(snap, measured_s)


def model_summary(items, limit: int = 8) -> str:
    """One sentence for a report's closing: on how many timed rows the model is within +-30 %,
    and where it is MISSED (measured / predicted and the term it blames). ``items``: pairs
    (label of the row, the row's model columns)."""
    items = [(label, cols) for label, cols in items if cols]
    if not items:
        return "The cost model predicted no timed row here."
    ok = [lb for lb, c in items if c.get("model") == "ok"]
    missed = [(lb, c) for lb, c in items if c.get("model") == "MISSED"]
    none = [(lb, c) for lb, c in items if c.get("model") not in ("ok", "MISSED")]
    s = f"The cost model is within +-30 % of the measured time on {len(ok)} of {len(items)} " \
        "timed rows"
    if missed:
        shown = [f"{lb} ({_ratio(c)}, {c.get('bound', '?')})" for lb, c in missed[:limit]]
        more = f" and {len(missed) - limit} more" if len(missed) > limit else ""
        s += "; MISSED (measured / predicted, the term it blames): " + "; ".join(shown) + more
    if none:
        why = none[0][1].get("model error") or "no measured time"
        s += f"; no prediction for {len(none)} row(s) (first: {none[0][0]}: {why})"
    return s + "."


def _ratio(cols: dict) -> str:
    r = cols.get("measured / predicted")
    return f"{r:.2g}x" if isinstance(r, (int, float)) else "?"
