"""REWARD_SATURATION (warn, stage R): the reward mean is pinned at its ceiling with no spread left.

Rule (shared with :func:`advcore.diagnose.reward_regime` through
:func:`advcore.detectors._reward.reward_level`): over the late window (last 20 % of the logged
points) the reward mean lies within ``rel_tol`` (0.02) x span of the ceiling (``max(reward_max)``
when logged, else the run's highest reward mean), moves by at most that much, lies above the
run's lowest mean, and the reward spread is gone (late spread <= ``spread_gone`` (0.1) x
``ceiling - floor``; or >= 80 % tied groups; or, with no spread logged, a bit-identical late
mean). Onset: the first of ``sustain`` (5) consecutive logged reward means within the tolerance of
the ceiling. This is the honest collapse: the task is exhausted, not the plumbing broken.
The run may also end in a stretch at its ceiling (:func:`advcore.detectors._reward.reward_level`'s held
stretch, the rule REWARD_FLOOR's docstring states for the floor). An environment's episode return (or a control
task's success rate) at its ceiling is the task solved: info.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import (CONTROL_TRAINERS, REL_TOL, SPREAD_GONE, environment_run, episodic_reward,
                                      reward_level)
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "REWARD_SATURATION"

#: On a control or game task (:func:`advcore.detectors._reward.environment_run`).
CONTROL_TRIES = (
    "The environment is solved at this level: stop the run here, or make the task harder (harder starts, a "
    "curriculum that moves on).",
    "Check the evaluation return: a training return at its cap with a falling evaluation return is over-fitting "
    "to the training seeds.",
    "If the cap is the episode's time limit (every episode lasts as long as allowed), check that lasting means "
    "success and not mere survival.",
)

WHAT_TO_TRY = (
    "The task is exhausted: add harder prompts or a curriculum that moves on, or stop the run here.",
    "Filter all-correct groups (DAPO-style dynamic sampling) so that the batches keep contrast.",
    "Check the held-out score: a train reward at its ceiling with a falling validation score is over-fitting.",
    "If the ceiling is a format or length bonus rather than the task, make the reward measure the task (see "
    "COMPONENT_COLLAPSE).",
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
    source = run.sources.get("reward_mean") or ""
    # the reward a control trainer logs is an episode return, whatever its key (SB3's Monitor calls it `r`: a survey
    # PPO on CartPole-v1 at 500, the time limit, for its last 19 episodes)
    episodic = episodic_reward(run) or (source if run.trainer in CONTROL_TRAINERS else None)
    # a control task's success rate at its ceiling is the task solved, as an episode return at its cap is
    # (h230-baselines-her-ddpg-aubo-reach-v5-moveit-learns-and-holds: HER's test success 1.0 at the last six epochs)
    solved = episodic is not None or ("success" in source.lower() and environment_run(run))
    if solved:
        evidence["episode_return" if episodic is not None else "success_rate"] = episodic or source
        return Finding(
            ID, "info", "R", level.mean.step_at(idx), evidence,
            f"The {'episode return' if episodic is not None else 'success rate'} is pinned at its ceiling "
            f"({level.late_mean:.4g} late, from {source or episodic}): the task is "
            "solved; training on it further teaches nothing new.",
            WHAT_TO_TRY,
        )
    return Finding(
        ID, "warn", "R", level.mean.step_at(idx), evidence,
        f"The reward mean is pinned at its ceiling ({level.late_mean:.4g} late, ceiling {level.ceiling:.4g} from "
        f"{level.ceiling_from}) with no spread left ({spread}): the task is exhausted, so there is nothing left to "
        "learn from these prompts.",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="the reward is at its ceiling and has nothing left to say",
    key_metrics_note="for `reward_std`: or `reward_std_within`, `reward_max - reward_min`, "
        "`zero_variance_group_frac`",
    happening="""
        The policy solves (almost) every prompt it is given. Every sample of every group earns the top
        score, the groups are tied at the ceiling, and group-relative advantages are zero. This is the
        honest collapse: nothing is broken, the task is exhausted. Training on goes on spending compute on
        batches that carry no gradient (and, with a KL or entropy term, drifts on those alone).
    """,
    looks_like="""
        `reward_mean` climbs and then flattens at its maximum (`reward_max` when logged); `reward_std`
        falls to ~0 at the same time, `frac_reward_zero_std` goes to ~1, `grad_norm` shrinks to what the
        KL term alone produces.
    """,
    decides="""
        It reads the same rule as the verdict's regime (`advcore.diagnose.reward_regime`, implemented
        once in `advcore/detectors/_reward.py`), on the late window (last 20 % of the logged points):

        - the late reward mean is within `rel_tol` × span of the ceiling (span = max(hi − lo, |hi|, |lo|)
          of the run's reward means; ceiling = `max(reward_max)` when logged, else the highest reward
          mean), lies above the run's lowest mean, and moves by at most `rel_tol` × span within the
          late window;
        - the spread is gone: the late mean of the reward spread (`reward_std`, else `reward_std_within`,
          else `reward_max - reward_min`) is at most `spread_gone` × (ceiling − floor); without a spread
          metric, ≥ 80 % tied groups (`zero_variance_group_frac`) or, with neither, a bit-identical late
          reward mean.

        A run can also end in a stretch at its ceiling that the late window has not yet taken in, read by
        the rule of REWARD_FLOOR's stretch at its floor (see that card; `evidence["held_since_step"]`):
        inside a trainer, the lab's saturation fault (every prompt solved from step 30) was reported 8
        steps after its onset, now 5 on most estimators.

        Onset: the first of `sustain` consecutive logged reward means within the tolerance of the
        ceiling. Not evaluable without `reward_mean`.

        An environment's episode return at its cap is the task solved, an outcome: the finding is then
        info, not a warning. The reward is an episode return when its key or the step's names episodes
        or returns (`rollout/ep_rew_mean`, `Environment/Cumulative Reward`, a step in `timesteps`) or a
        control trainer logged it (SB3's Monitor `r`, rl_games, CleanRL, ...); a control task's success
        rate at 1 is read the same way.
    """,
    knobs_note="""
        Calibration on the real logs: no public run in `data/real` ends saturated with its spread gone,
        so the detector stays quiet on all of them (including the seven healthy ones); the firing case is
        synthetic (tests/detectors/test_r_stage.py).
    """,
    related="""
        REWARD_STD_DEATH and DEGENERATE_GROUPS usually fire with it (spread gone, groups tied); this
        detector says why (the ceiling, not the floor or a deterministic policy). REWARD_FLOOR is the
        mirror image. ADV_COLLAPSE downstream follows from it.
    """,
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
             "no more, = pinned", low=0.0, high=0.5,
             why="\"At the ceiling\" and \"does not move\" within 2 % of the reward span: the verdict's "
                 "long-standing tolerance. verl-ppo-qwen7b-gsm8k-resumed (a 0.95 plateau, \"nothing left to "
                 "learn\") moves by 0.074 in its late window, 7.5 % of its span, and keeps a per-step `max - min` "
                 "of 1.0: not pinned, quiet."),
        Knob("spread_gone", SPREAD_GONE, "late reward spread at most this fraction of ceiling - floor = no spread left",
             low=0.0, high=1.0,
             why="For a 0/1 reward that is a std of 0.1 (about 99 % solved); the same cut as REWARD_STD_DEATH's "
                 "`death_ratio`."),
        Knob("sustain", 5, "consecutive logged steps at the ceiling for the onset estimate", low=1, integer=True,
             why="As the seed card."),
    ),
    what_to_try=WHAT_TO_TRY,
    what_to_try_control=CONTROL_TRIES,
    card=CARD,
)
