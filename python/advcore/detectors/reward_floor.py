"""REWARD_FLOOR (error, stage R): the reward is constant at its floor (everything fails, or the
reward is not wired).

Rule (shared with :func:`advcore.diagnose.reward_regime` through
:func:`advcore.detectors._reward.reward_level`): the reward mean is exactly 0 at every logged
step, or over the late window (last 20 % of the logged points) it lies within ``rel_tol`` (0.02)
x span of the floor (``min(reward_min)`` when logged, else the run's lowest reward mean) and moves
by at most that much; in both cases the reward spread is gone (late spread <= ``spread_gone``
(0.1) x ``ceiling - floor``; or >= 80 % tied groups; or, with no spread logged, a bit-identical
late mean). Onset: the first of ``sustain`` (5) consecutive logged reward means within the
tolerance of the floor.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import REL_TOL, SPREAD_GONE, reward_level
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "REWARD_FLOOR"

WHAT_TO_TRY = (
    "Score a few rollouts by hand: check that the reward function is called, returns a number per sample and is "
    "not silently 0 (an exception caught inside it, a wrong answer key, a parser that never matches).",
    "Check the rollouts themselves: truncated at the length cap, a token loop, a broken chat template.",
    "If the prompts are simply too hard, use easier prompts, a curriculum, or a denser (partial-credit) reward.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate REWARD_FLOOR on ``run`` with resolved ``knobs``."""
    if not run.has("reward_mean"):
        return NotEvaluable(ID, ("reward_mean",))
    level = reward_level(run, rel_tol=float(knobs["rel_tol"]), spread_gone=float(knobs["spread_gone"]))
    if level is None or level.regime != "floor":
        return None
    all_zero = all(v == 0.0 for v in level.mean.values)
    at = 0.0 if all_zero else level.floor
    idx = level.pinned_onset(at, int(knobs["sustain"]))
    evidence: dict[str, object] = {**level.evidence(), "all_zero": all_zero, **level.mean.where(idx)}
    if all_zero:
        message = (f"The reward mean is exactly 0 at all {len(level.mean)} logged steps: the reward is not wired "
                   "(or every sample fails); there is no signal to learn from.")
    else:
        message = (f"The reward sits constant at its floor ({level.late_mean:.4g} late, floor {level.floor:.4g} from "
                   f"{level.floor_from}) with no spread left: everything fails, or the reward is not wired.")
    return Finding(ID, "error", "R", level.mean.step_at(idx), evidence, message, WHAT_TO_TRY)


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="R",
    summary="reward constant at its floor (everything fails, or the reward is not wired)",
    key_metrics=("reward_mean", "reward_std", "reward_min"),
    fn=detect,
    knobs=(
        Knob("rel_tol", REL_TOL, "late mean within this fraction of the reward span of the floor, and moving by "
             "no more, = pinned", low=0.0, high=0.5),
        Knob("spread_gone", SPREAD_GONE, "late reward spread at most this fraction of ceiling - floor = no spread left",
             low=0.0, high=1.0),
        Knob("sustain", 5, "consecutive logged steps at the floor for the onset estimate", low=1, integer=True),
    ),
)
