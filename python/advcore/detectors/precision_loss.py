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

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import finite, hits, needs, summary
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "PRECISION_LOSS"
METRICS = ("reward_rounding_adv_err", "reward_onepass_relerr")
EVIDENCE = (*METRICS, "reward_low_precision", "adv_recompute_err", "adv_bound_excess")

WHAT_TO_TRY = (
    "Keep rewards in float32 or float64 from the reward function until the advantage is computed: cast before the "
    "group mean and std, not after (verl's loop GRPO computes in the input dtype; its vectorised GRPO and OpenRLHF "
    "promote to float32).",
    "Compute group variances with two passes or Welford's update, not `E[x²] - E[x]²`, when rewards sit on a large "
    "offset.",
    "Subtract a constant offset from the rewards (or rescale them) so that the differences between completions are "
    "not below the float resolution of their magnitude.",
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


CARD = Card(
    tagline="low-precision rewards or a one-pass variance distort the group statistics",
    happening="""
        Group normalisation divides differences between rewards by their spread. When the differences are
        close to the resolution of the numbers that hold them, rounding decides the advantages:

        - **bfloat16/float16 rewards**: bf16 has 8 significant bits. The group `[1, 1, 1, 1.0078125]` has
          mean 1.001953125, which rounds to 1.0 in bf16; the centred values become `(0, 0, 0, 2^-7)`, the
          std is exactly 2^-8, and verl's loop GRPO (which computes in the input dtype) gives
          `[0, 0, 0, 2]` instead of `[-0.5, -0.5, -0.5, 1.5]`. An advantage of 2 exceeds `(G-1)/sqrt(G)` =
          1.5, which no GRPO with unbiased std can produce.
        - **One-pass variance** `E[x²] - E[x]²` in float32 on rewards with a large offset (1000 ± 0.1):
          the two terms agree to 7 digits and their difference is rounding noise.
    """,
    looks_like="""
        Per sample (advcore trace): rewards on the bf16 grid, advantages that disagree with a float64
        recompute, advantages above `(G-1)/sqrt(G)`. Per step: nothing distinctive.
    """,
    decides="""
        Per traced step, from `advcore.reference.step_checks`:

        - `reward_rounding_adv_err` = `max_g u·(max|r_g| + |m_g|)/s_g` over the groups with spread: the
          first-order bound of how far rounding the rewards and their mean to unit roundoff `u` can move
          an advantage (`u` = 2^-8 for bf16, 2^-11 for fp16, 2^-24 for float32, 2^-53 for float64). The
          precision is the declared `reward_dtype`, a float16/bf16 input, bf16 when 8 or more distinct
          rewards that are not multiples of 1/64 all lie on the bf16 grid (chance 2^-16 each for float32
          values), float32 when every reward is a float32 value, else float64.
        - `reward_onepass_relerr` = `max_g 2^-24·(1 + m_g²/v_g)`: the relative error bound of a float32
          one-pass variance; it counts only together with `adv_recompute_err > 1` (the logged advantages
          disagree with the float64 two-pass recompute), since most trainers do not use one pass.

        Fires when `reward_rounding_adv_err >= rounding_err_above`, or `reward_onepass_relerr >= onepass_above`
        with a disagreeing recompute, on at least `min_steps` steps; the onset is the first.
    """,
    related="""
        NOISE_AMPLIFICATION is the same arithmetic failure with an eps division on top (bound excess of
        10 and more). ADV_REWARD_DECORRELATION may follow when rounding scrambles the order within groups.
    """,
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
             low=0.0,
             why="A tenth of a standard deviation. The bf16 case gives 2.01; the same values in float32 3e-5; the "
                 "real dumps at most 4.5e-7 (trl-dapo-vlm-181457), 1.3e-7 (trl-dapo-vlm-120531) and 8.8e-16 "
                 "(verl-vlm-svg-grpo-rollout-dump: its scores carry float64 digits; 4.7e-7 had they been held in "
                 "float32)."),
        Knob("onepass_above", 0.01, "float32 one-pass variance relative error bound at or above this (with a "
             "disagreeing recompute) = distorted", low=0.0,
             why="1000 ± 0.1 gives 4.8; the real dumps at most 9e-7."),
        Knob("min_steps", 1, "traced steps that must show it", low=1, integer=True,
             why="One traced step is enough: the real dumps stay four or more orders of magnitude below both cuts "
                 "on every step, so one step above them is already a distortion."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
