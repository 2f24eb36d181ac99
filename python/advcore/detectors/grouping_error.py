"""GROUPING_ERROR (error, stage T): the groups the advantages were computed over are wrong.

Rule: on a step, any of (columns from :func:`advcore.reference.step_checks`):

* singleton groups beside larger ones: ``0 < singleton_group_frac`` and ``> singleton_above`` (0)
  and not every group a singleton;
* every group a singleton while the advantages match a group estimator (``adv_recompute_err <= 1``
  and ``adv_batch_normalized == 0``: GRPO on groups of one gives 0, or the raw reward in verl);
  a run with no grouping at all (PPO, one sample per prompt) is not judged;
* uneven groups: ``uneven_group_frac`` (share of samples whose group size is not the common one)
  at least ``uneven_above`` (0.1);
* group advantages not summing to ~0: ``adv_group_mean_max`` (largest |group mean| of the
  advantages over their batch std) above ``group_mean_above`` (0.05);
* tied groups with non-zero advantages: ``tied_group_adv_nonzero_frac`` above ``tied_adv_above`` (0).

The last two are by design for batch-normalised estimators (REINFORCE++), and are not judged on
steps whose advantages match one (``adv_batch_normalized == 1``). Fires when at least
``min_steps`` (1) steps do; onset: the first. Not applicable (None) to a run with a critic
(``vf_explained_var`` or ``value_mean``): its advantages are not formed within groups.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import finite, has_critic, hits, needs, padded, summary
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "GROUPING_ERROR"
COLUMNS = ("singleton_group_frac", "uneven_group_frac", "adv_group_mean_max", "tied_group_adv_nonzero_frac",
           "adv_batch_normalized", "adv_recompute_err")

WHAT_TO_TRY = (
    "Print the group ids of one step next to the prompts: one id per prompt, repeated G times, in the order the "
    "rewards are in (verl's interleaved repeat vs a blocked layout is a classic mix-up).",
    "Check that the group statistics are taken per group and not over the whole batch (a batch mean leaves each "
    "group's advantages with a non-zero sum, and gives tied groups non-zero advantages).",
    "Singleton groups: a uid made per sample instead of per prompt, or samples dropped after grouping; GRPO then "
    "gives 0 (TRL) or leaks the raw reward (verl). Filter whole groups, never single samples.",
    "Uneven groups: samples lost between generation and scoring (timeouts, failed rollouts); keep the group size "
    "fixed.",
)

_REASONS = (
    ("singleton groups", "singleton_group_frac"),
    ("uneven group sizes", "uneven_group_frac"),
    ("group advantages not summing to 0", "adv_group_mean_max"),
    ("tied groups with non-zero advantages", "tied_group_adv_nonzero_frac"),
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate GROUPING_ERROR on ``run`` with resolved ``knobs``."""
    if has_critic(run):
        return None  # a value baseline (PPO): advantages are not formed within groups
    single, uneven = float(knobs["singleton_above"]), float(knobs["uneven_above"])
    gmean, tied = float(knobs["group_mean_above"]), float(knobs["tied_adv_above"])
    s = finite("singleton_group_frac")
    not_batch = finite("adv_batch_normalized").fill_null(0.0) < 0.5
    conds = {
        "singleton_group_frac": ((s > single) & (s < 1.0)) | (
            (s >= 1.0) & (finite("adv_recompute_err") <= 1.0) & not_batch),
        "uneven_group_frac": finite("uneven_group_frac") >= uneven,
        "adv_group_mean_max": (finite("adv_group_mean_max") > gmean) & not_batch,
        "tied_group_adv_nonzero_frac": (finite("tied_group_adv_nonzero_frac") > tied) & not_batch,
    }
    h = hits(run, "grouping conditions", tuple(conds.values()), tuple(conds))
    if h is None:
        return NotEvaluable(ID, needs("singleton_group_frac", "adv_group_mean_max", run=run))
    if len(h.index) < int(knobs["min_steps"]) or h.onset is None:
        return None
    onset = h.series.steps[h.onset]
    frame = padded(run, *conds.values()).frame.filter(pl.col("step") == onset).head(1)
    reasons = [label for label, col in _REASONS if frame.select(conds[col].fill_null(False)).item()]
    evidence: dict[str, object] = {**h.evidence(), **summary(run, COLUMNS, onset), "reasons": reasons,
                                   "singleton_above": single, "uneven_above": uneven,
                                   "group_mean_above": gmean, "tied_adv_above": tied}
    return Finding(
        ID, "error", "T", onset, evidence,
        f"From step {onset}, the advantages were computed over wrong groups ({', '.join(reasons) or 'see evidence'}) "
        f"on {len(h.index)} of {len(h.series)} traced steps.",
        WHAT_TO_TRY,
    )


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="T",
    summary="singleton or uneven groups, group advantages not summing to ~0, tied groups with non-zero advantages",
    key_metrics=COLUMNS[:4],
    fn=detect,
    knobs=(
        Knob("singleton_above", 0.0, "share of singleton groups above this (when not all are) = error",
             low=0.0, high=1.0),
        Knob("uneven_above", 0.1, "share of samples in groups of an unusual size at or above this = error",
             low=0.0, high=1.0),
        Knob("group_mean_above", 0.05, "largest |group mean advantage| / advantage std above this = error", low=0.0),
        Knob("tied_adv_above", 0.0, "share of tied groups with a non-zero advantage above this = error",
             low=0.0, high=1.0),
        Knob("min_steps", 1, "traced steps that must show it", low=1, integer=True),
    ),
)
