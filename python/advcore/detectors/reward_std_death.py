"""REWARD_STD_DEATH (warn, stage R): the reward spread fell to ~0 relative to its own early level.

Rule: the early-window mean of the reward spread (``reward_std``, else ``reward_std_within``, else
the proxy ``reward_max - reward_min``; reward units) is above ``min_early`` (1e-3) and the
late-window mean is below ``death_ratio`` (0.1) times it; the onset is the first of ``sustain``
(5) consecutive logged points below ``death_ratio`` x the early mean. A spread that was ~0 from
the start is left to DEAD_FROM_START; an episode return whose spread died at its ceiling (every
episode succeeds: the environment is solved) is left to REWARD_SATURATION, which reports it as info. Windows: first and last 20 % of the logged points.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import THRESHOLD, Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import episodic_reward, reward_level
from advcore.detectors._windows import onset_index, plain, reward_spread
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "REWARD_STD_DEATH"

WHAT_TO_TRY = (
    "Read `reward_mean`: at its ceiling the task is exhausted (harder prompts); at its floor everything fails "
    "(easier prompts, check the reward function); in between the policy became deterministic (entropy, "
    "temperature).",
    "Check entropy and response length for mode collapse onto one answer template.",
    "Raise the sampling temperature or the group size, or add prompts the policy does not yet solve.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate REWARD_STD_DEATH on ``run`` with resolved ``knobs``."""
    s = reward_spread(run)
    if s is None:
        return NotEvaluable(ID, ("reward_std (or reward_std_within, or reward_max and reward_min)",))
    if not s.judgeable:
        return None
    ratio, min_early, sustain = float(knobs["death_ratio"]), float(knobs["min_early"]), int(knobs["sustain"])
    early, late = s.early_mean(), s.late_mean()
    if not (early > min_early and late < ratio * early):
        return None
    if episodic_reward(run) is not None and (level := reward_level(run)) is not None and level.regime == "saturation":
        # every episode reaches the ceiling: the spread died because the environment is solved, which
        # REWARD_SATURATION reports as an outcome (h83-torchac-ppo-doorkey-irl-shaped-reward-learns)
        return None
    cut = ratio * early
    idx = onset_index(s.values, lambda v: v < cut, sustain)
    evidence: dict[str, object] = {
        "metric": s.name,
        "early_mean": early,
        "late_mean": late,
        "late_over_early": late / early,
        "death_ratio": ratio,
        THRESHOLD: cut,
        **s.where(idx),
    }
    if s.proxy:
        evidence["proxy"] = s.name
    return Finding(
        ID, "warn", "R", s.step_at(idx), dict(evidence),
        f"Reward spread ({plain(s.name)}) fell from {early:.3g} early to {late:.3g} late "
        f"({100 * late / early:.1f}% of its early level): the rewards no longer tell samples apart.",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="the rewards stopped telling samples apart",
    happening="""
        The spread of the rewards is the raw material of every advantage. When it falls to ~0 relative to
        what it was early in the run, the policy has either exhausted the task (everyone scores the
        ceiling), fails everything (the floor) or has become deterministic (every sample of a prompt
        identical). Whatever the reason, no advantage normalization can create a signal that the rewards
        no longer contain.
    """,
    looks_like="""
        `reward_std` starting at a healthy level and sliding to ~0, often while `reward_mean` flattens,
        entropy falls and response length collapses onto one template.
    """,
    decides="""
        Reward spread: `reward_std`, else `reward_std_within`, else the proxy `reward_max - reward_min`
        (reward units). Fires when the early-window mean (first 20 % of the logged points) exceeds
        `min_early` and the late-window mean (last 20 %) is below `death_ratio` × the early mean. Onset:
        the first of `sustain` consecutive points below `death_ratio` × the early mean. A spread that was
        ~0 from the start is not a death; DEAD_FROM_START reports it. Nor is the spread of an episode
        return (a reward read from a key naming `ep_rew`, `episode` or `return`) that died at the
        return's ceiling: every episode succeeds, the environment is solved, and REWARD_SATURATION
        reports that outcome as info (h83-torchac-ppo-doorkey-irl-shaped-reward-learns: the reshaped
        return's range falls from 2.7 to 0.24 as every DoorKey episode reaches 1.42).
    """,
    related="""
        The whole-batch view upstream of ADV_COLLAPSE; DEGENERATE_GROUPS is the within-group view. All
        three together: start from reward variance.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="reward spread fell to ~0 relative to its own early level",
    key_metrics=("reward_std", "reward_std_within"),
    fn=detect,
    knobs=(
        Knob("death_ratio", 0.1, "late spread below this fraction of the early spread = dead", low=0.0, high=1.0,
             why="legaloom-grpo-v3 (alive, low reward) keeps ~0.7 of its early spread, unsloth-qwen25-3b and the "
                 "llama runs grow theirs; unsloth-qwen3-vl falls to 0."),
        Knob("min_early", 1e-3, "early spread (reward units) must exceed this to be judged", low=0.0,
             why="f1-strategist's early `reward_std` is 2e-5, which is rounding, not a level to fall from."),
        Knob("sustain", 5, "consecutive logged steps below the cut for the onset estimate", low=1, integer=True,
             why="As the seed card."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
