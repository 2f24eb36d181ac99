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

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import finite, has_critic, hits, needs, summary
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "NOISE_AMPLIFICATION"
METRICS = ("adv_bound_excess", "noise_group_adv_max")

WHAT_TO_TRY = (
    "Look for a std (or leave-one-out std) computed over samples that are all equal: a std-normalised baseline "
    "divides by ~0 there. Use the plain group std of all G samples, or no std division (Dr. GRPO).",
    "Raise the eps added to the std (TRL uses 1e-4; 1e-9 lets float rounding noise through) or treat groups whose "
    "spread is below float resolution as tied (advantage 0).",
    "Round or quantise rewards that come from a float model score before grouping, so rounding noise cannot rank "
    "samples.",
    "Clip advantages only as a stopgap: the gradient of the blown-up samples still dominates the batch.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate NOISE_AMPLIFICATION on ``run`` with resolved ``knobs``."""
    if has_critic(run):
        return None  # a value baseline (PPO): the reward-only bounds do not hold
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


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="T",
    summary="eps division on near-zero-spread groups turns rounding noise into large advantages",
    key_metrics=METRICS,
    fn=detect,
    knobs=(
        Knob("blowup_above", 10.0, "adv_bound_excess at or above this = blown up by an eps division", low=1.0),
        Knob("noise_adv_above", 0.1, "|advantage| in a noise-tied group at or above this = amplified noise", low=0.0),
        Knob("min_steps", 1, "traced steps that must show it", low=1, integer=True),
    ),
)
