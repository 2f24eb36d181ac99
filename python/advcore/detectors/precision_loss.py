"""PRECISION_LOSS (warn, stage T): low-precision rewards or a one-pass variance distort group statistics.

Rule: on a step, ``reward_rounding_adv_err`` (first-order advantage error from holding the rewards
in their precision: ``u * (max|r_g| + |m_g|) / s_g``, :func:`advcore.reference.step_checks`) is at
least ``rounding_err_above`` (0.1 advantage units), or ``reward_onepass_relerr`` (relative error
bound of a float32 one-pass variance) is at least ``onepass_above`` (0.01) while the logged
advantages disagree with the float64 recompute (``adv_recompute_err > 1``). Fires when at least
``min_steps`` (1) steps do; onset: the first. Needs per-sample rewards (and advantages for the
one-pass branch).
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import finite, hits, needs, summary
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "PRECISION_LOSS"
METRICS = ("reward_rounding_adv_err", "reward_onepass_relerr")
EVIDENCE = (*METRICS, "reward_low_precision", "adv_recompute_err", "adv_bound_excess")

WHAT_TO_TRY = (
    "Keep rewards in float32 (or float64) from the reward function to the advantage: cast before the group mean "
    "and std, not after (verl's loop GRPO computes in the input dtype; its vectorised variant and OpenRLHF promote "
    "to float32).",
    "Compute group variances with a two-pass or Welford update, not E[x^2] - E[x]^2, when rewards sit on a large "
    "offset.",
    "Subtract a constant offset from the rewards (or rescale them) so the differences between completions are not "
    "below the float resolution of their magnitude.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate PRECISION_LOSS on ``run`` with resolved ``knobs``."""
    rounding, onepass = float(knobs["rounding_err_above"]), float(knobs["onepass_above"])
    conds = (finite("reward_rounding_adv_err") >= rounding,
             (finite("reward_onepass_relerr") >= onepass) & (finite("adv_recompute_err") > 1.0))
    h = hits(run, "reward_rounding_adv_err >= rounding_err_above or (reward_onepass_relerr >= onepass_above and "
                  "adv_recompute_err > 1)", conds, METRICS)
    if h is None:
        return NotEvaluable(ID, needs(*METRICS, run=run))
    if len(h.index) < int(knobs["min_steps"]) or h.onset is None:
        return None
    onset = h.series.steps[h.onset]
    evidence: dict[str, object] = {**h.evidence(), **summary(run, EVIDENCE, onset),
                                   "rounding_err_above": rounding, "onepass_above": onepass}
    low = evidence.get("reward_low_precision_max") == 1.0
    cause = ("rewards held in bfloat16/float16" if low else
             "rewards whose spread is small against their magnitude")
    return Finding(
        ID, "warn", "T", onset, evidence,
        f"From step {onset}, {cause} leave group statistics at the mercy of rounding on {len(h.index)} of "
        f"{len(h.series)} traced steps: advantages can move by up to "
        f"{evidence.get('reward_rounding_adv_err_max', float('nan')):.3g} from rounding alone.",
        WHAT_TO_TRY,
    )


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="T",
    summary="bf16/fp16 rewards or a one-pass variance distort group statistics",
    key_metrics=METRICS,
    fn=detect,
    knobs=(
        Knob("rounding_err_above", 0.1, "advantage error bound from reward rounding at or above this = distorted",
             low=0.0),
        Knob("onepass_above", 0.01, "float32 one-pass variance relative error bound at or above this (with a "
             "disagreeing recompute) = distorted", low=0.0),
        Knob("min_steps", 1, "traced steps that must show it", low=1, integer=True),
    ),
)
