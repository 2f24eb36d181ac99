"""REWARD_SATURATION (warn, stage R): the reward mean is pinned at its ceiling with no spread left.

Rule (shared with :func:`advcore.diagnose.reward_regime` through
:func:`advcore.detectors._reward.reward_level`): over the late window (last 20 % of the logged
points) the reward mean lies within ``rel_tol`` (0.02) x span of the ceiling (``max(reward_max)``
when logged, else the run's highest reward mean), moves by at most that much, lies above the
run's lowest mean, and the reward spread is gone (late spread <= ``spread_gone`` (0.1) x
``ceiling - floor``; or >= 80 % tied groups; or, with no spread logged, a bit-identical late
mean). Onset: the first of ``sustain`` (5) consecutive logged reward means within the tolerance of
the ceiling. This is the honest collapse: the task is exhausted, not the plumbing broken.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import REL_TOL, SPREAD_GONE, reward_level
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "REWARD_SATURATION"

WHAT_TO_TRY = (
    "The task is exhausted: add harder prompts (or a curriculum that moves on), or stop the run here.",
    "Filter prompts whose groups are all-correct (DAPO-style dynamic sampling) so that the batches keep contrast.",
    "Check the held-out score: a train reward at its ceiling with a falling validation score is over-fitting.",
    "If the ceiling is a format or length bonus rather than the task, make the reward measure the task.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate REWARD_SATURATION on ``run`` with resolved ``knobs``."""
    if not run.has("reward_mean"):
        return NotEvaluable(ID, ("reward_mean",))
    level = reward_level(run, rel_tol=float(knobs["rel_tol"]), spread_gone=float(knobs["spread_gone"]))
    if level is None or level.regime != "saturation":
        return None
    idx = level.pinned_onset(level.ceiling, int(knobs["sustain"]))
    evidence: dict[str, object] = {**level.evidence(), **level.mean.where(idx)}
    spread = (f"late spread {level.spread_late:.3g} ({level.spread.name})"
              if level.spread_late is not None and level.spread is not None
              else f"{100 * (level.tied_late or 0):.0f}% tied groups" if level.tied_late is not None
              else "a constant late mean")
    return Finding(
        ID, "warn", "R", level.mean.step_at(idx), evidence,
        f"The reward mean is pinned at its ceiling ({level.late_mean:.4g} late, ceiling {level.ceiling:.4g} from "
        f"{level.ceiling_from}) with no spread left ({spread}): the task is exhausted, so there is nothing left to "
        "learn from these prompts.",
        WHAT_TO_TRY,
    )


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="reward mean pinned at its ceiling with no spread left (the honest collapse)",
    key_metrics=("reward_mean", "reward_std", "reward_max"),
    fn=detect,
    knobs=(
        Knob("rel_tol", REL_TOL, "late mean within this fraction of the reward span of the ceiling, and moving by "
             "no more, = pinned", low=0.0, high=0.5),
        Knob("spread_gone", SPREAD_GONE, "late reward spread at most this fraction of ceiling - floor = no spread left",
             low=0.0, high=1.0),
        Knob("sustain", 5, "consecutive logged steps at the ceiling for the onset estimate", low=1, integer=True),
    ),
)
