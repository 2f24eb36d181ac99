"""DEGENERATE_GROUPS (warn, stage R): most GRPO groups are tied, so they carry no advantage.

Rule: the tied-group share (``zero_variance_group_frac``, 0..1, or the proxy
``1[reward_std(_within) <= 1e-6]`` or ``1[adv_max - adv_min <= 1e-6]`` per step, named in
``evidence["proxy"]``; :func:`advcore.detectors._windows.tied_share`) has a late-window
mean >= ``tied_above`` (0.75), or a mean over the whole run >= ``RUN_TIED`` (0.9: nearly every
step without a gradient, though the last ones untie), and an onset exists; the onset is the first of
``sustain`` (5) consecutive logged points whose tied share is >= ``tied_above``, or, when single
steps alternate, the first point from which the running share over the rest of the run stays at or
above ``tied_above``; when the early window's mean is already at or above ``tied_above``, the first
logged step (grpo-dynamics-gate2-rho1-seed42, groups of two: 81 % tied over its first 12 steps, whose
single steps swing between 50 % and 100 %, so that five in a row first hold at step 13). A share near
0.5 is normal for 0/1 rewards at moderate success rates and stays quiet. Windows: first and last 20 % of the logged points.

Groups tied at the top, in a run that learned, are solved prompts (:func:`_solved`): when at least
``SOLVED_SHARE`` (2/3) of the late steps whose every group is tied score the reward's ceiling (or, with
``reward_min`` and ``reward_max`` logged, the late means bound the tied groups' mean score at 2/3 of the
way from the floor to the ceiling or more: :func:`_tied_high`), the
reward rises over the run (Spearman's rho against the step times sqrt(n - 1) >= ``RISE_Z``, 2.5), its
late mean lies at least ``ROOM_LEFT`` (0.1) of ``ceiling - floor`` below the ceiling, and it is neither
pinned at that ceiling nor held at its floor (:func:`advcore.detectors._reward.reward_level`), the
finding is ``info``. So is a run still learning through its ties (:func:`_still_learning`): over the
second half of the logged points the reward mean rises (Spearman's z >= ``STILL_RISING_Z``, 2.5), its
late-window mean gains at least ``STILL_RISING_GAIN`` (0.05) of ``ceiling - floor`` over the middle
fifth, and ``ROOM_LEFT`` of that range is still left below the ceiling (groups of two agree often by
chance: RLOO with k = 2 at a success of 0.75 ties most pairs and learns).

Not applicable (None, not "not evaluable") to a run that is evidently not group-based: it logs a
critic (``vf_explained_var`` or ``value_mean``) and no group statistic (``zero_variance_group_frac``,
``reward_std_within``), as SB3 and torch-ac runs do (:func:`advcore.detectors._windows.run_kind`):
its advantages come from the value baseline, so episodes of equal return are not tied.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from advcore.detectors._base import THRESHOLD, Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._reward import RewardLevel, answered_by_validation, reward_level
from advcore.detectors._evidence import GROUP_BASELINE
from advcore.detectors._windows import (TIE_EPS, Series, aligned, change_point, fmean, held_since, metric,
                                        onset_index, plain, run_kind, tied_share, window_len)
from advcore.model import Run
from advcore.stats import spearman

__all__ = ["SPEC", "detect"]

ID = "DEGENERATE_GROUPS"

#: A tied-group share at or above this over the whole run fires even when the last steps untie: the
#: run spent nearly all of its steps without a gradient (h77-unsloth-grpo-llama31-8b-router-after-sft-tied-groups:
#: steps 1-46 of 50 tied, the last four not).
RUN_TIED = 0.9
#: a step whose every group is tied (a share of 1, up to float rounding): no contrast left at all
ALL_TIED = 1.0 - TIE_EPS

#: Share of the late all-tied steps at the reward's ceiling from which the ties are solved prompts, when
#: the reward also rises: h92-unsloth-trl-gspo-qwen25vl7b-meme-classifier-learns-groups-tie-at-ceiling
#: (0.77, accuracy 72 % -> 83 %). The stuck runs tied at their ceiling do not rise (simplevla-terminal-
#: reward-libero 0.94, legaloom-grpo-final 1.0, tsc-qwen05b-grpo-tied 1.0: rise z -0.3 to 0.7).
SOLVED_SHARE = 2 / 3
#: Spearman's rho of the reward mean against the step, times sqrt(n - 1), from which the reward rises
#: (h92 meme classifier: 3.0 over 125 steps).
RISE_Z = 2.5
#: The late reward mean at least this share of ``ceiling - floor`` below the ceiling: room left to learn
#: (h92 meme classifier: 0.18 to 0.24); closer, the prompts are nearly exhausted and the ties are the
#: saturation they are (the lab's saturation fault under DAPO, seed 0: 0.04, 96 % of the late steps
#: at the ceiling).
ROOM_LEFT = 0.1
#: Spearman's rho of the reward mean against the step over the second half of the logged points, times
#: sqrt(n - 1), from which the run is still learning while its groups tie (:func:`_still_learning`). The
#: lab's G = 2 runs that learn (hard negative pairs_tied: 75 % to 85 % of the pairs tied at a late
#: success of 0.6 to 0.8, as two samples of one prompt agree that often) reach 4.1 to 5.5 over 40
#: points; the real runs stuck with tied groups reach at most 1.7 (h162 ms-swift food classifier, which
#: saturates; legaloom-grpo-final 1.5; grpo-dynamics-gate2, G = 2 with no trend, 0.7).
STILL_RISING_Z = 2.5
#: ...and the late-window reward mean at least this share of ``ceiling - floor`` above the mean of the
#: middle fifth of the points (40 % to 60 %): a rise of some size, not a steady creep. pairs_tied gains
#: 0.09 to 0.14; the lab's small_g fault (99 % of the pairs tied on bimodal prompts, held-out success
#: flat after the switch) creeps at 0.00 to 0.01 with a z of up to 3.0.
STILL_RISING_GAIN = 0.05

WHAT_TO_TRY = (
    "Tell saturation from floor: if `reward_mean` is at its ceiling the prompts are too easy; at its floor, too "
    "hard or the reward is not wired; in between, each prompt is tied at its own value (a deterministic policy or a "
    "coarse reward).",
    "Filter or resample prompts whose groups are all-correct or all-wrong (curriculum, DAPO-style dynamic "
    "sampling).",
    "Increase the group size G or the sampling temperature, or use a denser (partial-credit) reward.",
    "Check that completions are not all cut at the length cap (`truncated_frac`): truncated groups score alike.",
)


def _tail_onset(values: tuple[float, ...], above: float) -> int | None:
    """First index holding a tied share >= ``above`` from which the mean of every suffix stays
    >= ``above``."""
    best: int | None = None
    total = 0.0
    for i in range(len(values) - 1, -1, -1):
        total += values[i]
        if total / (len(values) - i) >= above:
            if values[i] >= above:
                best = i
        else:
            break
    return best


def _rise_z(values: tuple[float, ...]) -> float:
    """Spearman's rho of ``values`` against their order, times sqrt(n - 1): about a z-score of a
    monotone rise (NaN when the values are constant)."""
    return float(spearman(list(range(len(values))), list(values))) * math.sqrt(len(values) - 1)


def _tied_high(s: Series, level: RewardLevel) -> float | None:
    """A lower bound, from the late window's means, on the mean score of the tied groups scaled to 0 (the
    floor) .. 1 (the ceiling); None when it cannot be bounded. Every reward lies within ``[min(reward_min),
    max(reward_max)]`` (both logged), so with a tied share ``t`` and a reward mean scaled to ``r`` the untied
    groups score at most 1 and the tied ones on average at least ``(r - (1 - t)) / t``. Read only from a
    logged ``zero_variance_group_frac`` (a per-step proxy counts steps, not groups). The lab's hard negative
    high_plateau (three times the learning rate: a reward of 0.88 with 82 % of the groups tied late, none of
    its steps with all 16 groups tied) has at least 0.85; a run tied at its floor 0 or less."""
    bounded = level.ceiling_from == "reward_max" and level.floor_from == "reward_min"
    if s.proxy or not bounded or level.ceiling <= level.floor:
        return None
    t = s.late_mean()
    if not t > 0.0:
        return None
    r = (level.late_mean - level.floor) / (level.ceiling - level.floor)
    return (r - (1.0 - t)) / t


def _solved(run: Run, s: Series, level: RewardLevel | None) -> dict[str, float] | None:
    """The evidence that the late ties are solved prompts in a run that learned (see the module
    docstring), else None: the share of the late all-tied steps whose reward mean is within the
    reward's tolerance of its ceiling and the bound on the tied groups' mean score (:func:`_tied_high`),
    where each can be read, and the rise's Spearman z."""
    mean = metric(run, "reward_mean")
    if level is None or mean is None or level.regime in ("floor", "saturation"):
        return None
    rewards, tied, _ = aligned(mean, s)
    if len(rewards) < 10 or min(rewards) == max(rewards):
        return None
    late_from = len(rewards) - window_len(len(rewards))
    at_tie = [r for i, (r, t) in enumerate(zip(rewards, tied, strict=True)) if i >= late_from and t >= ALL_TIED]
    evidence: dict[str, float] = {}
    if at_tie:
        evidence["late_tied_at_ceiling"] = sum(1 for r in at_tie if abs(r - level.ceiling) <= level.tol) / len(at_tie)
    high = _tied_high(s, level)
    if high is not None:
        evidence["tied_score_at_least"] = high
    if not evidence:
        return None
    rise = _rise_z(rewards)
    room = (level.ceiling - level.late_mean) / (level.ceiling - level.floor) if level.ceiling > level.floor else 0.0
    if not (max(evidence.values()) >= SOLVED_SHARE and math.isfinite(rise) and rise >= RISE_Z and room >= ROOM_LEFT):
        return None
    return {**evidence, "ceiling": level.ceiling, "rise_z": rise, "room_left": room}


def _how_high(solved: dict[str, float]) -> str:
    """What :func:`_solved` read, as a message says it."""
    at_ceiling = solved.get("late_tied_at_ceiling", -math.inf)
    if at_ceiling >= solved.get("tied_score_at_least", -math.inf):
        return (f"{100 * at_ceiling:.0f}% of the late fully tied steps score the reward's ceiling "
                f"({solved['ceiling']:.4g})")
    return (f"the tied groups score on average at least {100 * solved['tied_score_at_least']:.0f}% of the way from "
            f"the reward's floor to its ceiling ({solved['ceiling']:.4g}) late in the run")


def _still_learning(run: Run, level: RewardLevel | None) -> dict[str, float] | None:
    """The evidence that the reward is still rising over the second half of the run with room left
    below its ceiling (see :data:`STILL_RISING_Z`, :data:`STILL_RISING_GAIN` and :data:`ROOM_LEFT`), else None."""
    mean = metric(run, "reward_mean")
    if level is None or mean is None or level.regime in ("floor", "saturation") or level.ceiling <= level.floor:
        return None
    n = len(mean)
    second = mean.values[n // 2:]
    if len(second) < 10 or min(second) == max(second):
        return None
    width = level.ceiling - level.floor
    rise = _rise_z(second)
    gain = (level.late_mean - fmean(mean.values[2 * n // 5:3 * n // 5])) / width
    room = (level.ceiling - level.late_mean) / width
    if not (math.isfinite(rise) and rise >= STILL_RISING_Z and gain >= STILL_RISING_GAIN and room >= ROOM_LEFT):
        return None
    return {"second_half_rise_z": rise, "late_gain": gain, "ceiling": level.ceiling, "room_left": room}


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate DEGENERATE_GROUPS on ``run`` with resolved ``knobs``."""
    if run_kind(run) == "critic":  # a value baseline: tied returns still get advantages
        return NotEvaluable(ID, (GROUP_BASELINE,))
    s = tied_share(run)
    if s is None:
        return NotEvaluable(ID, ("zero_variance_group_frac (or reward_std_within or reward_std)",))
    if not s.judgeable:
        return None
    above, sustain = float(knobs["tied_above"]), int(knobs["sustain"])
    late, overall = s.late_mean(), s.mean()
    # a run that ends in its longest stretch of steps with every group tied is degenerate now, before the late
    # window's mean shows it (as ADV_COLLAPSE's stretch; not on a 0/1 per-step proxy): a monitor hears the cause
    # with the advantages' collapse (a newcomer's loop whose reward broke at step 150: ADV_COLLAPSE at 155, this
    # at 175 by the late window)
    since = None if s.name.startswith("1[") else held_since(s.values, lambda v: v >= ALL_TIED, sustain)
    by_window = late >= above or overall >= RUN_TIED
    if not (by_window or since is not None):
        return None
    idx = onset_index(s.values, lambda v: v >= above, sustain)
    tail = _tail_onset(s.values, above)
    if idx is None or (tail is not None and tail < idx):
        idx = tail
    if idx is not None and s.early_mean() >= above:
        idx = 0  # tied over the first window already: since the start, not since a run of single steps
    if idx is None:
        return None
    if s.name.startswith("1[") and (cp := change_point(s.values)) is not None and cp < idx:
        # a per-step 0/1 share that rose is dated where it rose, not where five tied steps first ran in a row
        # (legaloom-grpo-final: tied from step 6 on 25 of its last 35 steps, never five in a row before step 18)
        if fmean(s.values[cp:]) > fmean(s.values[:cp]):
            idx = cp
    evidence: dict[str, object] = {
        "metric": s.name,
        "early_mean": s.early_mean(),
        "late_mean": late,
        "run_mean": overall,
        "tied_steps_frac": sum(1 for v in s.values if v >= ALL_TIED) / len(s),
        "tied_above": above,
        THRESHOLD: above,
        **s.where(idx),
    }
    if s.proxy:
        evidence["proxy"] = s.name
    pct = 100 * overall if math.isfinite(overall) else float("nan")
    # a per-step indicator counts steps, not groups: say so (a newcomer read "75% of GRPO groups" of a log whose
    # only spread metric is reward_std as a share of groups)
    unit = "of the logged steps have every group" if s.name.startswith("1[") else "of GRPO groups are"
    stretch = None if by_window else since
    if stretch is not None:
        evidence["held_since_step"] = s.steps[stretch]
        share = (f"{100 * fmean(s.values[stretch:]):.0f}% {unit} tied ({plain(s.name)}) over the last "
                 f"{len(s) - stretch} logged steps ({pct:.0f}% overall)")
    else:
        share = (f"{100 * late:.0f}% {unit} tied ({plain(s.name)}) late in the run ({pct:.0f}% overall)"
                 if late >= above else
                 f"{pct:.0f}% {unit} tied ({plain(s.name)}) over the run ({100 * late:.0f}% late)")
    level = reward_level(run)
    solved = _solved(run, s, level)
    if solved is not None:
        evidence.update(solved)
        return Finding(ID, "info", "R", s.step_at(idx), dict(evidence),
                       f"{share}, but {_how_high(solved)} in a run whose reward rose (Spearman z "
                       f"{solved['rise_z']:.1f}): the policy solves those prompts and the untied rest still trains. "
                       "Add harder prompts before they run out.",
                       WHAT_TO_TRY)
    # no group has contrast left: a rise before the stretch does not make it a run that still learns
    learning = None if stretch is not None else _still_learning(run, level)
    if learning is not None:
        evidence.update(learning)
        return Finding(ID, "info", "R", s.step_at(idx), dict(evidence),
                       f"{share}, but the reward is still rising over the second half of the run (Spearman z "
                       f"{learning['second_half_rise_z']:.1f}) with {100 * learning['room_left']:.0f}% of its range left "
                       "below its ceiling: the untied groups still train. The tied ones cost compute without a "
                       "gradient.", WHAT_TO_TRY)
    tied = Finding(ID, "warn", "R", s.step_at(idx), dict(evidence),
                   f"{share}: those groups give zero advantage and no gradient.", WHAT_TO_TRY)
    # a validation score that rose answers groups tied in failure (h311's WebShop GiGPO after SFT: 8 episodes a step,
    # a training reward of 0 on 28 of 32 steps), not groups tied in success, the upper half of the reward's range:
    # the signal is gone whatever the validation says (simplevla-terminal-reward-libero: a training success of 0.95
    # from step 0, both groups of a step all-success on most steps, the validation 0.917 -> 0.983)
    succeeding = level is not None and level.ceiling > level.floor and (
        level.late_mean - level.floor >= (level.ceiling - level.floor) / 2)
    return tied if succeeding else answered_by_validation(tied, run)


CARD = Card(
    tagline="most groups are tied, so they teach nothing",
    happening="""
        GRPO, RLOO and DAPO compute each sample's advantage relative to the other samples of its prompt's
        group. When every completion of a group gets the same reward (all correct, all wrong, all cut at
        the length cap, or a coarse reward that cannot tell them apart), the group's advantages are all
        zero and it contributes no gradient. A few tied groups are normal; when nearly all are tied the run
        only burns compute.
    """,
    looks_like="""
        TRL's `frac_reward_zero_std` near 1 at every log point, or `reward_std` exactly 0 on most steps
        when a step holds one group (Unsloth notebooks), often with `grad_norm` tiny and completions at
        the length cap. About half the groups tied is **normal** for 0/1 rewards at moderate success rates.
    """,
    decides="""
        Per step, the tied-group share is `zero_variance_group_frac`, or, when it is not logged, the proxy
        `1[reward_std_within <= 1e-6]` / `1[reward_std <= 1e-6]`, else `1[adv_max - adv_min <= 1e-6]`
        (every advantage of the step is 0; verl logs advantage extremes and no group statistic), named
        in `evidence["proxy"]`. A logged share that the advantages contradict is replaced by the
        advantage proxy: when on most steps where it says every group is tied the advantages still
        spread, it counts ties of another label than the reward that trains. SimpleVLA-RL's
        `Accuracy distribution:` lines count success; simplevla-dense-reward-libero trains on a dense
        shaped score, with success tied in 88 % of the groups but advantages all 0 on only 28 % of the
        steps (simplevla-terminal-reward-libero, trained on success: 84 %). Fires
        when the late-window mean (last 20 % of the logged points) reaches `tied_above`, or the mean over
        the whole run reaches 0.9 (nearly every step spent without a gradient, though the last ones
        untie: h77-unsloth-grpo-llama31-8b-router-after-sft-tied-groups, steps 1-46 of 50 tied), or the run
        ends in its longest stretch of at least `sustain` steps with every group tied (not on a per-step
        0/1 proxy; `evidence["held_since_step"]`: inside a trainer the cause is heard with the advantages'
        collapse it brings, ADV_COLLAPSE's stretch rule, not a quarter of the run later; not a share at
        `tied_above` alone: the lab's hard negative high_plateau ends with steps 75-80 % tied), and the
        share has settled there (an onset exists). Ties at the top of a run that still learns are
        solved prompts, reported as info: when at least 2/3 of the late steps whose every group is tied
        score the reward's ceiling (or, with `reward_min` and `reward_max` logged, when the late means
        bound the tied groups' mean score at 2/3 of the way from the floor to the ceiling or more: the
        untied groups score at most the ceiling, so with a tied share t and a reward mean r scaled to
        0..1 the tied groups average at least (r - (1 - t)) / t; the lab's hard negative high_plateau,
        0.88 with 82 % tied and no step with all 16 groups tied, has 0.85: a monitor inside its trainer
        warned before, while the second half's rise was still below its bar), the reward mean rises
        over the run (Spearman's rho against the step
        times sqrt(n - 1) at least 2.5), its late mean is still a tenth of the reward's range or more
        below the ceiling (room left: 0.18 to 0.24 there; the lab's saturation fault, 0.04, stays a
        warning) and it is neither pinned at the ceiling (REWARD_SATURATION) nor held at its floor
        (h92-unsloth-trl-gspo-qwen25vl7b-meme-classifier-learns-groups-tie-at-ceiling: 0.77 at the
        ceiling, rise 3.0, accuracy 72 % -> 83 %; the stuck runs tied at their ceiling do not rise:
        simplevla-terminal-reward-libero, legaloom-grpo-final, tsc-qwen05b-grpo-tied). A run still
        learning through its ties is info too: over the second half of the logged points the reward
        mean rises (Spearman's z at least 2.5), its late mean gains at least 5 % of the reward's range
        over the middle fifth of the points, and a tenth of the range is left below the ceiling. Pairs
        agree by chance (RLOO with k = 2 at a success of 0.75 ties most of them): the lab's G = 2 runs
        that learn reach z 4.1 to 5.5 and gains of 0.09 to 0.14; the real runs stuck with tied groups
        reach a z of at most 1.7, and the lab's small_g fault (99 % of pairs tied, held-out success
        flat) creeps with a gain of at most 0.01. Ties in failure (the late reward mean in the lower half of
        the range) are info too when a logged validation score (`val_score`: verl's `val/test_score/<source>`,
        verl-agent's `val/success_rate`) rose: at least 5 evaluations ranking with the step at Spearman 0.9 or
        more, the last above the first, or from 20 evaluations risen as a reward does (h311's WebShop GiGPO after
        SFT: 8 episodes a step, a training reward of 0 on 28 of 32 steps, the held-out success 0.016 -> 0.328);
        ties in success stay a warning whatever
        the validation says (simplevla-terminal-reward-libero, validation 0.917 -> 0.983). Onset: the first
        of `sustain` consecutive points at or above
        `tied_above`, or the
        first tied point from which the share of every remaining stretch stays at or above `tied_above`,
        whichever is earlier; the first logged step when the early window's mean is already at or above
        `tied_above` (grpo-dynamics-gate2-rho1-seed42: 81 % over its first 12 steps, five single steps in a
        row at or above 75 % only from step 13); for a per-step 0/1 proxy, the change point of the tied steps'
        share (least squares) when it lies earlier and the share rose there (legaloom-grpo-final: tied from step
        6 on 25 of its last 35 steps, never five in a row before step 18). DAPO-style dynamic sampling drops
        tied groups before
        metrics are computed, so there the logged share understates the truth.

        Not applicable to runs that are evidently not group-based: when the run logs a critic
        (`vf_explained_var` or `value_mean`) and no group statistic (`zero_variance_group_frac`,
        `reward_std_within`) (SB3 and torch-ac runs: their advantages come from the value baseline, so
        episodes of equal return are not tied; h83-torchac-ppo-minigrid-playground-no-reward, whose
        return is 0 on every episode, is a floor, not tied groups), the detector reports nothing
        instead of "not evaluable". A run without a spread to build the proxy from is still "not
        evaluable".
    """,
    related="""
        **Versus ACR.** The Advantage Collapse Rate (X. He et al. 2026, "Advantage Collapse in Group
        Relative Policy Optimization: Diagnosis and Mitigation", arXiv:2605.21125) is the share of a step's
        groups whose reward std is at most an absolute `eps`; averaged over the first steps it predicted final
        accuracy (R² 0.617 over 245 runs). The tied-group share read here (`zero_variance_group_frac`,
        `advcore.stats.zero_variance_fraction(...).near_frac`) counts the same groups whenever the ties are
        exact, as they are for 0/1 rewards: on the lab sweep of `bench/acr_sweep.py` the two are equal on every
        step. They differ in two ways. The tolerance here is relative to the rewards' magnitude
        (`max - min <= 1e-8 + 1e-5 * max(|min|, |max|)`), so it does not depend on the reward's unit: rewards
        in units of 1e-7 are not all tied here, while an absolute eps of 1e-6 calls every group collapsed;
        rewards near 1000 with float32 noise 1e-4 are tied here and not under ACR (the proxies used when
        the share is not logged, `reward_std(_within) <= 1e-6`, are absolute tests like ACR's). And a group of one sample
        is left out here (GROUPING_ERROR reports singletons), while ACR counts it as collapsed (std 0). How
        well each, measured early, predicts a lab run's final held-out success, against our other early
        statistics: `docs/evaluation.md`, table 4.

        The within-group view upstream of ADV_COLLAPSE; REWARD_STD_DEATH is the whole-batch view. When
        the share is high from the first step, DEAD_FROM_START names it a setup problem.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="most groups have identical rewards, so their advantages are zero",
    key_metrics=("zero_variance_group_frac", "reward_std_within", "reward_std"),
    fn=detect,
    knobs=(
        Knob("tied_above", 0.75, "late-window tied-group share at or above this = degenerate",
             low=0.0, high=1.0,
             why="On the real logs the stuck runs sit at 0.998 (f1-strategist), 0.92 (unsloth-qwen3-vl, zero-std "
                 "steps), 0.87 (unsloth-qwen3-8b-fp8), ≥ 0.9 (trl-dapo-vlm), 0.79 late / 0.81 overall "
                 "(grpo-dynamics-gate2, G=2: 81% of samples in tied groups) and 0.75 late (legaloom-grpo-final, "
                 "mode collapse onto one 9-token answer); runs that learn or are merely noisy sit at 0.12 (llama31 "
                 "user run), 0.31 (unsloth-qwen25-3b, learns), 0.43 (phi4), 0.47 / 0.50 (qwen3-4b runs). 0.75 "
                 "catches every stuck run and leaves the 0.5 \"half tied\" zone of healthy 0/1-reward runs quiet "
                 "(0.8 missed gate2 and legaloom-final)."),
        Knob("sustain", 5, "consecutive logged steps at or above tied_above for the onset estimate", low=1,
             integer=True, why="As the seed card."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
