"""REWARD_MISSING (warn, stage R): unscored samples, or missing rewards imputed as 0.

Rule, per-sample evidence (columns of :func:`advcore.reference.step_checks`): on a step,
``reward_null_frac`` (share of NaN/None rewards) is above ``null_above`` (0), or
``reward_imputed_zero_frac`` (share of exact zeros when 0 is an unexplained middle level of a
discrete reward) is at least ``imputed_above`` (0.05).

Rule, per-step logs: on a row where other metrics were logged (``grad_norm``, ``kl``,
``entropy``, ``loss``-like canonical columns or the advantage stats are finite), ``reward_mean``
is NaN. A null ``reward_mean`` is not evidence (trainers log rewards on some lines only, and
evaluation rows have none); NaN is, because it is what a mean over unscored samples gives.

Fires when at least ``min_steps`` (1) steps do; onset: the first. Not evaluable without either.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import PER_SAMPLE, Hits, finite, hits, summary
from advcore.ingest import Run

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
    "If 0 is meant as a middle level (e.g. abstain), say so: set REWARD_MISSING.imputed_above above the share "
    "of zeros.",
)


def _per_step(run: Run) -> Hits | None:
    if "reward_mean" not in run.frame.columns:
        return None
    others = [c for c in _OTHERS if c in run.frame.columns]
    if not others:
        return None
    r = pl.col("reward_mean")
    trained = pl.any_horizontal(*(finite(c).is_not_null() for c in others))
    # "__row" is finite exactly on the rows where a step trained and logged a reward (NaN or not).
    frame = run.frame.with_columns(pl.when(r.is_not_null() & trained).then(1.0).alias("__row"))
    probe = Run(run.path, run.format, run.trainer, frame, run.sources, run.metadata, run.errors)
    return hits(probe, "reward_mean is NaN on a logged training step", (r.is_nan(),), ("__row",))


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate REWARD_MISSING on ``run`` with resolved ``knobs``."""
    null_above, imputed_above = float(knobs["null_above"]), float(knobs["imputed_above"])
    conds = (finite("reward_null_frac") > null_above, finite("reward_imputed_zero_frac") >= imputed_above)
    sample = hits(run, "reward_null_frac > null_above or reward_imputed_zero_frac >= imputed_above", conds, METRICS)
    step = _per_step(run)
    if sample is None and step is None:
        return NotEvaluable(ID, (f"reward_null_frac ({PER_SAMPLE}) or reward_mean with other per-step metrics",))
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


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="unscored, null or NaN rewards, or missing rewards imputed as 0",
    key_metrics=(*METRICS, "reward_mean"),
    fn=detect,
    knobs=(
        Knob("null_above", 0.0, "share of unscored (NaN/None) rewards in a step above this = missing",
             low=0.0, high=1.0),
        Knob("imputed_above", 0.05, "share of suspicious exact-zero rewards in a step at or above this = imputed",
             low=0.0, high=1.0),
        Knob("min_steps", 1, "steps that must show it", low=1, integer=True),
    ),
)
