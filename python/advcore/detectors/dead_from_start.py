"""DEAD_FROM_START (error, stage R/U): no usable signal, or no update, from the first steps.

Rule: either (signal) the advantage std or its proxy (as ADV_COLLAPSE; advantage units) has an
early-window mean below ``dead_below`` (0.1) and a late-window mean below ``dead_below`` too (the
run never found a signal) while the reward did not rise and hold (a run that learned had a signal,
whatever its advantages' scale), or (update) ``grad_norm`` is at or below ``no_update_below`` (1e-8)
at every point from one in the early window to the end (the first update or two may still move:
h70-dreamerv3-cartpole-actor-frozen logs an actor gradient norm of 6e-4 and 2e-3, then 0 and
1e-10 at its 99 other points; the onset is the first of those). A run too short for windows (2 to 5 logged
points) is judged on every point. Onset: the first logged step (the gradient's: the first point
of its dead stretch). This is a setup problem (reward not wired, prompts all solved or all failed,
rollouts broken), not a collapse. A fifth sign, a warning: the reward never rose over at least
``no_rise_points`` logged points from the run's start (:func:`_no_rise`). Windows: first and last 20 %
of the logged points. A reward mean of
one positive value at every logged point, with no spread between samples, is no signal either (stage
R; at 0 or below it is REWARD_FLOOR's). A third way to see no update: the policy never left its
initialization (:func:`_frozen`: its entropy bit-for-bit constant at every logged point, or within ``FLAT_TOL``
(0.1 %) of its level, or at ln K, a uniform choice
among K <= 10 actions, within ``UNIFORM_TOL`` (0.5 %) at every point, while the reward did not rise and
hold; h14-spinup-vanilla-ac-lunarlander-policy-frozen-entropy-max sits at 1.382 to 1.383 nats, ln 4 =
1.386, for 50 epochs). Not when the update's KL (``kl_step``) is non-zero at most points: the
policy moved, and a Gaussian's entropy, set by its sigma alone, stays constant when the sigma is
fixed (h74-rl-games-amp-humanoid-walk-learns-fixed-sigma-negative-kl: -41.47 at all 619 epochs, its
KL -0.02 to -0.04). The finding's stage is R when the signal is dead and U when only the
update is (``evidence["dead"]``). An ``adv_std`` of 0 is no dead signal when every sample of a step
got one non-zero advantage (:func:`advcore.detectors._windows.one_advantage_per_step`): that is an
advantage not formed within groups, which ADV_REWARD_DECORRELATION judges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import (MEDIAN_ERROR, SUCCESS_NOISE, environment_run, improving_reward, other_rise,
                                      reward_course)
from advcore.detectors._windows import (ADV_NEEDS, POINT_FACT_MIN, Series, adv_signal, change_point, median_spacing,
                                        metric, one_advantage_per_step, plain, reward_spread)
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "DEAD_FROM_START"

WHAT_TO_TRY = (
    "Read a few rollouts and their rewards by hand: it is a setup bug, not a training dynamic.",
    "Check that the reward function is wired (not constant, not 0 for every sample) and that the group size G is > "
    "1.",
    "Check the prompts' difficulty: all-solved (ceiling) or all-failed (floor) groups give no advantage.",
    "Check the rollouts themselves: truncation at the length cap, repeated tokens, a broken generation config (e.g. "
    "gradient checkpointing corrupting TRL 0.14 rollouts in csd-pilot-dead).",
    "When the reward never rose and nothing else fired: check that the update runs at all (the optimizer steps, "
    "the learning rate is above 0, exploration decays) before giving the run more steps.",
)
#: The no-rise sign's tips, in its order: the update first, then the rollouts and the reward (any trainer), then
#: what concerns groups and prompts
NO_RISE_TRIES = (WHAT_TO_TRY[4], WHAT_TO_TRY[0], WHAT_TO_TRY[1], WHAT_TO_TRY[3], WHAT_TO_TRY[2])
#: A signal or an update dead from the start: all but the no-rise sign's own tip (a newcomer read "When the reward
#: never rose and nothing else fired" beside two other findings on f1-strategist-grpo-zero-std)
DEAD_TRIES = WHAT_TO_TRY[:4]

#: On a control or game task (:func:`advcore.detectors._reward.environment_run`).
CONTROL_TRIES = (
    "Run the environment with a random policy and with a hand-written one: if both score alike, the reward or the "
    "episode's end does not depend on the actions (a reward clipped to 0, an episode that ends at its first step).",
    "Check that the update runs at all: the optimizer steps, the learning rate is above 0, the loss reaches the "
    "network, the replay buffer fills and exploration (epsilon, the action noise) decays.",
    "Check the observation: normalised, not constant, and carrying what the reward depends on (a counter or a "
    "target missing from the state makes the return unpredictable).",
    "Compare with a known-good configuration of the same algorithm (RL Zoo, CleanRL) on this environment before "
    "tuning further.",
)

#: A log whose first step lies more than this many median spacings after step 0 was resumed: the no-rise sign
#: does not judge it (verl-ppo-qwen7b-gsm8k-resumed begins at step 101 of a run logged every step, at the 0.95
#: plateau its first 100 steps reached).
RESUMED_SPACINGS = 10

#: An entropy whose lowest and highest logged values are within this share of its level never moved: a
#: policy that learns moves its entropy by percents (h51-proteinfold-ppo-gnn-maxaction-policy-stuck-uniform:
#: 8.1208 to 8.1268 over 180 updates, ln 3384 = 8.1268, the uniform policy over its 3,384 logits).
FLAT_TOL = 1e-3
#: A KL between successive policies (``kl_step``) above this in magnitude says the update moved the policy.
NO_MOVE = 1e-8
#: An entropy within this share of ln K at every logged point is that of the uniform policy over K actions,
UNIFORM_TOL = 0.005
#: for K up to this: the values ln K are then at least 4 % apart (ln 11 / ln 10), so a policy that merely
#: sits near some ln K (a language model's token entropy of 3.75 nats is within 0.5 % of ln 42) is no match.
UNIFORM_MAX_ACTIONS = 10


def _frozen(entropy: Series | None, run: Run) -> str | None:
    """Why the policy never moved from its initialization, or None: its entropy is bit-for-bit the same at
    every logged point (not 0, a placeholder) or within :data:`FLAT_TOL` of its level, or that of the uniform
    policy over K actions (ln K) at every point, over a judgeable run whose reward did not rise and hold."""
    if entropy is None or not entropy.judgeable or improving_reward(run) is not None:
        return None
    lo, hi, n = min(entropy.values), max(entropy.values), len(entropy)
    kl = metric(run, "kl_step")
    if kl is not None and sum(1 for v in kl.values if abs(v) > NO_MOVE) > len(kl) / 2:
        return None  # the update's KL says the policy moved: a Gaussian's entropy is its sigma's, which may be fixed
    if hi != 0.0 and hi - lo <= 1e-9 * abs(hi):
        return f"the policy's entropy was {hi:.6g} at all {n} logged steps: the policy never changed"
    k = round(math.exp(entropy.values[0])) if 0.0 < entropy.values[0] < 20.0 else 0
    if 2 <= k <= UNIFORM_MAX_ACTIONS and all(abs(v - math.log(k)) <= UNIFORM_TOL * math.log(k) for v in entropy.values):
        return (f"the policy's entropy stayed at ln {k} = {math.log(k):.4g} (a uniform choice among {k} actions) at "
                f"all {n} logged steps: the policy never left its initialization")
    if hi != 0.0 and hi - lo <= FLAT_TOL * abs(hi):
        return (f"the policy's entropy stayed between {lo:.6g} and {hi:.6g} (within {100 * FLAT_TOL:g} %) at all {n} "
                "logged steps: the policy never changed")
    return None


def _no_spread(run: Run) -> bool:
    """No reward spread between samples: none logged, or 0 at every logged point."""
    spread = reward_spread(run)
    return spread is None or max(spread.values) == 0.0


def _zero_from(values: tuple[float, ...], bar: float) -> int:
    """The index from which every value is at or below ``bar`` (``len(values)`` when the last is above it)."""
    i = len(values)
    while i > 0 and values[i - 1] <= bar:
        i -= 1
    return i


def _resumed(series: Series) -> bool:
    """The log begins more than ``RESUMED_SPACINGS`` median step spacings after step 0: the run was resumed
    (or its start not logged), and whatever it learned before is not in the log."""
    return series.steps[0] > RESUMED_SPACINGS * max(median_spacing(series.steps), 1)


#: A reward course shorter than this many logged points is short for the no-rise sign: its early window of 4 to 11
#: points cannot show a rise before a fall, so a fall from the start is a collapse's to tell (UPDATE_UNSTABLE,
#: REWARD_FLOOR), not "no learning" (calibration, batches 1-98: h333-mlagents-ppo-curiosity-1.0-camp-kawanakwa-killer
#: learns to -0.3 and falls to -15 over 42 summaries; h398's GAIL car, 50 -> 199 -> -35 over 25).
SHORT_COURSE = 60


def _no_rise(run: Run, min_points: int) -> Finding | None:
    """The fifth sign, a warning: over at least ``min_points`` logged points from the run's start, the
    reward never rose (:meth:`advcore.detectors._reward.RewardCourse.never_rose`)."""
    course = reward_course(run)
    if (course is None or len(course.series) < min_points or _resumed(course.series)
            or not (course.never_rose() or course.never_regained_start())):
        return None
    if other_rise(run) is not None:  # learning the return does not show
        return None
    s = course.series
    start, k = course.start
    highest = max(course.level[course.w - 1:])
    # a reward that fell from its start is dated by the change down (h171-handwritten-cacla-pendulum-collapses-
    # below-random-and-stays: about -1,300 over the first 100 episodes, -1,620 from episode 200 on)
    fell = start - course.late > SUCCESS_NOISE * MEDIAN_ERROR * course.noise * math.sqrt(1 / k + 1 / len(s.late()))
    if fell and min(s.values[1:k], default=-math.inf) - s.values[0] > SUCCESS_NOISE * course.noise:
        # the start itself was learned (every later point of it far above the first), so the fall lost what was
        # learned: a collapse for the update's detectors to tell, not "no learning" (h419-mlagents-ppo-roguelike-
        # scavenger-state-sensor7: 55 at the first summary, 102 to 129 at the next four, about 37 for the last 800k
        # steps; a noisy first episode is no such start: h171's pendulum, -1,556 then as low as -1,830)
        return None
    if fell and len(s) < SHORT_COURSE:
        return None
    onset = (change_point(s.values, fall=True) or 0) if fell else 0
    evidence: dict[str, object] = {
        "dead": "no_rise", "metric": s.name, "points": len(s), "start": start, "start_points": k,
        "early_median": course.early, "late_median": course.late, "highest_level": highest,
        "noise": course.noise, "fell": fell, **s.where(onset)}
    course_text = (f"it fell from {course.start_text()} to a median of {course.late:.4g} late, the change down at "
                   f"step {s.steps[onset]}" if fell else
                   f"{course.start_text()}; a median of {course.early:.4g} early and {course.late:.4g} late")
    what = "fell from where it started and never came back" if fell else "never rose above where it started"
    return Finding(
        ID, "warn", "R", s.steps[onset], evidence,
        f"No learning shows in {len(s)} logged steps: the reward {what} ({course_text}; its highest level, a "
        f"median over {course.w} logged steps, {highest:.4g}, against a step-to-step noise of {course.noise:.3g}).",
        NO_RISE_TRIES,
    )


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate DEAD_FROM_START on ``run`` with resolved ``knobs``."""
    dead_below, no_update = float(knobs["dead_below"]), float(knobs["no_update_below"])
    sig = adv_signal(run)
    grad = metric(run, "grad_norm")
    entropy = metric(run, "entropy")
    reward = metric(run, "reward_mean")
    if sig is None and grad is None and entropy is None and reward is None:
        return NotEvaluable(ID, (*ADV_NEEDS, "or grad_norm, or entropy, or reward_mean"))
    reasons: list[str] = []
    evidence: dict[str, object] = {}
    # windows on a judgeable series; on a shorter one (2 to 5 points) every point: a fact, not a trend
    signal_dead = update_dead = False
    if sig is not None and len(sig) >= POINT_FACT_MIN:
        early, late = (sig.early_mean(), sig.late_mean()) if sig.judgeable else (max(sig.values), max(sig.values))
        evidence.update({"metric": sig.name, "early_mean": early, "late_mean": late, "dead_below": dead_below})
        if sig.proxy:
            evidence["proxy"] = sig.name
        constant = one_advantage_per_step(run) if sig.name == "adv_std" else None
        if constant is not None:  # every sample of a step got one non-zero advantage: a signal, not formed in groups
            evidence["one_advantage_per_step"] = len(constant)
        elif early < dead_below and late < dead_below and improving_reward(run) is None:
            # a reward that rose and held had a signal to learn from, whatever the advantages' scale
            # (h124-dreamerv3-crafter-wood-bonus-eps1: advantages of std 0.06 under DreamerV3's return
            # normalization, a per-step reward rising 0.011 -> 0.041)
            signal_dead = True
            reasons.append(f"{plain(sig.name)} was {early:.3g} early and {late:.3g} late" if sig.judgeable
                           else f"{plain(sig.name)} was at most {early:.3g} at all {len(sig)} logged steps")
    if (not signal_dead and reward is not None and reward.judgeable and min(reward.values) == max(reward.values)
            and reward.values[0] > 0.0 and _no_spread(run)):
        # one positive reward value at every logged step, with no spread between samples: whatever the policy
        # did scored the same (h104-handwritten-a2c-ca-pattern-reward-pinned-2000: 2000.0 at all 26 episodes);
        # at 0 or below it is REWARD_FLOOR's (advcore.detectors._reward.reward_level)
        signal_dead = True
        evidence["reward_constant"] = reward.values[0]
        reasons.append(f"the reward was {reward.values[0]:.6g} at all {len(reward)} logged steps")
    grad_from = 0
    if grad is not None and len(grad) >= POINT_FACT_MIN:
        # the first point from which every grad_norm is at or below the bar: dead from the start when it
        # lies in the early window (a first update or two may still move)
        grad_from = _zero_from(grad.values, no_update)
        if grad_from < (len(grad.early()) if grad.judgeable else 1):
            gmax = max(grad.values[grad_from:])
            evidence.update({"grad_norm_max_since": gmax, "grad_norm_zero_from_point": grad_from + 1})
            update_dead = True
            since = f" from logged point {grad_from + 1} on" if grad_from else ""
            reasons.append(f"grad_norm was {gmax:.3g} at most{since}")
    frozen = None if signal_dead or update_dead else _frozen(entropy, run)
    if frozen is not None:
        evidence["policy_frozen"] = True
        reasons.append(frozen)
    if not reasons:
        points = knobs["no_rise_points_control"] if environment_run(run) else knobs["no_rise_points"]
        return _no_rise(run, int(points))
    # One stage from the evidence: no signal is the reward's (R); a signal with no update is the update's (U).
    stage: Literal["R", "U"] = "R" if signal_dead else "U"
    series = ((sig if "reward_constant" not in evidence else reward) if stage == "R"
              else grad if grad is not None and frozen is None else entropy)
    assert series is not None
    for name in ("reward_mean", "reward_std"):
        s = metric(run, name)
        if s is not None:
            evidence[f"{name}_first"] = s.values[0]
            evidence[f"{name}_run_mean"] = s.mean()
    evidence["dead"] = "signal" if stage == "R" else "update"
    what = ("a setup problem, not a collapse" if stage == "R" else
            "the updates never changed the policy: a setup problem in the update" if frozen is not None else
            "the batch carries signal but nothing reaches the parameters: a setup problem in the update")
    onset = grad_from if series is grad else 0
    evidence.update(series.where(onset))
    return Finding(
        ID, "error", stage, series.steps[onset], evidence,
        f"No usable learning {'signal' if stage == 'R' else 'update'} from the first logged step ("
        + "; ".join(reasons) + f"): {what}.",
        DEAD_TRIES,
    )


CARD = Card(
    tagline="there never was a signal",
    key_metrics_note="`adv_std` or its proxies",
    happening="""
        The run had no usable learning signal, or made no update, from its first logged step: the reward
        is not wired, every prompt is solved or failed, the rollouts are broken (a token loop, every
        completion at the length cap) or the optimizer never steps. This is a setup problem, not a
        collapse, and its fix is in the configuration, not in the training dynamics.
    """,
    looks_like="""
        Everything flat from step 1: `reward_std` exactly 0 (or `frac_reward_zero_std` ≈ 1) from the first
        log line to the last, often `reward_mean` constant, `grad_norm` 0 or tiny, completions at the cap.
    """,
    decides="""
        Either (signal) the advantage std or its proxy (as ADV_COLLAPSE: `adv_max - adv_min`,
        `sqrt(1 - zero_variance_group_frac)`, `1[reward_std > 1e-6]`, named in `evidence["proxy"]`) has an
        early-window mean **and** a late-window mean below `dead_below` (it never found a signal; a slow
        start that recovers is not dead), unless the reward rose and held: a run that learned had a
        signal, whatever its advantages' scale (h124-dreamerv3-crafter-wood-bonus-eps1: an advantage std
        of 0.06 under DreamerV3's return normalization, the per-step reward rising 0.011 -> 0.041), or (update) `grad_norm` is at or below `no_update_below` at every
        point from one in the early window to the end (h70-dreamerv3-cartpole-actor-frozen: an actor
        gradient norm of 6e-4 and 2e-3 at its first two points, then 0 or 1e-10 at the other 99). A run
        too short for windows (2 to 5 logged points) is judged on every point instead: `grad_norm` exactly
        0 at all 4 log points of trl-dapo-vlm-181457 while `reward_std` is 1.2 needs no trend. Onset: the
        first logged step, or for the gradient the first point of its dead stretch.

        A third sign of no update: the policy never left its initialization. Its entropy is bit-for-bit
        the same at every logged point (h17-sb2-ppo2-prsi-selfplay-uniform-policy-frozen: -0.3496513 at
        all 268 updates, its approximate KL exactly 0), or within `FLAT_TOL` (0.1 %) of its level between
        its lowest and highest point (h51-proteinfold-ppo-gnn-maxaction-policy-stuck-uniform: 8.1208 to
        8.1268 over 180 updates, the uniform policy over 3,384 logits), or that of a uniform choice among K ≤ 10 actions,
        ln K within 0.5 %, at every point (for larger K the values ln K lie closer than that: a language
        model's token entropy near 3.75 nats is within 0.5 % of ln 42) (h14-spinup-vanilla-ac-lunarlander-policy-frozen-entropy-max:
        1.382 to 1.383 nats, ln 4 = 1.386, over 50 epochs), on a judgeable run whose reward did not
        rise and hold, and whose update KL (`kl_step`), when logged, is not above `NO_MOVE` (1e-8) in
        magnitude at most points: a Gaussian policy with a fixed sigma keeps a constant entropy while its
        mean learns (h74-rl-games-amp-humanoid-walk-learns-fixed-sigma-negative-kl: -41.47 at all 619
        epochs, the KL -0.02 to -0.04). Stage U (`evidence["policy_frozen"]`).

        A fourth sign of no signal: the reward mean is one positive value at every logged point of a
        judgeable run, with no spread between samples (none logged, or 0): whatever the policy did scored
        the same (h104-handwritten-a2c-ca-pattern-reward-pinned-2000: 2000.0 at all 26 episodes; stage R,
        `evidence["reward_constant"]`). At 0 or below, one value held from the first step is REWARD_FLOOR's.

        The finding has one stage, from the evidence: **R** when the signal is absent (no signal, so no
        update is expected either: grpo-dynamics-csd-pilot-dead has every reward, `grad_norm` and `kl`
        exactly 0), **U** when only the update is dead while the rewards vary
        (`evidence["dead"]` says which).

        A fifth sign, a **warning** at stage R (`evidence["dead"] == "no_rise"`): over at least
        `no_rise_points` logged points from the run's start (`no_rise_points_control` on a control or game task,
        whose policy starts from a random initialization), the reward never rose. Not a rise of the
        level, nor of the windows, nor inside the first window (`RewardCourse.rose`); the late fifth's
        median and mean are at most one standard error above the early fifth's (for the medians 1.2533 x
        the step-to-step noise x sqrt(2 / k), for the means the windows' pooled standard deviation x
        sqrt(2 / k)), or they rose by less than 0.15 of the windows' pooled standard deviation, which a long
        run's standard error no longer asks for (h273-handwritten-dqn-carrier-on-off-reward-independent-
        of-action-10k-episodes-flat: 1.6 standard errors over windows of 2,000 episodes, 0.05 of the
        spread; h310-handwritten-sac-gae-pusher-v5-objective-broken: a median 0.11 of it higher; the healthy
        runs closest to the bar rose by 0.17 and 0.18 of it); and no trailing-median level after the first
        window is more than 3 noises above the start (the median of the first 5 points, or of the first 1 %
        when that is more), nor more than 2 % of what the reward spans (a return pinned near one value:
        h323-sb3-tqc-mujoco-foosball-ball-never-moves, 2,350 +- 1.5 at every episode). Or the reward fell below its start and never came back: its late median 5 to 10
        step-to-step noises below the start (never-learners drift 3 to 5, a collapse falls 10 or more) and
        no level after the first window at the start
        (h314-mlagents-ppo-pong-movetheplayer-return-falls-below-start-and-stays: about -0.74 over the first
        summaries, under -0.95 at every one after 100k steps, while its late median, -1.09, lies above the
        early -1.18), on a course of 60 logged points or more (`SHORT_COURSE`: a shorter one's early window of a
        few points cannot show a rise before the fall, a collapse's to tell). In either case a logged
        `success_rate` did not rise either (h249-handwritten-dueling-ddqn-grid-navigation-return-peaks-ep374-
        then-falls-2-7x: success 0.34 -> 0.70 by tenth while the return's median fell), nor a self-play
        rating, `elo` (in a zero-sum game the return stays near 0 whatever is learned: h304-mlagents-poca-
        selfplay-soccer-2v2-elo-1200-to-1490, a group return near -0.1 throughout), nor a validation score,
        `val_score` (5 evaluations or more ranking with the step at Spearman 0.9, the last above the
        first; from 20 evaluations, risen as a reward does, SB3's `eval/mean_reward` among them). A bar of 1.5
        standard errors would also warn on a healthy
        slow learner (h69-unsloth-trl-grpo-qwen3-4b-mmlupro-physics-flat-but-alive, 1.29 for the means); at
        one, a run with no trend is caught about seven times in ten, a conservative claim. A log that begins
        more than 10 median spacings after step 0 is resumed and not judged (verl-ppo-qwen7b-gsm8k-resumed
        begins at step 101, at its 0.95 plateau). It says nothing was learned, not why: every other finding
        leads it in the verdict (h20-ppg-pendulum-never-learns: 639 returns, a median of -1212 over the
        first fifth and -1322 over the last). A reward whose late median lies more than 3 standard errors
        below its start (the two medians' 1.2533 x the noise x sqrt(1 / k_start + 1 / k_late)) fell: the
        finding says so and dates it by the change down of the series (least squares, Hinkley 1970), not
        the first step (h171-handwritten-cacla-pendulum-collapses-below-random-and-stays: a median of -1219
        over the first 15 episodes, -1589 late, the change down at episode 162). Its tips put the update
        first, then the rollouts and the reward: the run need not be a language model's.

        An `adv_std` of 0 is not a dead signal when `adv_mean` is non-zero on most of those steps:
        every sample of a step got one non-zero advantage (deepretrieval-grpo-0p8b-inverted-adv,
        +-0.75 to 0.92), which no group-relative estimator gives; ADV_REWARD_DECORRELATION judges it.
    """,
    related="""
        ADV_COLLAPSE refuses these runs through its healthy-early guard; DEGENERATE_GROUPS usually fires
        alongside with the onset at the first step; UPDATE_SUPPRESSED covers signal present but no update.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="R/U",
    summary="no usable signal or no update from the first steps: a setup problem, not a collapse",
    key_metrics=("adv_std", "zero_variance_group_frac", "reward_std", "grad_norm"),
    fn=detect,
    knobs=(
        Knob("dead_below", 0.1, "early and late advantage std (or proxy) below this = never had signal", low=0.0,
             why="The seed's `collapse_below`, so a run is either healthy-then-collapsed (ADV_COLLAPSE) or never "
                 "healthy (here). f1-strategist: 0.028 early, 0.007 late; unsloth-qwen3-vl: 0.08 / 0.0; the llama31 "
                 "user run, tied for its first ten steps, is 0.42 early and stays quiet."),
        Knob("no_rise_points", 200, "a reward that never rose over at least this many logged points = no learning",
             low=10, integer=True,
             why="Calibration runs (batches 1-37 and the shared logs): at 200 the sign warns on 36 runs expected lost "
                 "(h20-ppg-pendulum-never-learns, h190-sb3-td3-lunarlandercontinuous-100k-never-learns-crashes, ...) "
                 "and on no healthy run; at 100 it also warns on h36-tinker-rlvr-rubric-qwen3-4b-slow-learner (113 "
                 "steps whose rise the windows cannot yet show)."),
        Knob("no_rise_points_control", 20, "on a control or game task, the fewest logged points for the no-rise sign",
             low=10, integer=True,
             why="A control policy starts from a random initialization, a language model from a pretrained one that "
                 "may hold its level: of the calibration runs (batches 1-94) whose reward never rose over 60 to 200 "
                 "logged points, the 10 on control tasks were all expected lost (h409-mlagents-ppo-movetogoal-"
                 "obstacle-testparams2: -59 at 100 summaries; h363, h370, h376, ...) and the 7 language-model runs "
                 "healthy (h335-trl-grpo-qwen25-15b-gridiron-nfl, flat at 0.46 for 122 steps; h179, h236, ...). "
                 "Over 20 to 59 points (batches 1-98): 28 control runs never rose, none of them among the 70 "
                 "healthy ones that short (h309-mlagents-ppo-boxing-attack-agent-retuned-penalties: -5,203 -> "
                 "-5,111 over 38 summaries; h323-sb3-tqc-mujoco-foosball, 49 episodes); below 20, one."),
        Knob("no_update_below", 1e-8, "grad_norm at or below this at every early and late point = no update", low=0.0,
             why="grpo-dynamics-csd-pilot-dead logs exactly 0; f1-strategist's LoRA grad norm of ~0.002 is small "
                 "but real."),
    ),
    what_to_try=WHAT_TO_TRY,
    what_to_try_control=CONTROL_TRIES,
    card=CARD,
)
