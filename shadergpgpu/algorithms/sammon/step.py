"""The step control of a fit: eq. 4's mu normalised into the adaptive fit's first step
(:func:`start_step`), the bold-driver rule (:class:`StepRule`, used by one device and by the
cluster driver), the floor of dm in the update (:data:`DM_FLOOR`) and where the stress that
the rule judges is summed (:func:`stress_on_host`)."""
from __future__ import annotations

from .tuning import SammonTuning

#: RMS move of the first adaptive step, as a fraction of the embedding's RMS spread.
STEP_MIN, STEP_MAX = 1e-3, 5e-2
GROW, SHRINK = 1.2, 0.5
#: Until the first rejected candidate the step doubles (a warm-up: the normalised first step is
#: deliberately small), then it grows by GROW.
WARMUP_GROW = 2.0


def start_step(mu: float, rms_g: float, spread: float):
    """The adaptive fit's first step: the source's ``mu`` scaled so that the first move is
    between STEP_MIN and STEP_MAX of the start positions' spread (RMS gradient ``rms_g``);
    ``1 / rms_g`` when every start position is equal; None for a zero gradient (no move)."""
    if rms_g > 0 and spread > 0:
        ratio = mu * rms_g / spread
        return mu * min(max(ratio, STEP_MIN), STEP_MAX) / ratio
    if rms_g == 0:
        return None
    return 1.0 / max(rms_g, 1e-30)


class StepRule:
    """The adaptive step (one device or several): try ``trial`` (the step grown by
    WARMUP_GROW until the first rejection, GROW after), keep it when the stress did not
    rise, else halve the step (SHRINK); stop on a relative decrease below ``tol`` or after
    more than 30 rejections in a row."""

    def __init__(self, step: float, tol):
        self.step, self.tol = float(step), tol
        self.rejected = self.streak = 0

    @property
    def trial(self) -> float:
        return self.step * (GROW if self.rejected else WARMUP_GROW)

    def judge(self, e_a: float, e_b: float) -> tuple[bool, bool]:
        """(accepted, stop) for a candidate of stress ``e_b`` against the current ``e_a``."""
        if e_b <= e_a:
            rel = (e_a - e_b) / e_a if e_a > 0 else 0.0
            self.step = self.trial
            self.streak = 0
            return True, self.tol is not None and rel < self.tol
        self.rejected += 1
        self.streak += 1
        self.step *= SHRINK
        return False, self.streak > 30


#: dm_ij is clamped from below by DM_FLOOR * mean(dn) in the update (coinciding targets give a
#: zero term, not 0 * inf).
DM_FLOOR = 1e-6


def stress_on_host(dev) -> bool:
    """Whether fits on ``dev`` sum the stress on the host (its
    :attr:`SammonTuning.stress_on_host <.tuning.SammonTuning>`: by default where kernels are
    chosen for a GPU)."""
    return bool(dev.tuning(SammonTuning).stress_on_host)
