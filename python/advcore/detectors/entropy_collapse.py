"""ENTROPY_COLLAPSE (warn, stage U): the policy's entropy fell to a small fraction of its early level.

Rule (``entropy``: mean per-token entropy of the policy in nats, as TRL ``entropy``, verl
``actor/entropy`` or its older ``actor/entropy_loss``, OpenRLHF ``policy_entropy``; SB3's
``train/entropy_loss`` read with its sign flipped by the alias table):

* *relative*: the early-window mean is above ``floor`` and the late-window mean is below
  ``fraction`` (0.25) times it;
* *absolute*: otherwise, the late-window mean is below ``floor`` (0.01 nats per token) and the
  entropy is that of a discrete (token) distribution, i.e. never negative and not from SB3, whose
  policies are mostly Gaussian (a differential entropy: it can sit near or below 0 with a healthy
  spread). This catches a log that
  begins after the collapse (a resumed run, an excerpt), where there is no early level to fall
  from; the evidence then says the entropy was already low at the first logged step.

Onset. The first of ``sustain`` (5) consecutive logged points below the cut (``fraction`` x the
early mean, or ``floor``) dates when the entropy had fallen far enough (``evidence["below_cut_step"]``).
When the fall is a step rather than a drift, the onset is dated from where it began: the single
change point of the entropy's level (:func:`advcore.detectors._windows.change_point`, least
squares) over the points after the early window (the level the fall is measured from) up to the
end of that run of ``sustain``, taken when it comes before the crossing and the mean of the
``sustain`` points after it is below the mean of the ``sustain`` points before it by at least
``JUMP_SHARE`` (0.2) of the whole fall (early mean - late mean). In the lab, an entropy bonus of
the wrong sign switched on at step 30 crosses the cut at steps 32 to 42 and changes level at steps
31 to 33; trl-dapo-vlm-120531 crosses at log point 13, where its level also drops (0.109 -> 0.048,
27 % of its fall), so its onset stays 13; a steady linear decline keeps its crossing.

Windows: first and last 20 % of the logged points (at least 3 each; 6 points to be judged).
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import change_point, metric, onset_index
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "ENTROPY_COLLAPSE"
#: A change point dates the onset when the level drops there by at least this share of the whole fall.
JUMP_SHARE = 0.2


def _mean(xs: tuple[float, ...]) -> float:
    return sum(xs) / len(xs) if xs else 0.0

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
    crossing = onset_index(s.values, lambda v: v < cut, sustain)
    idx = crossing
    start = len(s.early())
    if crossing is not None and crossing > start:  # date a step fall from where it began, not where it went far enough
        part = s.values[start: min(len(s), crossing + sustain)]
        cp = change_point(part)
        if cp is not None:
            jump = _mean(part[max(0, cp - sustain): cp]) - _mean(part[cp: cp + sustain])
            if cp + start < crossing and jump >= JUMP_SHARE * (early - late):
                idx = cp + start
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
        "below_cut_step": s.step_at(crossing),
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
