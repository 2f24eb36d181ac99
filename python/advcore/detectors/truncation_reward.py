"""TRUNCATION_REWARD (warn, stage R): most completions hit the length cap, so the reward measures
truncation rather than the task.

Rule: the truncated share per step (``truncated_frac``, 0..1: TRL ``completions/clipped_ratio``,
verl ``response_length/clip_ratio``) has a late-window mean (last 20 % of the logged points) >=
``truncated_above`` (0.5). Without ``truncated_frac`` the proxy ``1[response_length_mean >= 0.99
x cap]`` is used (1 when the batch's mean length is at the cap, i.e. at least ~99 % of the
completions were cut: a lower bound on the share), with the cap taken from the knob
``max_length`` when set (> 0), else from the longest completion logged over the run
(``max(response_length_max)``, TRL ``completions/max_length``), else from the mean length itself when it
sits at its highest value, a whole number, at :data:`PINNED_POINTS` (3) or more logged points (older
TRL tables log only ``completion_length``; a batch mean repeats one whole number only at the cap). Onset: the first of ``sustain``
(5) consecutive logged points at or above ``truncated_above``; the evidence also gives the first
``sustain`` points where every completion was cut (``all_truncated_from``, when the late mean is
>= 0.95) and the Pearson
correlation of the truncated share with ``reward_mean`` across steps.

A logged share that says every completion was cut (late mean >= ``ALL_CUT_LATE``) while the longest completion
(``response_length_max``) varies by more than ``CAP_TOL`` of itself between the late steps contradicts itself: a cut
completion has the cap's length. It counts something else (TRL's ``completions/clipped_ratio`` of a colocated vLLM
run whose stop token is not the tokenizer's end of sequence: h335-trl-grpo-qwen25-15b-gridiron, 1.0 at 119 of 120
steps, the padded length 376 to 1,020 under a cap of 1,024), and the detector is not evaluable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping

import numpy as np

from advcore.detectors._base import THRESHOLD, Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import Series, aligned, metric, onset_index
from advcore.model import Run

__all__ = ["SPEC", "detect", "truncated_share"]

ID = "TRUNCATION_REWARD"

#: The mean length within this fraction of the cap counts as "at the cap" (the proxy).
CAP_TOL = 0.01
#: A batch's mean length that equals its highest value, a whole number, at this many logged points is
#: at the length cap: the mean of sampled lengths repeats one whole number only when every completion
#: was cut there (h60 gemma3-1b TL;DR: 32.000000, the 32-token cap, at all 150 steps).
PINNED_POINTS = 3
#: The late truncated share at or above which the evidence names the step from which every completion was cut.
ALL_CUT_LATE = 0.95
#: the reward follows the truncated share when their Pearson correlation across steps is at least this in size
FOLLOWS = 0.5
NEEDS = ("truncated_frac (or response_length_mean, with response_length_max or the knob max_length)",)

WHAT_TO_TRY = (
    "Raise `max_completion_length` / `max_response_length` so that completions can finish, or ask for less "
    "reasoning in the prompt template.",
    "Mask or penalise truncated completions (TRL `mask_truncated_completions`, DAPO overlong filtering or soft "
    "overlong punishment) so that cut-off text is not scored as if it were an answer.",
    "If lengths jump straight to the cap, look for token loops or a missing stop token (EOS not in the generation "
    "config).",
    "With a thinking model, budget or disable the thinking phase so that the reward sees the final answer.",
)


def truncated_share(run: Run, max_length: float = 0.0) -> Series | None:
    """Per step, the share of completions cut at the length cap (0..1): ``truncated_frac``, else
    the proxy ``1[response_length_mean >= 0.99 x cap]`` (cap = ``max_length`` if > 0, else
    ``max(response_length_max)``); None when neither can be formed."""
    s = metric(run, "truncated_frac")
    if s is not None:
        return s
    length = metric(run, "response_length_mean")
    if length is None:
        return None
    cap, pinned = float(max_length), ""
    if cap <= 0:
        longest = metric(run, "response_length_max")
        top = max(length.values)
        if longest is not None:
            cap = max(longest.values)
        elif top > 0 and top == int(top) and sum(v == top for v in length.values) >= PINNED_POINTS:
            cap, pinned = top, f", the cap: the mean length sits at its highest value, {top:g}, at whole steps"
        else:
            return None
    if cap <= 0:
        return None
    cut = (1 - CAP_TOL) * cap
    return length.map(f"1[response_length_mean >= 0.99 x {cap:g}]{pinned}", lambda v: 1.0 if v >= cut else 0.0)


def _pearson(x: tuple[float, ...], y: tuple[float, ...]) -> float | None:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(np.corrcoef(np.asarray(x), np.asarray(y))[0, 1])


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate TRUNCATION_REWARD on ``run`` with resolved ``knobs``."""
    s = truncated_share(run, float(knobs["max_length"]))
    if s is None:
        return NotEvaluable(ID, NEEDS)
    if not s.judgeable:
        return None
    above, sustain = float(knobs["truncated_above"]), int(knobs["sustain"])
    late, early = s.late_mean(), s.early_mean()
    longest = metric(run, "response_length_max")
    if not s.proxy and late >= ALL_CUT_LATE and longest is not None and longest.judgeable:
        # a completion cut at the cap has the cap's length: with every one cut, the longest is the cap at every step
        lengths = longest.late()
        if max(lengths) - min(lengths) > CAP_TOL * max(lengths):
            return NotEvaluable(ID, (f"a truncated share the lengths agree with ({s.name} says every completion was "
                                     f"cut, yet the longest completion varies from {min(lengths):.0f} to "
                                     f"{max(lengths):.0f} "
                                     "tokens between the late steps: the share counts something else)",))
    reward = metric(run, "reward_mean")
    corr = None
    if reward is not None:
        share, rew, _ = aligned(s, reward)
        corr = _pearson(share, rew)
    follows = corr is not None and math.isfinite(corr) and corr <= -FOLLOWS
    # a share that was small and grew, and stays grown (the late median: not a few fully cut steps), while the
    # reward fell with it: the cut rollouts drag the reward down
    held = statistics.median(s.late())
    rising = (held >= float(knobs["rising_above"]) and held >= float(knobs["rise_factor"]) * early and follows
              and reward is not None and reward.late_mean() < reward.early_mean())
    if not (late >= above or rising):
        return None
    majority = late >= above
    cut = above if majority else (early + late) / 2
    idx = onset_index(s.values, lambda v: v >= cut, sustain)
    # "every completion cut" is reported only when it describes the end of the run, not a passing stretch
    full = onset_index(s.values, lambda v: v >= 1.0 - 1e-9, sustain) if late >= ALL_CUT_LATE else None
    evidence: dict[str, object] = {
        "metric": s.name,
        "early_mean": s.early_mean(),
        "late_mean": late,
        "run_mean": s.mean(),
        "truncated_above": above,
        THRESHOLD: above if majority else float(knobs["rising_above"]),
        "all_truncated_from": s.step_at(full),
        **s.where(idx),
    }
    if s.proxy:
        evidence["proxy"] = s.name
    evidence["reward_corr"] = corr
    if not majority and reward is not None and corr is not None:  # the rising rule (which needs both)
        evidence["rule"] = "rising"
        return Finding(
            ID, "warn", "R", s.step_at(idx), evidence,
            f"The share of completions cut at a length or turn limit rose from {100 * early:.0f}% to {100 * late:.0f}% "
            f"(by {s.name}) while the reward fell from {reward.early_mean():.4g} to {reward.late_mean():.4g} with it "
            f"(Pearson r = {corr:.2f} across steps): the policy runs into the limit more and more, and the cut "
            "rollouts drag the reward down.",
            WHAT_TO_TRY,
        )
    tail = ""
    if full is not None:
        tail = f"; every completion is cut from step {s.steps[full]}"
    if corr is not None and math.isfinite(corr) and abs(corr) >= FOLLOWS:
        tail += f"; the reward follows the truncated share (Pearson r = {corr:.2f} across steps)"
    return Finding(
        ID, "warn", "R", s.step_at(idx), evidence,
        f"{100 * late:.0f}% of completions hit the length cap late in the run (by {s.name}){tail}: the reward scores "
        "cut-off text, so it measures truncation more than the task.",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="the reward is scoring cut-off text",
    key_metrics_note="`response_length_mean` with `response_length_max` when `truncated_frac` is not logged",
    happening="""
        Most completions run into the generation length cap. A cut-off completion has no final answer
        (and often no closing tag), so it earns the format/answer floor whatever its reasoning was worth.
        The reward then measures *whether the completion was truncated* more than the task: when every
        completion is cut, all of them score alike (tied groups, no advantage); when most are, the only
        contrast left is "finished vs cut", and the policy learns about length, not about the task.
    """,
    looks_like="""
        TRL `completions/clipped_ratio` near 1 and `completions/mean_length` equal to
        `completions/max_length` (the cap); verl `response_length/clip_ratio` high; the reward pinned at
        the value a truncated completion earns, moving against the clipped ratio from step to step.
    """,
    decides="""
        The truncated share per step is `truncated_frac` (0..1). Without it, the proxy
        `1[response_length_mean >= 0.99 × cap]` (a lower bound on the share) with the cap from the knob
        `max_length` when set, else the longest completion logged over the run (`max(response_length_max)`),
        else the mean length's own highest value when it is a whole number reached at 3 or more logged
        points (a batch mean repeats one whole number only when every completion was cut there:
        h60-unsloth-trl-grpo-gemma3-1b-tldr-32tok-truncated-flat logs 32.000000, its 32-token cap, at
        all 150 steps).
        It fires when the share's late-window mean (last 20 % of the logged points) is at least
        `truncated_above`. Onset: the first of `sustain` consecutive logged points at or above
        `truncated_above`. It also fires when a share that was small grew (`evidence["rule"] ==
        "rising"`): its late median at least `rising_above` and `rise_factor` times its early mean, while
        the reward fell (late mean below early) and follows it (Pearson r ≤ −0.5 across steps); onset
        the first of `sustain` points at or above half-way between the two means. The evidence adds `all_truncated_from` (the first of `sustain` points at which
        every completion was cut, given when the late mean is ≥ 0.95) and `reward_corr`, the Pearson
        correlation of the share with `reward_mean` across steps. Not evaluable without `truncated_frac`
        or a length and a cap (older TRL logs only `completion_length`: pass `max_length` when the
        mean length never sits at the cap), and not evaluable when a logged share says every completion was
        cut while the longest completion varies by more than 1 % between the late steps: a cut completion has
        the cap's length, so the share counts something else (h335-trl-grpo-qwen25-15b-gridiron: TRL's
        `completions/clipped_ratio` 1.0 at 119 of 120 steps of a colocated vLLM run whose completions stop at
        `<|im_end|>`, the padded length 376 to 1,020 under its cap of 1,024).
    """,
    related="""
        DEGENERATE_GROUPS and REWARD_FLOOR often fire with it (all-truncated groups tie at the floor);
        this detector names the cause. DEAD_FROM_START when truncation holds from the first step.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="most completions hit the length cap, so the reward measures truncation",
    key_metrics=("truncated_frac", "response_length_mean", "response_length_max"),
    fn=detect,
    knobs=(
        Knob("truncated_above", 0.5, "late-window share of completions at the length cap at or above this = "
             "truncation dominates", low=0.0, high=1.0,
             why="\"Most completions\" = a majority. chaos-economy-grpo (late 0.99, 1.0 from step 80), "
                 "f1-strategist (1.0 at every log point, 96-token cap), unsloth-qwen3-8b-fp8 (late 0.975; reward vs "
                 "share r = −1.00), unsloth-qwen3-4b userrun (late 0.70, r = −0.97) and unsloth-gptoss-20b (late "
                 "0.60, r = −0.45) fire. Quiet: unsloth-qwen3-vl (late 0.25: 7 of 60 steps fully cut), "
                 "trl-grpo-v2-math (late 0.11), verl-ppo-qwen7b (0.008), gui-cursor and trl-dapo-vlm (0)."),
        Knob("sustain", 5, "consecutive logged steps at or above truncated_above for the onset estimate",
             low=1, integer=True,
             why="As the seed card."),
        Knob("rising_above", 0.2, "a late median truncated share at or above this that grew `rise_factor` times while the "
             "reward fell with it = truncation drags the reward down", low=0.0, high=1.0,
             why="h236-verl-grpo-qwen35-9b-zoom-tool-t6-turn-limit-cuts-reward-falls: rollouts cut at the 6-turn limit "
                 "3 % early, a late median of 24 %, reward 0.45 -> 0.37, r = -0.79. Quiet: unsloth-qwen3-vl (a late "
                 "mean of 0.25 from 3 fully cut steps of 12, a late median of 0), the healthy runs that cut fewer "
                 "completions as they learn (cs285 math-hard, 0.67 -> 0.21) and text2sql-3b (0.26 -> 0.24)."),
        Knob("rise_factor", 4.0, "the late truncated share at least this many times the early one = it grew",
             low=1.0,
             why="h236 t6 grew 7.7 times; h9-unsloth-grpo-qwen25-3b-gsm8k-truncated-kl-spikes doubles (0.16 -> 0.32) "
                 "while its reward rises, and is quiet by this rule."),
        Knob("max_length", 0, "the length cap in tokens, for logs without truncated_frac (0 = read it from "
             "response_length_max, or from a mean length pinned at one whole number)", low=0.0,
             why="Older Unsloth tables log only `completion_length`; unsloth-phi4-14b-grpo sits at exactly 200.0, "
                 "its cap, at 63 of 100 steps (late share 0.60: fires), h60 gemma3-1b at 32.0 on all 150. A log "
                 "whose mean never reaches its cap twice at the same value needs the knob."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
