"""ENTROPY_COLLAPSE (warn, stage U): the policy's entropy fell to a small fraction of its early level.

Rule (``entropy``: mean per-token entropy of the policy in nats, as TRL ``entropy``, verl
``actor/entropy`` or its older ``actor/entropy_loss``, OpenRLHF ``policy_entropy``; SB3's
``train/entropy_loss`` read with its sign flipped by the alias table):

* *relative*: the early-window mean is above ``floor`` and the late-window mean is below
  ``fraction`` (0.25) times it; the onset is the first of ``sustain`` (5) consecutive logged
  points below ``fraction`` x the early mean;
* *absolute*: otherwise, the late-window mean is below ``floor`` (0.01 nats per token) and the
  entropy is that of a discrete (token) distribution, i.e. never negative and not from SB3, whose
  policies are mostly Gaussian (a differential entropy: it can sit near or below 0 with a healthy
  spread); the onset is the first of ``sustain`` points below ``floor``. This catches a log that
  begins after the collapse (a resumed run, an excerpt), where there is no early level to fall
  from; the evidence then says the entropy was already low at the first logged step.

Windows: first and last 20 % of the logged points (at least 3 each; 6 points to be judged).
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import metric, onset_index
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "ENTROPY_COLLAPSE"

WHAT_TO_TRY = (
    "Read a few late rollouts: one repeated answer template means the policy collapsed onto what the reward pays for "
    "(check the reward for a format-only or length shortcut).",
    "Keep exploration alive: an entropy bonus (entropy_coeff), a higher sampling temperature, DAPO's clip-higher "
    "(a larger upper clip range keeps low-probability tokens), or a lower learning rate / PPO clip range.",
    "Keep the policy near its reference: a KL penalty (or a larger kl_coef) slows the drift onto one mode.",
    "Resume from a checkpoint before the onset step with the changes above; a collapsed policy rarely recovers.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate ENTROPY_COLLAPSE on ``run`` with resolved ``knobs``."""
    s = metric(run, "entropy")
    if s is None:
        return NotEvaluable(ID, ("entropy",))
    if not s.judgeable:
        return None
    fraction, floor, sustain = float(knobs["fraction"]), float(knobs["floor"]), int(knobs["sustain"])
    early, late = s.early_mean(), s.late_mean()
    discrete = run.trainer != "sb3" and min(s.values) >= 0.0
    if early > floor and late < fraction * early:
        rule, cut = "relative", fraction * early
    elif discrete and late < floor:
        rule, cut = "absolute", floor
    else:
        return None
    idx = onset_index(s.values, lambda v: v < cut, sustain)
    evidence: dict[str, object] = {
        "metric": "entropy",
        "source": run.sources.get("entropy"),
        "rule": rule,
        "early_mean": early,
        "late_mean": late,
        "late_over_early": late / early if early > 0 else None,
        "fraction": fraction,
        "floor": floor,
        "first_logged_step": s.steps[0],
        **s.where(idx),
    }
    if rule == "relative":
        message = (f"Policy entropy fell from {early:.3g} early to {late:.3g} late ({100 * late / early:.0f}% of its "
                   "early level): the policy has become nearly deterministic and stopped exploring.")
    else:
        message = (f"Policy entropy is {late:.3g} nats per token late in the run (below {floor:g}): the policy "
                   "samples nearly one token sequence and no longer explores.")
        if idx == 0:
            evidence["already_low_at_first_logged_step"] = True
            message += (f" It was already that low at the first logged step ({s.steps[0]}): the collapse happened "
                        "before this log begins.")
    return Finding(ID, "warn", "U", s.step_at(idx), dict(evidence), message, WHAT_TO_TRY)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="U",
    summary="policy entropy fell to a small fraction of its early level",
    key_metrics=("entropy",),
    fn=detect,
    knobs=(
        Knob("fraction", 0.25, "late entropy below this fraction of the early entropy = collapsed", low=0.0, high=1.0),
        Knob("floor", 0.01, "late per-token entropy (nats) below this = collapsed, whatever the early level", low=0.0),
        Knob("sustain", 5, "consecutive logged steps below the cut for the onset estimate", low=1, integer=True),
    ),
)
