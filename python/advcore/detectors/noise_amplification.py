"""NOISE_AMPLIFICATION (error, stage T): an eps division turns near-zero reward spread into large advantages.

Rule: on a step, ``adv_bound_excess`` (the largest advantage over the largest the matched
estimator can give in its group, :func:`advcore.reference.step_checks`) is at least
``blowup_above`` (10), or ``noise_group_adv_max`` (the largest |advantage| in a group whose
rewards differ only by rounding noise) is at least ``noise_adv_above`` (0.1). Fires when at least
``min_steps`` (1) steps do; onset: the first. Needs per-sample rewards and advantages; not
applicable (None) to a run with a critic (``vf_explained_var`` or ``value_mean``), whose
advantages are not bounded by the rewards alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import GROUP_BASELINE, finite, has_critic, hits, needs, summary
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "NOISE_AMPLIFICATION"
METRICS = ("adv_bound_excess", "noise_group_adv_max")

WHAT_TO_TRY = (
    "Look for a std computed over samples that can all be equal (a leave-one-out std, a per-token std): a "
    "std-normalised baseline divides by ~0 there. Use the plain group std of all G samples, or no std division at "
    "all (Dr. GRPO).",
    "Raise the eps added to the std (TRL uses 1e-4; 1e-9 lets float rounding noise through) or treat groups whose "
    "spread is below float resolution as tied (advantage 0).",
    "Round or quantise rewards that come from a float model score before grouping, so that rounding noise cannot "
    "rank samples.",
    "Clipping advantages only hides it: the gradient of the blown-up samples still dominates the batch.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate NOISE_AMPLIFICATION on ``run`` with resolved ``knobs``."""
    if has_critic(run):
        return NotEvaluable(ID, (GROUP_BASELINE,))  # a value baseline (PPO): the reward-only bounds do not hold
    blowup, noise = float(knobs["blowup_above"]), float(knobs["noise_adv_above"])
    conds = (finite("adv_bound_excess") >= blowup, finite("noise_group_adv_max") >= noise)
    h = hits(run, "adv_bound_excess >= blowup_above or noise_group_adv_max >= noise_adv_above", conds, METRICS)
    if h is None:
        return NotEvaluable(ID, needs(*METRICS, run=run))
    if len(h.index) < int(knobs["min_steps"]) or h.onset is None:
        return None
    onset = h.series.steps[h.onset]
    evidence: dict[str, object] = {**h.evidence(), **summary(run, (*METRICS, "adv_recompute_err"), onset),
                                   "blowup_above": blowup, "noise_adv_above": noise}
    excess = evidence.get("adv_bound_excess_max")
    what = (f"advantages reach {excess:.3g}x the largest value the estimator allows" if isinstance(excess, float)
            and excess >= blowup else f"groups tied up to rounding noise get advantages up to "
            f"{evidence.get('noise_group_adv_max_max', float('nan')):.3g}")
    return Finding(
        ID, "error", "T", onset, evidence,
        f"From step {onset}, {what} on {len(h.index)} of {len(h.series)} traced steps: an eps division of a "
        "near-zero spread is amplifying noise into the learning signal.",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="a division by a near-zero spread turns rounding noise into the learning signal",
    happening="""
        Group-normalised estimators divide by a spread plus a small `eps`. When the spread is (nearly)
        zero, the quotient is whatever the numerator's noise happens to be, scaled up by `1/eps`. Two
        shapes are common:

        - A **leave-one-out std** (or any std over a subset) that is exactly 0 for one sample: with
          rewards `[1, 0, 0, 0]`, a leave-one-out baseline normalised by the std of the *other* samples
          divides the success by the std of three zeros, giving `1 / (0 + 1e-6) = 1e6`.
        - A group **tied up to rounding noise** (`0.7, 0.7, 0.7, 0.7 + 1e-7`, a model score computed in
          different batch positions): with OpenRLHF's `eps` of 1e-9 the noise becomes advantages of ±1.5,
          full-size learning signal with a random sign.

        A batch with one advantage of 1e6 is a batch whose gradient is that one sample.
    """,
    looks_like="""
        Per sample (advcore trace): advantages far larger than any estimator can produce in a group of
        that size, or full-size advantages in groups whose rewards agree to 5 significant digits. Per
        step: `adv_max` spikes while the rewards look ordinary (a per-step log cannot tell why).
    """,
    decides="""
        Per traced step, from `advcore.reference.step_checks`:

        - `adv_bound_excess`: the largest |advantage| of each group over the largest the matched
          estimator can give there — `(G-1)/sqrt(G)` for std-normalised estimators (Samuelson's
          inequality: GRPO with unbiased std cannot exceed it), `(G-1)/G · range` for Dr. GRPO, the reward
          range for RLOO, `(N-1)/sqrt(N)` over the batch for REINFORCE++ — maximised over groups.
        - `noise_group_adv_max`: the largest |advantage| in a group with `0 < max - min <= 1e-8 + 1e-5·max|r|`
          (numpy's `isclose`, the tolerance TRL's `frac_reward_zero_std` uses).

        Fires when `adv_bound_excess >= blowup_above` or `noise_group_adv_max >= noise_adv_above` on at
        least `min_steps` steps; the onset is the first. Not evaluable without per-sample rewards and advantages;
        not applicable to a run with a critic (PPO), whose advantages the rewards alone do not bound.
    """,
    knobs_note="""
        TRL 1.16.0's own advantages (`tests/fixtures/trl_grpo_cpu`, 28 steps) reach a bound excess of
        0.9998 at most. The real per-sample dumps (trl-dapo-vlm, verl-vlm-svg) hold no advantages, so the
        detector is not evaluable there; they carry no near-tied groups either (rewards are on the levels
        -1, 0, 3, 4 and
        a continuous score with within-block stds of 4.5 to 13).
    """,
    related="""
        PRECISION_LOSS is the milder sibling (bound excess just above 1, from bf16 rounding). GROUPING_ERROR
        covers singleton groups, where some trainers divide by a std of 1 and leak the raw reward instead.
        ADV_COLLAPSE never fires here: the advantage std is *large*.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="T",
    summary="eps division on near-zero-spread groups turns rounding noise into large advantages",
    key_metrics=METRICS,
    fn=detect,
    knobs=(
        Knob("blowup_above", 10.0, "adv_bound_excess at or above this = blown up by an eps division", low=1.0,
             why="A correct estimator stays at or below 1 (the quiet controls: TRL/verl GRPO, RLOO, Dr. GRPO, "
                 "REINFORCE++ on 0/1 rewards over 12 steps); precision artefacts reach about 1.33 (bf16 GRPO's `[0, "
                 "0, 0, 2]`, see PRECISION_LOSS); an eps division reaches 1e6/1.5 = 6.7e5. 10 separates them by an "
                 "order of magnitude on each side."),
        Knob("noise_adv_above", 0.1, "|advantage| in a noise-tied group at or above this = amplified noise", low=0.0,
             why="An advantage of 0.1 standard deviations in a group tied up to noise. With TRL's eps 1e-4, a group "
                 "of spread 1e-7 gets `7.5e-8 / (5e-8 + 1e-4)` ≈ 7.5e-4 (quiet); with eps 1e-9, 1.47 (fires)."),
        Knob("min_steps", 1, "traced steps that must show it", low=1, integer=True,
             why="The arithmetic is wrong on the first one."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
