"""REWARD_MISSING (warn, stage R): unscored samples, or missing rewards imputed as 0.

Rule, per-sample evidence (columns of :func:`advcore.reference.step_checks`): on a step,
``reward_null_frac`` (share of NaN/None rewards) is above ``null_above`` (0), or
``reward_imputed_zero_frac`` (share of exact zeros when 0 is an unexplained middle level of a
discrete reward) is at least ``imputed_above`` (0.05).

Rule, per-step logs: on a row where other metrics were logged (``grad_norm``, ``kl``,
``entropy``, ``loss``-like canonical columns or the advantage stats are finite), ``reward_mean``
is NaN. A null ``reward_mean`` is not evidence (trainers log rewards on some lines only, and
evaluation rows have none); NaN is, because it is what a mean over unscored samples gives, except on
the rows before the first finite reward, where a mean over the episodes ended so far has none yet.

Fires when at least ``min_steps`` (1) steps do; onset: the first. Not evaluable without either.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import Hits, finite, hits, summary
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "REWARD_MISSING"
METRICS = ("reward_null_frac", "reward_imputed_zero_frac")
#: Per-step metrics whose presence shows a training step happened on that row.
_OTHERS = ("grad_norm", "kl", "entropy", "adv_mean", "adv_std", "adv_max", "adv_min", "clip_frac",
           "response_length_mean", "lr")

WHAT_TO_TRY = (
    "Find the samples no reward function scored (a parser that fails on some outputs, a timeout in a sandbox, a "
    "remote reward model that dropped requests) and fix the scorer; log how many samples each step leaves unscored.",
    "Never fill a missing reward with 0: mark it missing (None/NaN), leave it out of the group statistics and give "
    "it no advantage (TRL does this for None rewards), or drop its whole group.",
    "If 0 is meant as a middle level (e.g. -1 wrong / 0 abstain / +1 right, which no single step can tell from "
    "imputation), say so: set `REWARD_MISSING.imputed_above` above the share of zeros, or skip the detector.",
)


def _per_step(run: Run) -> Hits | None:
    if "reward_mean" not in run.frame.columns:
        return None
    others = [c for c in _OTHERS if c in run.frame.columns]
    if not others:
        return None
    r = pl.col("reward_mean")
    trained = pl.any_horizontal(*(finite(c).is_not_null() for c in others))
    # A mean over the episodes that ended in a step is NaN until the first one ends: the NaN rows before the
    # first finite reward are no episode yet, not an unscored one (RLlib's episode_reward_mean, h390-rllib-ppo-
    # pong-model3: NaN at iterations 1 to 3, while episodes_this_iter is 0, then -21). A reward NaN throughout is
    # still missing.
    scored = r.is_not_nan().fill_null(False).cum_max() | ~r.is_not_nan().fill_null(False).any()
    # "__row" is finite exactly on the rows where a step trained and logged a reward (NaN or not).
    frame = run.frame.with_columns(pl.when(r.is_not_null() & trained & scored).then(1.0).alias("__row"))
    probe = Run(run.path, run.format, run.trainer, frame, run.sources, run.metadata, run.errors)
    return hits(probe, "reward_mean is NaN on a logged training step", (r.is_nan(),), ("__row",))


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate REWARD_MISSING on ``run`` with resolved ``knobs``."""
    null_above, imputed_above = float(knobs["null_above"]), float(knobs["imputed_above"])
    conds = (finite("reward_null_frac") > null_above, finite("reward_imputed_zero_frac") >= imputed_above)
    sample = hits(run, "reward_null_frac > null_above or reward_imputed_zero_frac >= imputed_above", conds, METRICS)
    step = _per_step(run)
    if sample is None and step is None:
        return NotEvaluable(ID, ("reward_null_frac (from per-sample rewards: a per-sample dump, advcore trace, or "
                                 "advcore.Monitor), or reward_mean logged on the steps of a whole-run update metric (grad_norm, kl, "
                                 "entropy, clip_frac, lr or the advantage statistics), where a NaN reward is a "
                                 "step that trained on unscored samples",))
    candidates = [h for h in (sample, step) if h is not None and h.index and len(h.index) >= int(knobs["min_steps"])]
    if not candidates:
        return None
    first = min(candidates, key=lambda h: h.series.steps[h.index[0]])
    assert first.onset is not None
    onset = first.series.steps[first.onset]
    evidence: dict[str, object] = {**first.evidence(), **summary(run, METRICS, onset),
                                   "null_above": null_above, "imputed_above": imputed_above}
    if first is step:
        evidence["source"] = "per-step reward_mean is NaN"
        what = "the logged mean reward is NaN while the step trained"
    else:
        evidence["source"] = "per-sample rewards"
        null = float(evidence.get("reward_null_frac_max", 0.0))  # type: ignore[arg-type]
        zero = float(evidence.get("reward_imputed_zero_frac_max", 0.0))  # type: ignore[arg-type]
        parts = []
        if null > null_above:
            parts.append(f"up to {100 * null:.3g}% of samples unscored (NaN/None)")
        if zero >= imputed_above:
            parts.append(f"up to {100 * zero:.3g}% of rewards exactly 0 between the reward's real levels "
                         "(missing rewards imputed as 0?)")
        what = "; ".join(parts)
    return Finding(
        ID, "warn", "R", onset, evidence,
        f"From step {onset}, rewards are missing: {what} ({len(first.index)} of {len(first.series)} steps).",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="some samples were never scored, or their missing reward was filled with 0",
    happening="""
        A reward function that fails on some completions (a parser that cannot read the answer, a sandbox
        timeout, a remote reward model that drops requests) leaves those samples unscored. Two things can
        follow. Either the reward is NaN/None and the trainer has to decide what to do with it (TRL sets
        the advantage of an unscored sample to 0 and leaves it out of the group statistics), or, worse,
        somebody filled the gap with 0.0. An imputed 0 is a real-looking reward: next to failures scored
        -1 it *ranks above every failure*, so the policy is pushed towards whatever made the scorer fail.
    """,
    looks_like="""
        Per sample (advcore trace): NaN or null rewards; or exact zeros in a reward that otherwise takes a
        few discrete levels on which 0 cannot fall, e.g. failures at -1 and successes at +1. Per step:
        `reward_mean` logged as NaN on a step that otherwise trained (grad norm, KL, entropy logged).
    """,
    decides="""
        Per traced step, from `advcore.reference.step_checks`:

        - `reward_null_frac`: share of samples whose reward is NaN, None or infinite. NaN rewards are masked
          and counted, never propagated into the other statistics.
        - `reward_imputed_zero_frac`: share of exact-zero rewards when the non-zero rewards take 2 to 8
          levels, some negative and some positive, and 0 lies between them but off the lattice those
          levels lie on (`l_1 + k·d`, `d` the greatest common step of their differences). `{-1, +1}` plus
          zeros gives the share of zeros; a 0/1 reward, a reward whose floor is 0 (TRL's own
          `contains_target + brevity` fixture shows steps with only 0, 0.25 and 1.25), a sum of integer
          components such as `{-1, 3, 4}` (0 = -1 + 1 is a real level) and continuous rewards give 0. A
          zero at the floor is left alone on purpose: a missing reward scored as a failure reorders
          nothing, while a zero above the failures pushes the policy towards whatever broke the scorer.

        From per-step logs: a row where `reward_mean` is **NaN** while another training metric is finite.
        A **null** `reward_mean` is not evidence: trainers write rewards on some lines only (TRL console
        lines, evaluation rows), whereas NaN is what a mean over unscored samples gives. Not on the rows
        before the first finite `reward_mean` of a run that has one: a mean over the episodes ended in a
        step has none to average until the first episode ends (RLlib's `episode_reward_mean`,
        h390-rllib-ppo-pong-model3-252px-four-conv-no-point-scored-for-127-iterations-then-climbs-to-minus-17.9-by-4.8m-steps-healthy-slow-start:
        NaN at iterations 1 to 3, while its `episodes_this_iter` is 0).

        Fires when at least `min_steps` steps meet either rule; the onset is the first of them.
        Not evaluable when the run has neither per-sample rewards nor a `reward_mean`.
    """,
    knobs_note="""
        Per-step logs: of 3,658 real log rows with a `reward_mean` column, 26 hold null (lines without
        rewards) and none NaN, so the per-step rule is quiet on every real run.
    """,
    related="""
        NONFINITE reports the first NaN of any metric; REWARD_MISSING names the reward as its origin.
        A reward that is missing for most samples often looks like REWARD_FLOOR (everything 0) or
        DEAD_FROM_START. Imputed zeros inside groups break GRPO's ranking, which ADV_REWARD_DECORRELATION
        does not see (the advantages still follow the *imputed* rewards).
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="unscored, null or NaN rewards, or missing rewards imputed as 0",
    key_metrics=(*METRICS, "reward_mean"),
    fn=detect,
    knobs=(
        Knob("null_above", 0.0, "share of unscored (NaN/None) rewards in a step above this = missing",
             low=0.0, high=1.0,
             why="A healthy scorer scores every sample: in the real per-sample dumps (trl-dapo-vlm-120531: 499 "
                 "steps, 998 samples; trl-dapo-vlm-181457: 43 steps; verl-vlm-svg-grpo-rollout-dump: 1,024 samples) "
                 "not one reward is missing."),
        Knob("imputed_above", 0.05, "share of suspicious exact-zero rewards in a step at or above this = imputed",
             low=0.0, high=1.0,
             why="One imputed zero in twenty samples already ranks those samples above every failure of its group. "
                 "The rule needs both tests: on trl-dapo-vlm-181457 (totals -1, 0, 3, 4) \"0 between the levels\" "
                 "alone flags 7 of 43 steps, up to 31% of samples, and on TRL 1.16.0's own fixture "
                 "(`tests/fixtures/trl_grpo_cpu`, levels 0, 0.25, 1, 1.25) \"0 off the lattice\" alone flags steps "
                 "showing only 0, 0.25 and 1.25; together they give 0 on every step of both and of "
                 "trl-dapo-vlm-120531."),
        Knob("min_steps", 1, "steps that must show it", low=1, integer=True,
             why="One is enough, an unscored sample is a scorer bug every time."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
