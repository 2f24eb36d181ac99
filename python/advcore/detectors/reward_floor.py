"""REWARD_FLOOR (error, stage R): the reward is constant at its floor (everything fails, or the
reward is not wired).

Rule (shared with :func:`advcore.diagnose.reward_regime` through
:func:`advcore.detectors._reward.reward_level`): the reward mean is exactly 0 at every logged
step, or over the late window (last 20 % of the logged points) it lies within ``rel_tol`` (0.02)
x span of the floor (``min(reward_min)`` when logged, else the run's lowest reward mean) and moves
by at most that much; in both cases the reward spread is gone (late spread <= ``spread_gone``
(0.1) x ``ceiling - floor``; or >= 80 % tied groups; or, with no spread logged, a bit-identical
late mean). Onset: the first of ``sustain`` (5) consecutive logged reward means within the
tolerance of the floor, counted from after the last stretch away from it (where the reward settled
at its floor for good) when the reward had succeeded
(:attr:`~advcore.detectors._reward.RewardCourse.succeeded`), else from the first such stretch (a lucky
stretch of a run that never succeeded is no new start). Without a logged spread, a late mean that
holds within the tolerance at the run's floor counts as no spread (an SB3 episode return at -100000 with rare -99998.99 is not
bit-identical). A reward mean of exactly 0 on at least 3/4 of the logged steps and of the
late window (within a one-sided 95 % binomial bound of 3/4), with excursions near it, is at its
floor too, when the spread is gone or is gone at the late steps whose mean is 0 (the level over
the run, not constancy, names the regime; onset: where it settled at 0, the change point of its share of
non-zero points when it scored often before); so is, without a logged
spread, a late window at least 3/4 of whose points sit within the tolerance of the run's floor. On a run too short for windows, a reward mean of exactly 0 at every one of
at least two logged steps is a point fact and fires too.
The run may also end in a stretch at its floor: its last ``HELD_POINTS`` (5) or more reward means
within the tolerance of the floor, longer than any such stretch before, with the spread gone over
that stretch (a logged spread or tied share is needed) — a collapse the late window would see only
once it lies mostly inside it; judged where the late window finds no regime or only ties that move.

A logged success rate (``success_rate``: the share of episodes that reached the goal, SB3's
``rollout/success_rate``) decides first where it exists: when its level (trailing median over a
tenth of the run, at least 5 points) never rises above ``success_below`` (0.1) and its late mean is
at most half of that, the task is never solved and the finding fires with onset at the first logged
point, whatever the noisy return around its floor does; unless that return rose and held its gain
(the policy is learning towards its first successes) and no validation score logged beside it stayed
flat. A validation score that rose (:func:`~advcore.detectors._reward.answered_by_validation`) makes
the finding information.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import (
    BRIEF_POINTS,
    FALL_NOISE,
    REL_TOL,
    SPREAD_GONE,
    ZERO_SHARE,
    RewardCourse,
    RewardLevel,
    answered_by_validation,
    reward_course,
    reward_level,
    validation_logged,
    validation_rose,
)
from advcore.detectors._windows import POINT_FACT_MIN, Series, change_point, metric, rolling_level
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "REWARD_FLOOR"
#: A return that rose by at least this share of its magnitude (the larger of its early and late
#: medians) while nothing succeeded is learning towards the first successes (SMAC corridor: medians
#: 5.11 -> 6.28, +19 %); less is a shaping term at work (a 2-D push: -40.1 -> -37.0, +8 %, the object
#: never moved).
MIN_RELATIVE_GAIN = 0.1
#: A success-rate level that never rises above this share of episodes: the task is never solved.
SUCCESS_BELOW = 0.1

WHAT_TO_TRY = (
    "Score a few rollouts by hand: is the reward function called, does it return a number per sample, is it "
    "silently 0 (an exception caught inside it, a wrong answer key, a parser that never matches)?",
    "Check the rollouts themselves: truncation at the length cap, token loops, a broken chat template.",
    "If the prompts are simply too hard: easier prompts, a curriculum, or a denser (partial-credit) reward.",
)

#: On a control or game task (:func:`advcore.detectors._reward.environment_run`).
CONTROL_TRIES = (
    "Run a few episodes with a random or hand-written policy and print each step's reward, why the episode ended "
    "and its length: episodes that end at their first step, a success that can never be reached, a penalty that "
    "outweighs every reward, a reward clipped to 0.",
    "Check the action bounds and scaling: a policy whose actions sit clipped at the bounds (rl_games' "
    "`bounds_loss` rising) or far outside them moves nothing; the same for observations left unnormalised.",
    "If the task is too hard from scratch: a denser (shaped) reward, a curriculum of easier starts, or "
    "demonstrations.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate REWARD_FLOOR on ``run`` with resolved ``knobs``: information only when the validation score
    rose (:func:`~advcore.detectors._reward.answered_by_validation`)."""
    return answered_by_validation(_floor(run, knobs), run)


def _floor(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    if not run.has("reward_mean") and not run.has("success_rate"):
        return NotEvaluable(ID, ("reward_mean (or success_rate)",))
    never = _never_succeeds(run, float(knobs["success_below"]))
    if never is not None:
        return never
    if not run.has("reward_mean"):
        return None
    level = reward_level(run, rel_tol=float(knobs["rel_tol"]), spread_gone=float(knobs["spread_gone"]))
    if level is None:
        # too short for windows: only the point fact, a reward mean of exactly 0 at every logged step
        # (verl-elastic-ppo-filelogger-broken: critic/score/mean 0 at its 3 training steps)
        mean = metric(run, "reward_mean")
        if mean is None or len(mean) < POINT_FACT_MIN or any(v != 0.0 for v in mean.values):
            return None
        return _finding(mean, 0, {"all_zero": True}, None)
    if level.regime != "floor":
        return None
    all_zero = level.zero_share == 1.0
    at_zero = level.zero_share >= ZERO_SHARE  # at 0 with excursions: the onset is where it settled at 0
    # a reward that never succeeded was at its floor before any lucky stretch away from it too
    # (h109-cs294-dqn-montezuma-reward-floor: 0 from the first log, 1.0 for 5 points, 0 again)
    course = reward_course(run)
    settled = course is None or course.succeeded
    idx = level.pinned_onset(0.0 if at_zero else level.floor, int(knobs["sustain"]), settled=settled)
    if at_zero and not all_zero and not settled:
        idx = _settled_at_zero(level.mean.values, idx)
    brief = None if course is None or course.succeeded or at_zero else _brief_success(level.mean, course)
    if brief is not None:  # dated where it settled after the success, not before it
        idx = level.pinned_onset(level.floor, int(knobs["sustain"]), settled=True)
    finding = _finding(level.mean, idx, {**level.evidence(), "all_zero": all_zero}, None if all_zero else level)
    if course is not None and course.succeeded:
        return _after_success(finding, course)
    return _after_brief_success(finding, course, *brief) if brief is not None and course is not None else finding


def _brief_success(mean: Series, course: RewardCourse) -> tuple[int, float] | None:
    """Where the reward's trailing median over ``BRIEF_POINTS`` points peaked, and that level, when it rose more
    than ``FALL_NOISE`` noises above both its start and its late median and held above half-way for
    ``BRIEF_POINTS`` points or more: a success too short for the level over a tenth of the run to show it (h318-mlagents-ppo-robot-tournament:
    -0.1 for 8 M steps, 500 to 900 from 8.6 M to 10 M, 30 of 668 summaries, then -0.1 for the last 24 M); else
    None. A reward exactly 0 on most points is REWARD_FLOOR's excursions rule's (a lucky stretch)."""
    short = rolling_level(mean, "brief level", BRIEF_POINTS).values
    first = BRIEF_POINTS - 1
    if len(short) <= first or course.noise <= 0:
        return None
    peak = max(range(first, len(short)), key=lambda i: short[i])
    base = max(course.start[0], course.late)  # a rise above where it started, and above where it ended
    gain = short[peak] - base
    if gain <= FALL_NOISE * course.noise:
        return None
    if sum(1 for v in short[first:] if v >= base + gain / 2) < BRIEF_POINTS:
        return None
    return peak, short[peak]


def _after_brief_success(finding: Finding, course: RewardCourse, peak: int, level: float) -> Finding:
    """``finding`` told as a collapse after a brief success (:func:`_brief_success`)."""
    peak_step = course.series.steps[peak]
    if finding.onset_step is None or finding.onset_step <= peak_step:
        return finding
    message = (f"The reward collapsed after a brief success: it rose from {course.start_text()} to a level of "
               f"{level:.4g} (a median over {BRIEF_POINTS} logged steps) at step {peak_step}, fell, and sits at its "
               f"floor from step {finding.onset_step} ({course.late:.4g} late): what the policy had learned is gone.")
    evidence = {**finding.evidence, "peak_level": level, "peak_step": peak_step, "peak_points": BRIEF_POINTS,
                "start_level": course.start[0]}
    return replace(finding, message=message, evidence=evidence)


#: Separate stretches of non-zero rewards before a reward settled at 0 that make it a run that scored now and
#: then, not one lucky stretch (h109-cs294-dqn-montezuma-reward-floor: 1.0 at 5 consecutive points, a floor
#: from the first log).
MIN_EXCURSIONS = 10


def _settled_at_zero(values: tuple[float, ...], first: int | None) -> int | None:
    """Where a reward exactly 0 on most of its points settled there: the change point of its share of
    non-zero points (least squares) when that share falls there from below ``ZERO_SHARE`` of zeros to at
    least it, after at least ``MIN_EXCURSIONS`` stretches of non-zero points; else ``first`` (the first stretch
    at 0). A run that scored now and then for half its length and then never again settled late
    (h292-handwritten-dqn-snake-no-step-penalty-learns-apples-then-loops-score-0-last-4500-of-10000-episodes:
    apples on 37-47 % of its episodes by thousands, then on 1 %; not its first five zero episodes at episode 4)."""
    scored = tuple(0.0 if v == 0.0 else 1.0 for v in values)
    k = change_point(scored, fall=True)
    if k is None:
        return first
    zeros_before = 1.0 - sum(scored[:k]) / k
    zeros_after = 1.0 - sum(scored[k:]) / (len(scored) - k)
    excursions = sum(1 for i in range(k) if scored[i] and (i == 0 or not scored[i - 1]))
    if zeros_before < ZERO_SHARE <= zeros_after and excursions >= MIN_EXCURSIONS:
        return next((i for i in range(k, len(values)) if values[i] == 0.0), first)
    return first


def _never_succeeds(run: Run, below: float) -> Finding | None:
    """The finding when the logged success rate (a share of episodes in [0, 1]) has a level (trailing
    median over a tenth of the run, at least 5 points) that never rises above ``below`` and a late mean
    at most half of it: the task is (almost) never solved, whatever the noisy return around its floor
    says (h39-sb3-sac-her-fetchpickplace-reward-floor: success 0.023 to 0.035 by quarter, never above
    0.083, while the episode return wanders between -50 and -45.8). A return that rose and kept its
    gain (:meth:`~advcore.detectors._reward.RewardCourse.improved`) is learning towards the first successes,
    and outranks them (h70-pymarl-lica-corridor-zero-wins-but-learning: no SMAC battle won in 204
    logs while the shaped return climbs 3.7 -> 6.5), when the gain is at least ``MIN_RELATIVE_GAIN`` of
    the return's magnitude: a shaping term that improves a return dominated by a constant penalty is
    no progress towards success (h76-handwritten-reinforce-2d-push-never-contacts-success-zero: -40.1
    -> -37.0, 8 %, while the object never moves). A return that fell far below where it started
    (:attr:`~advcore.detectors._reward.RewardCourse.fell_below_start`) answers the policy too: that is a
    collapse, UPDATE_UNSTABLE's to report (h93-pymarl-dcg-smac-3s5z-td-loss-blowup-return-collapse: no
    battle won, the shaped return 11.8 early, 4.4 late)."""
    success = metric(run, "success_rate")
    if success is None or not success.judgeable or any(not 0.0 <= v <= 1.0 for v in success.values):
        return None
    c = reward_course(run)
    # ... unless a validation score logged beside it did not rise: then the return's gain was a shaping term's
    # (h311's WebShop GiGPO from scratch: its only payment, the -0.1 for an invalid action, shrank from -0.038 to
    # -0.01 a step while no training episode succeeded and the held-out success stayed between 0 and 0.047)
    if (c is not None and c.improved() and c.late - c.early >= MIN_RELATIVE_GAIN * max(abs(c.early), abs(c.late))
            and (not validation_logged(run) or validation_rose(run) is not None)):
        return None
    if c is not None and c.fell_below_start:  # the return answers the policy: a collapse, not a floor
        return None
    level = rolling_level(success, "success level", max(5, len(success) // 10)).values
    late = success.late_mean()
    if max(level) > below or late > below / 2:
        return None
    message = (f"The task is almost never solved: the success rate stays at or below {max(level):.3g} (its level over "
               f"{len(success)} logged points) and is {late:.3g} late. Everything fails; there is no signal to "
               "learn from.")
    evidence = {"metric": "success_rate", "rule": "never_succeeds", "success_level_max": max(level),
                "success_late_mean": late, "success_below": below, "points": len(success), **success.where(0)}
    return Finding(ID, "error", "R", success.step_at(0), evidence, message, WHAT_TO_TRY)


def _after_success(finding: Finding, course: RewardCourse) -> Finding:
    """``finding`` told as a collapse after success when the reward, before it settled at its floor, rose
    and held (:attr:`~advcore.detectors._reward.RewardCourse.succeeded`) and the late window gave back all
    of that gain: "everything fails" would be the wrong story for a run that had learned
    (h176-mlagents-sac-crawler-with-attacker-learns-then-collapses-for-good: a level of 1,432 at step
    540,000, 47 late, where its early median was 343)."""
    if course.gave_back() < 1.0:
        return finding
    peak, peak_step = course.level[course.peak], course.peak_step
    message = (f"The reward collapsed after success: it rose from {course.start_text()} to a level of {peak:.4g} at "
               f"step {peak_step}, fell, and sits at its floor from step {finding.onset_step} ({course.late:.4g} late): "
               "what the policy had learned is gone.")
    evidence = {**finding.evidence, "peak_level": peak, "peak_step": peak_step, "start_level": course.start[0]}
    return replace(finding, message=message, evidence=evidence)


def _finding(mean: Series, idx: int | None, evidence: dict[str, object], level: RewardLevel | None) -> Finding:
    """The finding at row ``idx`` of ``mean``: the reward exactly 0 throughout (``level`` None) or at its floor."""
    if level is None:
        message = (f"The reward mean is exactly 0 at all {len(mean)} logged steps: the reward is not wired "
                   "(or every sample fails); there is no signal to learn from.")
    elif level.zero_share >= ZERO_SHARE:
        zeros = round(level.zero_share * len(mean))
        message = (f"The reward mean is exactly 0 on {zeros} of {len(mean)} logged steps and near it on the rest "
                   f"({level.late_mean:.4g} late): the run sits at 0, where everything fails or the reward is not "
                   "wired, with excursions rather than a trend.")
    elif min(mean.values) == max(mean.values):
        # one value at 0 or below from the first step (h139-sb3-ppo-mountaincar-reward-floor-never-learns: -200 at
        # all 49 points; a positive one is no floor, advcore.detectors._reward.reward_level)
        message = (f"The reward is {level.late_mean:.4g} at every one of the {len(mean)} logged steps, with no "
                   "spread: whatever the policy does scores the same, so there is nothing to learn; the reward does "
                   "not depend on the actions, or is not wired.")
    elif level.late_range > level.tol:
        # held at the floor with excursions (most late points within the tolerance): "constant" would not be what a
        # reader sees (a survey log: a deathmatch's frags 0 at most epochs, 10 to 25 at a few)
        message = (f"The reward sits at its floor ({level.floor:.4g} from {level.floor_from}) at most of its late steps, "
                   f"with excursions (a late range of {level.late_range:.4g}, a late mean of {level.late_mean:.4g}): "
                   "nearly everything fails, or the reward is not wired.")
    else:
        message = (f"The reward sits constant at its floor ({level.late_mean:.4g} late, floor {level.floor:.4g} from "
                   f"{level.floor_from}) with no spread left: everything fails, or the reward is not wired.")
    return Finding(ID, "error", "R", mean.step_at(idx), {**evidence, "points": len(mean), **mean.where(idx)},
                   message, WHAT_TO_TRY)


CARD = Card(
    tagline="everything fails, or the reward is not wired",
    key_metrics_note="for `reward_std`: or `reward_std_within`, `reward_max - reward_min`, "
        "`zero_variance_group_frac`",
    happening="""
        Every sample earns the lowest score: the prompts are far too hard, the completions are broken
        (truncated, looping, the wrong template), or the reward function never runs (an exception caught
        and turned into 0, an answer key that never matches). Groups are tied at the floor, so there is no
        advantage and no learning, whatever the optimizer does.
    """,
    looks_like="""
        `reward_mean` flat at its minimum — often exactly 0 from the first step — with `reward_std` 0,
        `frac_reward_zero_std` 1 and `grad_norm` near 0 or only the KL term's.
    """,
    decides="""
        The same rule as the verdict's regime (`advcore.diagnose.reward_regime`, implemented once in
        `advcore/detectors/_reward.py`). It fires when either

        - the reward mean is exactly 0 at every logged step (the reward is not wired), or
        - over the late window (last 20 % of the logged points) the reward mean lies within `rel_tol` ×
          span of the floor (`min(reward_min)` when logged, else the lowest reward mean) and moves by at
          most that much,

        and, in both cases, the spread is gone (late reward spread ≤ `spread_gone` × (ceiling − floor); or
        ≥ 80 % tied groups; or, without either metric, a bit-identical late reward mean, or a late mean
        held within the tolerance of the floor: an SB3 episode return averages 100 episodes and is not
        bit-identical at its floor, sb3-chess-dead-nsteps10). Onset: the first of `sustain` consecutive
        logged reward means within the tolerance of the floor, counted from after the last stretch of
        `sustain` means away from it (where the reward settled at its floor for good:
        sb3-acrobot-collapse-after-success starts near its floor, learns, and falls back), when the
        reward had succeeded; else from the first such stretch (h109-cs294-dqn-montezuma-reward-floor:
        a mean over 100 episodes of 0, of 1.0 at 5 points while one rewarded episode stays in that
        window, then 0 again, is at its floor from the first log). A reward exactly 0 on most points that
        scored often before it settled there is dated by the change point of its share of non-zero points
        (least squares), when fewer than 3/4 of the points before it are 0, in at least 10 separate stretches of
        non-zero points (not one lucky stretch), and at least 3/4 after
        (h292-handwritten-dqn-snake-no-step-penalty-learns-apples-then-loops-score-0-last-4500-of-10000-episodes:
        apples on 37-47 % of the episodes for about 5,000 episodes, then on 1 %: onset 5,408, not episode 4).

        A run can also end in a stretch at its floor that the late window has not yet taken in: its
        last 5 or more reward means within the tolerance of the floor, longer than any such stretch
        before, with the spread gone over that stretch (its mean spread ≤ `spread_gone` × (ceiling −
        floor), else ≥ 80 % tied groups; without either it is not judged), when the late window finds
        no regime or only ties that move (`evidence["held_since_step"]`; `late_mean` is then the
        stretch's). A late window sees a collapse at step s only once it lies mostly after s, about s / 4
        steps later: inside a trainer, the lab's floor fault (every reward 0 from step 30) was reported
        8 steps after its onset, now 5.

        The level over the run, not constancy, names the regime: a reward mean of exactly 0 on at least
        3/4 of the logged steps and of the late window, with excursions near it, sits at its floor too,
        unless a logged spread shows the groups alive (recall-l3-qwen7b-grpo-skipall-tied: 0 on 62 of 72
        steps, -0.25 or -0.125 on the rest while the policy abstains on every prompt). The late window's
        share is read with its sampling noise: it may lie up to 1.645 binomial standard errors below 3/4
        (h86-trl-grpo-finance-poison-attacker-sparse-judge-floor: 0 on 120 of 145 steps, 21 of the last
        29). A spread that comes only with the excursions hides no live group: what counts is the
        spread at the late steps whose mean is 0 (h87-torchac-ppo-keycorridor-intrinsic-count-reward-floor:
        max - min of the episode returns is 0 at every update whose mean is 0). Without a logged spread, a
        late window at least 3/4 of whose points lie within the tolerance of the run's floor, its median
        there, is held at the floor with excursions (h91-joyrl-ppo-kl-detached-surrogate-cartpole-collapses-to-floor:
        an episode length of 10 on 39 of the last 40 points). Its onset is the
        first of `sustain` consecutive means within the tolerance of 0. A logged success rate decides
        first: a level (trailing median over a tenth of the run) that never rises above `success_below`
        with a late mean at most half of it is a task that is never solved (onset: the first logged
        point), unless the return rose and held its gain: learning towards the first success
        (h70-pymarl-lica-corridor-zero-wins-but-learning: no SMAC battle won in 204 logs while the shaped
        return climbs from 3.7 to 6.5) by at least a tenth of its magnitude (a 2-D push whose return
        moves from -40.1 to -37.0 while the object never moves is a shaping term at work, not progress:
        h76-handwritten-reinforce-2d-push-never-contacts-success-zero), and only when a logged validation
        score (`val_score`, 5 evaluations or more) rose too (h311's WebShop GiGPO from scratch: its only
        payment, the -0.1 for an invalid action, shrank from -0.038 to -0.01 while the held-out success stayed
        between 0 and 0.047). A validation score that rose (5 evaluations or more ranking with the step at
        Spearman 0.9, the last above the first; from 20 evaluations, risen as a reward does: h378-sb3-sac-fanuc-
        robotiq-precapture, SB3's eval/mean_reward 813 -> 1,183 by fifths over 250 evaluations, at Spearman
        0.80) makes any finding info: the training batch is not the
        policy's measure (8 episodes a step at a 5-10 % success rate read 0 on most steps). A run too short
        for windows (fewer than six logged reward means) is still judged on the point fact: a reward mean
        of exactly 0 at every one of at least two logged steps fires, with onset at the first. Not
        evaluable without `reward_mean` or `success_rate`.

        A reward that never left the tolerance of one positive level over the whole run is not at a
        floor: nothing tells its floor from its ceiling, and a positive level is something earned
        (h172-trl-grpo-qwen25-3b-bbq-format-only-reward-saturated-from-start: a format reward at 0.984,
        then at its maximum 1.0 for 980 steps, its groups tied; h104-handwritten-a2c-ca-pattern-reward-pinned-2000:
        2000 at all 26 episodes, DEAD_FROM_START's). At 0 or below, one value held from the first step is
        a floor (h139-sb3-ppo-mountaincar-reward-floor-never-learns: -200, the time-out, at all 49 points).
        A floor reached after a success (the reward rose and held, and the late window gave back all of
        that gain) is told as the collapse it is, with the peak's level and step in the evidence
        (h176-mlagents-sac-crawler-with-attacker-learns-then-collapses-for-good: a level of 1,432 at step
        540,000, 47 late): "everything fails" would be the wrong story for a run that had learned. So is a
        success too brief for that level (a tenth of the run) to show: a trailing median over 5 points that
        rose more than 10 noises above the late median and held above half-way for 5 points or more, on a
        reward not exactly 0 on most points (h318-mlagents-ppo-robot-tournament: -0.1 for 8 M steps, 500 to
        900 over 30 of its 668 summaries, -0.1 for the last 24 M); the floor is then dated where it settled
        after the success.
    """,
    related="""
        DEAD_FROM_START fires with it when the floor holds from the first step (a setup problem);
        DEGENERATE_GROUPS sees the tied groups; TRUNCATION_REWARD tells whether the floor is the length
        cap's doing. REWARD_SATURATION is the mirror image.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="R",
    summary="reward constant at its floor (everything fails, or the reward is not wired)",
    key_metrics=("reward_mean", "reward_std", "reward_min", "success_rate"),
    fn=detect,
    knobs=(
        Knob("rel_tol", REL_TOL, "late mean within this fraction of the reward span of the floor, and moving by "
             "no more, = pinned", low=0.0, high=0.5,
             why="\"At the floor\" and \"does not move\" within 2 % of the reward span (the verdict's tolerance). "
                 "unsloth-qwen3-8b-fp8 sits at −7.5 on most steps but reaches +13 inside its late window (late "
                 "range 5.1 of a span of 20.5): not constant, so it is left to DEGENERATE_GROUPS and "
                 "TRUNCATION_REWARD."),
        Knob("spread_gone", SPREAD_GONE, "late reward spread at most this fraction of ceiling - floor = no spread left",
             low=0.0, high=1.0,
             why="grpo-dynamics-csd-pilot-dead has `reward_std` exactly 0 throughout and fires (onset step 1). A "
                 "mean of exactly 0 next to a tied share below 0.8 (live groups hidden behind a placeholder column, "
                 "as the gate-2 run's `csd_logs.json` once read) is not a floor and stays quiet."),
        Knob("sustain", 5, "consecutive logged steps at the floor for the onset estimate", low=1, integer=True,
             why="As the seed card."),
        Knob("success_below", SUCCESS_BELOW, "a success rate whose level never rises above this (and is at most "
             "half of it late) = the task is never solved", low=0.0, high=1.0,
             why="h39-sb3-sac-her-fetchpickplace-reward-floor: success never above 0.083 (objects that start at the "
                 "goal) and 0.03 late, while its return wanders near -50. The sparse runs that learn rise past it "
                 "(h39-sb3-ppo-fetchreach-sparse-learns, h24-baselines-her-ddpg-fetchpickplace-learns)."),
    ),
    what_to_try=WHAT_TO_TRY,
    what_to_try_control=CONTROL_TRIES,
    card=CARD,
)
