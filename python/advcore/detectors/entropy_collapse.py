"""ENTROPY_COLLAPSE (warn, stage U): the policy's entropy fell to a small fraction of its early level.

Rule (``entropy``: mean per-token entropy of the policy in nats, as TRL ``entropy``, verl
``actor/entropy`` or its older ``actor/entropy_loss``, OpenRLHF ``policy_entropy``; SB3's
``train/entropy_loss`` read with its sign flipped by the alias table):

* *relative*: the early-window mean is above ``floor`` and the late-window mean, or the median of
  the last :data:`END_SHARE` (10 %) of the logged points (at least ``sustain``), is below
  ``fraction`` (0.25) times it (the end alone catches an entropy still falling when the log stops:
  h137-tinker-multitask-qwen3-30b-entropy-falls-reward-flat goes from 0.321 to a late mean of 0.095,
  30 %, but to a median of 0.059, 19 %, over its last 18 points; an entropy that is negative anywhere
  (beyond :data:`~advcore.detectors._windows.ENTROPY_ROUNDING`, 1e-6 nats: float32 rounding of a
  deterministic policy's 0), or one logged beside the policy's ``action_std`` (SB3 writes ``train/std`` for Gaussian
  policies only), is a differential entropy of a
  continuous policy, where a share of the early level means nothing: not judged;
  sb3-invertedpendulum-dr-solved goes from 1.2 to -0.42 as its Gaussian narrows on a solved task;
  but a first logged point alone below 0 before every later one at or above 0 is a stray and is
  dropped: a Dou Dizhu PPO log's entropy proxy reads -19.3 at epoch 0, 0.62 at epoch 1, 0.0000
  from epoch 41);
* *absolute*: otherwise, the late-window mean is below ``floor`` (0.01 nats per token) and the
  entropy is that of a discrete (token) distribution, i.e. never negative and not from SB3, whose
  policies are mostly Gaussian (a differential entropy: it can sit near or below 0 with a healthy
  spread), unless SB3's late window sits at 0 within ``ENTROPY_ROUNDING``, where no Gaussian's does. This catches a log that
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
31 to 33; trl-dapo-vlm-120531 crosses at log point 13 (step 130: TRL logged every 10 steps), where
its level also drops (0.109 -> 0.048, 27 % of its fall), so its onset stays there; a steady linear
decline keeps its crossing.

Windows: first and last 20 % of the logged points (at least 3 each; 6 points to be judged).

Sharpening is not collapse. When the reward rose and held its gain
(:func:`advcore.detectors._reward.improving_reward`: a success above 3 x its step-to-step noise,
at most a quarter of it given back) and the advantages (or their group proxy) kept at least
``CONTRAST_KEPT`` (0.4) of their early spread where they are logged, the finding is ``info``: the
policy sharpened as it learned (not when the reward stopped being logged before the entropy's late
window: no episode ended any more, h30-mlagents-ppo-cubeagent3-lr1e3-entropy-collapse). A rise that
only the windows' medians show through per-episode noise
(:attr:`advcore.detectors._reward.RewardCourse.median_rose`) counts too when the entropy fell to no
less than ``NOISY_RISE_DEPTH`` (half) of the cut, and so does a rise from the reward's start inside the early window
that the late window kept (:attr:`advcore.detectors._reward.RewardCourse.rose_first`; the rise is then told from
the start).
h13-cs336-grpo-reinforce-baseline-learns-low-entropy falls from
0.19 to 0.03 nats (16 %) while its reward goes 0.49 -> 0.77 and its advantage std keeps 72 %; the
lab's entropy fault also raises the training reward, but its groups tie as the policy turns
deterministic (advantage std 0.83 -> 0.25, 30 % at most), and stays a warning.

Without an entropy metric, a return frozen below where it was is the footprint of a deterministic
policy (:meth:`advcore.detectors._reward.RewardCourse.frozen_tail`: one exact value on all but 5 % of at
least the last 10 points and a quarter of the run, after a reward that moved at most steps, below its
peak level and above its lowest value): a warning, rule ``frozen_return``, dated from the first frozen
point (h216-sb3-a2c-mutation-grid-learns-then-locks-onto-constant-500, an A2C without entropy bonus: a
level of 830 by episode 13, then exactly 500, "test without moving", on 70 of the last 71 episodes). A
return that did not freeze says nothing of the entropy: still not evaluable.

An entropy that is exactly 0 on every logged step is not a measurement but a placeholder (a
hand-written loop that logs ``entropy: 0.0``, countdown-qwen3-06b-handgrpo): the detector is then
not evaluable. A constant that is not 0 is a fact (a uniform policy over 7 actions holds ln 7,
h3-baselines-a2c-minigrid-multiroom-dead) and is judged by the rules above.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

from advcore.detectors._base import BEGAN_BEFORE_LOG, THRESHOLD, Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import improving_reward, reward_course
from advcore.detectors._windows import (ENTROPY_ROUNDING, Series, adv_signal, change_point, differential, metric,
                                        onset_index)
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "ENTROPY_COLLAPSE"
#: A change point dates the onset when the level drops there by at least this share of the whole fall.
JUMP_SHARE = 0.2
#: Advantages (or their group proxy) that keep at least this share of their early spread still carry contrast.
#: The collapses whose reward rose keep at most 0.30 (the lab's entropy fault, GRPO and RLOO: 0.04 to 0.30;
#: h26-cs285-hw4-grpo-format-copy-saturates 0.25, h28-cs285-sp26-reinforce-format-copy-saturates 0.23); the
#: runs that sharpen as they learn keep 0.46 or more (the lab's hard negative high_plateau, three times the
#: learning rate: 0.46 to 0.64, its entropy at 25 % to 34 % of its start; h13-cs336-grpo-reinforce-baseline-
#: learns-low-entropy 0.72).
CONTRAST_KEPT = 0.4
#: A reward whose late median rose beyond the error of the two windows' medians (but not above 3 x its
#: step-to-step noise: per-episode returns) is taken as learning for an entropy that fell to no less than
#: this share of the cut: h12-handwritten-reinforce-meal-planning-slow-learner, returns 2.2 -> 11.8 with a
#: noise of about 8, entropy at 25 % of its start (21 % at the end); not h67-doudizhu-transformer-ppo-
#: entropy-collapse-plateau, whose entropy reaches 0.0000 while its reward plateaus.
NOISY_RISE_DEPTH = 0.5
#: The end of a log judged on its own (the median of its last points): an entropy still falling when the log
#: ends has a late-window mean above the cut while its last points are far below it.
END_SHARE = 0.1
#: A Gaussian policy's (differential) entropy that fell by at least this many nats, early window to late, while
#: the reward did not rise (neither :attr:`~advcore.detectors._reward.RewardCourse.rose` nor succeeded): the action distribution
#: narrowed and nothing was learned (h288-mlagents-ppo-gail-bc-kart-racing-demo4-entropy-collapses-never-finishes-
#: a-lap-2M: 0.008 -> -6.46 under a behavioural-cloning term; h61-sb3-a2c-antbullet-notebook-tail-unstable-std-
#: collapsed: -5.66 -> -7.14). Of the 44 calibration runs with a differential entropy, the 39 whose reward rose
#: fell by a median of 1.6 nats (up to 37) as they learned and are not judged by it; of the 5 that did not rise,
#: these two fell, the others rose or fell by 0.6 nats or less.
GAUSSIAN_DROP = 1.0


def _mean(xs: tuple[float, ...]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


#: The last thing to try after a collapse, on any task.
_RESUME = ("Resume from a checkpoint before the collapse with these changes (before the onset step; before the log's "
           "first step when the verdict says the collapse came before it); a collapsed policy rarely recovers by itself.")

WHAT_TO_TRY = (
    "Read a few late rollouts: one repeated answer template means the policy collapsed onto what the reward pays "
    "for (check the reward for a format-only or length shortcut).",
    "Keep exploration alive: an entropy bonus (`entropy_coeff`), a higher sampling temperature, DAPO's clip-higher "
    "(a larger upper clip range keeps low-probability tokens alive), a lower learning rate or PPO clip range.",
    "Keep the policy near its reference: a KL penalty (or a larger `kl_coef`) slows the drift onto one mode.",
    _RESUME,
)

#: On a control or game task (:func:`advcore.detectors._reward.environment_run`).
CONTROL_TRIES = (
    "Watch a few late episodes: a policy that repeats one action or one trajectory has stopped exploring (a "
    "return frozen at one value is its sign).",
    "Keep exploration alive: an entropy bonus (`ent_coef`, 0 by default in SB3's A2C and PPO), a larger initial "
    "action noise (`log_std_init`), or, for a value-based agent, an epsilon that does not decay so far.",
    "Lower the learning rate or the PPO clip range: large updates make a policy deterministic before it has found "
    "the task.",
    _RESUME,
)


#: The onset's run of points below the cut holds at least this share of the logged points besides ``sustain``.
SUSTAIN_SHARE = 0.01


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate ENTROPY_COLLAPSE on ``run`` with resolved ``knobs``."""
    s = metric(run, "entropy")
    if s is None:
        return _frozen_return(run, int(knobs["sustain"])) or NotEvaluable(ID, ("entropy",))
    if not s.judgeable:
        return None
    if all(v == 0.0 for v in s.values):  # a measured entropy is never exactly 0 at every step: a placeholder
        return NotEvaluable(ID, ("entropy that is measured (it is exactly 0 on every logged step)",))
    fraction, floor, sustain = float(knobs["fraction"]), float(knobs["floor"]), int(knobs["sustain"])
    stray_first = s.values[0] < 0.0 <= min(s.values[1:])
    if stray_first:  # a discrete entropy can't be negative: a first point alone below 0 is a stray, not a Gaussian
        s = Series(s.name, s.steps[1:], None if s.phases is None else s.phases[1:], s.values[1:], s.proxy)
        if not s.judgeable:
            return None
    early, late = s.early_mean(), s.late_mean()
    # SB3's policies are mostly Gaussian, but a late window at 0 within float rounding is a deterministic categorical
    # policy's: a differential entropy does not sit at 0 (h327-sb3-ppo-airsim-drone-lr-0.1: 1.5e-15 from the second
    # update on, 7 discrete moves)
    discrete = run.trainer != "sb3" or all(0.0 <= v <= ENTROPY_ROUNDING for v in s.late())
    end = statistics.median(s.values[-max(sustain, math.ceil(END_SHARE * len(s))):])
    if differential(s, run):
        # a Gaussian policy's entropy: no fraction of it means "collapsed", but a fall of whole nats while the
        # reward did not rise narrowed the policy without teaching it anything
        course = reward_course(run)
        if course is None or course.rose or course.succeeded or early - late < GAUSSIAN_DROP:
            return None
        rule, cut = "differential", early - GAUSSIAN_DROP
    elif early > floor and min(late, end) < fraction * early:  # fallen by the late window, or still falling at the end
        rule, cut = "relative", fraction * early
    elif discrete and late < floor:
        rule, cut = "absolute", floor
    else:
        return None
    # a long log of noisy per-update values dips below the cut for a few points long before it stays there: a
    # collapse lasts a share of the run (h332-sb3-ppo-atari-galaxian: 5,860 updates, five below the cut at 835k,
    # the policy deterministic from 2.75M)
    crossing = onset_index(s.values, lambda v: v < cut, max(sustain, math.ceil(SUSTAIN_SHARE * len(s))))
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
        THRESHOLD: cut,
        "early_mean": early,
        "late_mean": late,
        "end_median": end,
        "late_over_early": late / early if early > 0 else None,
        "fraction": fraction,
        "floor": floor,
        "first_logged_step": s.steps[0],
        "stray_first_point_dropped": stray_first,
        "below_cut_step": s.step_at(crossing),
        **s.where(idx),
    }
    improving = improving_reward(run)
    course = reward_course(run)
    if (improving is None and course is not None and course.median_rose and rule == "relative"
            and min(late, end) >= NOISY_RISE_DEPTH * cut):
        # a rise the windows' medians show through per-episode noise: learning, for a fall near the cut
        improving = {"early_median": course.early, "late_median": course.late}
    if improving is None and course is not None and not course.succeeded and course.rose_first:
        # a rise inside the early window, held to the end: the early median is already the learned level
        # (h374-sb3-ppo-agrika-tractor-fleet: 361 over the first 5 updates, 1,097 early, 1,153 late, entropy 0.90
        # -> 0.04 on a task whose best policy is nearly one action a day)
        improving = {"early_median": course.start[0], "late_median": course.late}
    reward = metric(run, "reward_mean")
    if improving is not None and reward is not None and reward.steps[-1] < s.steps[len(s) - len(s.late())]:
        improving = None  # the reward stopped being logged before the entropy's late window: it did not hold
    adv = adv_signal(run)
    kept = None if adv is None or adv.early_mean() <= 0 else adv.late_mean() / adv.early_mean()
    if improving is not None and (kept is None or kept >= CONTRAST_KEPT):
        # the policy sharpened as it learned: the reward rose and held, and the samples still differ
        evidence.update(improving)
        if adv is not None and kept is not None:
            evidence.update({"contrast": adv.name, "contrast_late_over_early": kept})
        held = "" if kept is None else f", and the advantages kept {100 * kept:.0f}% of their early spread"
        message = (f"Policy entropy fell from {early:.3g} early to {late:.3g} late while the reward rose from "
                   f"{improving['early_median']:.4g} to {improving['late_median']:.4g} and held it{held}: the policy "
                   "sharpened as it learned; nothing says exploration was lost yet.")
        return Finding(ID, "info", "U", s.step_at(idx), dict(evidence), message, WHAT_TO_TRY)
    if rule == "differential":
        message = (f"Policy entropy (a Gaussian policy's, in nats) fell from {early:.3g} early to {late:.3g} late while "
                   "the reward did not rise: the action distribution narrowed without the policy learning anything, "
                   "and it explores less and less.")
    elif rule == "relative" and late < cut:
        message = (f"Policy entropy fell from {early:.3g} early to {late:.3g} late ({100 * late / early:.0f}% of its "
                   "early level): the policy has become nearly deterministic and stopped exploring.")
    elif rule == "relative":
        message = (f"Policy entropy fell from {early:.3g} early to a median of {end:.3g} over the last "
                   f"{100 * END_SHARE:.0f}% of the logged steps ({100 * end / early:.0f}% of its early level), and was "
                   "still falling when the log ends: the policy is becoming deterministic and has stopped exploring.")
    else:
        unit = "per action" if run.trainer == "sb3" else "per token"
        message = (f"Policy entropy is {late:.3g} nats {unit} late in the run (below {floor:g}): the policy "
                   "samples nearly one answer every time and no longer explores.")
        if idx == 0:
            evidence[BEGAN_BEFORE_LOG] = True
            message += (f" It was already that low at the first logged step ({s.steps[0]}): the collapse happened "
                        "before this log begins.")
    return Finding(ID, "warn", "U", s.step_at(idx), dict(evidence), message, WHAT_TO_TRY)


def _frozen_return(run: Run, sustain: int) -> Finding | None:
    """Without an entropy metric, the reward's footprint of a deterministic policy: a return frozen at one
    exact value below the level it had reached (:meth:`advcore.detectors._reward.RewardCourse.frozen_tail`);
    None when the reward did not freeze (which says nothing of the entropy: still not evaluable)."""
    course = reward_course(run)
    frozen = None if course is None else course.frozen_tail()
    if course is None or frozen is None or len(course.series) - frozen[0] < sustain:
        return None
    first, value, off = frozen
    s, points = course.series, len(course.series) - frozen[0]
    peak, peak_step = course.level[course.peak], course.peak_step
    evidence: dict[str, object] = {
        "metric": "reward_mean", "source": run.sources.get("reward_mean"), "rule": "frozen_return",
        "frozen_value": value, "frozen_points": points, "points_off": off, "peak_level": peak,
        "peak_step": peak_step, "first_logged_step": s.steps[0], **s.where(first)}
    message = (f"No entropy is logged, but the return repeats exactly {value:.6g} on {points - off} of the last "
               f"{points} logged points, from step {s.steps[first]}, below the level of {peak:.4g} it "
               f"held around step {peak_step}: the policy has become deterministic on one behaviour, worse than one "
               "it had found, and stopped exploring.")
    return Finding(ID, "warn", "U", s.steps[first], evidence, message, WHAT_TO_TRY)


CARD = Card(
    tagline="the policy stopped exploring",
    happening="""
        The policy's per-token entropy fell to a small fraction of where it started: it now puts almost
        all its probability on one continuation. Every sample of a group then looks alike, the rewards
        tie, and the run stops learning; often the policy has collapsed onto a template that the reward
        pays for (a format bonus, a short answer) rather than onto the task. Some sharpening is normal
        and healthy as a policy learns; a fall to a few percent of the early level is not.
    """,
    looks_like="""
        TRL `entropy`, verl `actor/entropy` (older verl: `actor/entropy_loss`, which is the entropy
        itself), OpenRLHF `policy_entropy`, SB3 `train/entropy_loss` (minus the entropy; the alias table
        flips its sign). trl-dapo-vlm-120531: 0.956 at the first log point, 0.11 by the tenth, 0.004 to
        0.08 from then on, while completions shrink from 53 tokens to about 4 (a bare answer letter) and
        most groups tie. tinyzero-ppo-entropy-collapse: 1.21, 1.34, 0.91, 0.79 at steps 2, 52, 92, 122,
        then 0.003 to 0.008 at steps 383 to 399, with the rollouts repeating one template.
    """,
    decides="""
        Windows are the first and last 20 % of the logged points (at least 3; 6 points to be judged).

        - *Relative*: the early-window mean is above `floor` and the late-window mean, or the median of
          the last 10 % of the logged points (at least `sustain`), is below `fraction` × the early mean
          (the end alone: an entropy still falling when the log stops,
          h137-tinker-multitask-qwen3-30b-entropy-falls-reward-flat: 0.321 early, a late mean of 0.095,
          a median of 0.059 over its last 18 points, while its reward stays flat). An entropy that is
          negative anywhere (by more than 1e-6 nats: ML-Agents logs -1.19e-07, float32 rounding of 0,
          for a policy turned deterministic, h183-mlagents-ppo-2048-illegal-move-penalty-entropy-collapse)
          or one logged beside `action_std` (SB3's `train/std`, a Gaussian's: h341-sb3-ppo-climbbot-two-arm-reach,
          8.5 -> 1.0 over six action dimensions as the std went 1.0 -> 0.26)
          is the differential entropy of a continuous (Gaussian) policy, where a share of the early
          level means nothing: not judged by a share
          (sb3-invertedpendulum-dr-solved narrows from 1.2 to -0.42 on a solved task), but by a fall of at
          least 1 nat (early window to late) while the reward did not rise
          (h288-mlagents-ppo-gail-bc-kart-racing-demo4-entropy-collapses-never-finishes-a-lap-2M: 0.008 ->
          -6.46, the return flat around -1,000 as every episode hits its time limit). A first
          logged point alone below 0 (every later one at or above 0) is a stray, dropped before judging. Onset: the first of `sustain` consecutive points below that cut.
        - *Absolute*: otherwise, the late-window mean is below `floor` nats per token, for a discrete
          (token) distribution only: never negative and not from SB3, whose policies are mostly Gaussian
          (a differential entropy can sit near or below 0 with a healthy spread), unless every late point of
          SB3's lies within 1e-6 of 0, a deterministic categorical policy's (h327-sb3-ppo-airsim-drone-lr-0.1:
          1.5e-15 from its second update on, 7 discrete moves). Onset: the first of
          `sustain` points below `floor`. This catches a log that begins after the collapse (a resumed
          run, an excerpt); the evidence then carries `already_low_at_first_logged_step`.

        - *Sharpening, not collapse* (severity info): the reward rose above 3 × its step-to-step noise
          and kept at least three quarters of that gain, and the advantages (or their tied-group
          proxy), where logged, kept at least 40 % of their early spread (the lab's hard negative
          high_plateau, which learns at three times the learning rate: 46 % to 64 %); a rise that only
          the two windows' medians show through per-episode noise counts when the entropy fell to no
          less than half the cut (h12-handwritten-reinforce-meal-planning-slow-learner: returns 2.2 →
          11.8 with a step-to-step noise of about 8, entropy at 25 % of its start).
          h13-cs336-grpo-reinforce-baseline-learns-low-entropy: 0.19 → 0.03 nats while the reward goes
          0.49 → 0.77 and the advantage std keeps 72 %; in the lab's entropy fault the reward rises too
          but the advantage std falls to 30 % or less as the groups tie: a warning.

        - *Frozen return* (no `entropy` logged): the reward repeats one exact value on all but 5 % of
          at least its last 10 points and a quarter of the run, after a level window in which it changed
          at half its steps or more (a stochastic policy's returns; a deterministic evaluation is
          piecewise constant throughout: h173-sb3-ppo-llm-layer-partition-learns-then-falls-back-to-
          uniform-after-entropy-ramp), below its peak level and above its lowest value by 2 % of its
          range: a deterministic policy locked onto one behaviour worse than one it had found
          (h216-sb3-a2c-mutation-grid-learns-then-locks-onto-constant-500: a level of 830 by episode 13,
          then exactly 500 on 70 of the last 71 episodes). Onset: the first frozen point. Frozen at its
          best or its floor is not this (REWARD_SATURATION, REWARD_FLOOR).

        Not evaluable without `entropy` (unless the return froze), or when the entropy is exactly 0 on every logged step: that is
        a placeholder (countdown-qwen3-06b-handgrpo logs `entropy: 0.0` on all 500 steps while its
        rewards vary), not a measured entropy; a constant that is not 0 is a fact (a uniform policy
        over 7 actions holds ln 7) and is judged. Per-agent-group entropies (`entropy/<group>`, multi-agent PPO)
        are not judged.
    """,
    knobs_note="""
        **Onset of a step fall.** The crossing above dates when the entropy had fallen far enough, which
        for a fall spread over several steps is late: in the collapse lab (an entropy bonus of the wrong
        sign from step 30) the crossing came at steps 32 to 42. When the fall is a step, the onset is
        where it began: the least-squares change point of the entropy's level over the points after the
        early window (the reference level) up to the end of the crossing run, used when it precedes the
        crossing and the `sustain` points after it sit below the `sustain` points before it by at least
        0.2 of the whole fall (early mean - late mean); the crossing stays in `evidence["below_cut_step"]`.
        In the lab this gives steps 31 to 35 (onset error at most 5 steps on 18 runs); trl-dapo-vlm-120531
        keeps log point 13, step 130 (its level drops there, 0.109 -> 0.048, 27 % of its fall); a steady linear decline keeps
        its crossing. The verdict (`advcore.diagnose`) puts an entropy collapse ahead of the tied groups
        and dying reward spread it produces (a deterministic policy samples G identical completions), or
        of a floor the reward fell to after the run began (sb3-chess-entropy-collapse: the policy
        collapses onto one illegal move), when those are the only R-stage findings and the entropy began
        falling no more than 5 logged points after the earliest of them; saturation and a floor from the
        first steps keep the lead.
    """,
    related="""
        A deterministic policy gives tied groups: DEGENERATE_GROUPS and REWARD_STD_DEATH often follow
        this one (trl-dapo-vlm-120531 has both). When the entropy is fine but the update is zero, see
        UPDATE_SUPPRESSED. ENTROPY_COLLAPSE alone, with reward spread still present, is an early warning.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="U",
    summary="policy entropy fell to a small fraction of its early level",
    key_metrics=("entropy",),
    fn=detect,
    knobs=(
        Knob("fraction", 0.25, "late entropy below this fraction of the early entropy = collapsed", low=0.0, high=1.0,
             why="On the real logs the collapsed run trl-dapo-vlm-120531 ends at 0.124 of its early mean (0.043 / "
                 "0.349), while the healthy verl-gsm8k-ppo-quickstart sharpens to 0.44 (0.46 → 0.20) and the other "
                 "healthy runs stay near 1 (budget-router 0.9, trl-grpo-v2-math 1.16, verl-ppo-qwen7b 1.01); 0.25 "
                 "sits about a factor 2 from both sides."),
        Knob("floor", 0.01, "late per-token entropy (nats) below this = collapsed, whatever the early level", low=0.0,
             why="0.01 nats is the entropy of a token chosen with probability ≈ 0.999 against one alternative: "
                 "sampling has become greedy decoding. tinyzero's excerpt sits at 0.0058 (late mean; all points ≤ "
                 "0.008); the lowest healthy level on the real logs is verl-ppo-qwen7b's 0.020 to 0.040 (an "
                 "instruct model at 95 % on GSM8K), a factor 2 above."),
        Knob("sustain", 5, "consecutive logged steps below the cut for the onset estimate", low=1, integer=True,
             why="As the seed card. trl-dapo-vlm-120531: onset at log point 13 (0.048 < 0.087 = 0.25 × 0.349, and "
                 "the next four stay below); tinyzero's excerpt: step 383, its first logged step."),
    ),
    what_to_try=WHAT_TO_TRY,
    what_to_try_control=CONTROL_TRIES,
    card=CARD,
)
