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

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import GROUP_BASELINE, finite, has_critic, hits, needs, padded, summary
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "GROUPING_ERROR"
COLUMNS = ("singleton_group_frac", "uneven_group_frac", "adv_group_mean_max", "tied_group_adv_nonzero_frac",
           "adv_batch_normalized", "adv_recompute_err")

WHAT_TO_TRY = (
    "Print one step's group ids next to the prompts: one id per prompt, repeated G times, in the order the rewards "
    "are in (verl's interleaved repeat vs a blocked layout is a classic mix-up).",
    "Take the group statistics per group, not over the whole batch: a batch mean leaves each group's advantages "
    "with a non-zero sum and gives tied groups non-zero advantages.",
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
        return NotEvaluable(ID, (GROUP_BASELINE,))  # a value baseline (PPO): advantages are not formed within groups
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


CARD = Card(
    tagline="the advantages were computed over the wrong groups",
    happening="""
        GRPO, Dr. GRPO, RLOO and DAPO compare each completion with the other completions *of the same
        prompt*. The group id is plumbing that is easy to get wrong: a uid made per sample instead of per
        prompt, verl's interleaved repeat read as blocks, samples dropped between generation and scoring,
        or statistics taken over the batch instead of per group. The advantages then measure the wrong
        comparison — a sample is rewarded for having an easy prompt, a group whose completions all scored
        5.0 (which must get advantage 0) gets a push, a group of one leaks its raw reward (verl) or gets 0
        (TRL).
    """,
    looks_like="""
        Per sample (advcore trace): groups of one next to groups of G; groups of several sizes; group
        means of the advantages far from 0; tied groups with non-zero advantages. Raw rewards
        `[1, 2, 3, 4, 10, 12, 5, 6, 7]` with groups `[0,0,0,0,1,1,2,2,2]` centred on the batch mean 50/9
        give group means of -3.06, +5.44 and +0.44 — the largest 1.58 advantage standard deviations.
        Per-step logs cannot show it.
    """,
    decides="""
        Per traced step, from `advcore.reference.step_checks`, any of:

        - `singleton_group_frac > singleton_above` while not every group is a singleton; or every group a
          singleton while the advantages match a group estimator (`adv_recompute_err <= 1` and not
          batch-normalised: GRPO on groups of one). A trace with no grouping at all (PPO, one sample per
          prompt, advantages of no group estimator) is not judged.
        - `uneven_group_frac >= uneven_above`: share of samples whose group size is not the common one.
        - `adv_group_mean_max > group_mean_above`: the largest |mean advantage| of a group of two or more,
          over the batch std of the advantages; group-centred estimators give 0 (to float rounding).
        - `tied_group_adv_nonzero_frac > tied_adv_above`: share of tied groups with an advantage above
          the dtype tolerance; GRPO, Dr. GRPO, RLOO and DAPO give exactly 0.

        The last two are by design for batch-normalised estimators (REINFORCE++ and its baseline variant,
        TRL's `scale_rewards="batch"`): on steps whose advantages match one within tolerance
        (`adv_batch_normalized = 1`) they are not judged. Fires when at least `min_steps` steps qualify;
        the onset is the first; `evidence["reasons"]` lists which rules fired there. A run with a critic
        (`vf_explained_var` or `value_mean` logged: PPO) is not judged — its advantages come from a
        learned value, not from the groups.
    """,
    knobs_note="""
        TRL 1.16.0's own per-sample output (`tests/fixtures/trl_grpo_cpu`, 28 steps of rewards and the
        advantages TRL wrote) matches the `trl_grpo` reference within 1e-7 on every step, with group
        means of the advantages at 0 and no tied group carrying an advantage: quiet.
    """,
    related="""
        ADV_REWARD_DECORRELATION catches mixed-up ids that still sum to 0 per group (a permutation across
        groups). DEGENERATE_GROUPS is about groups that are *correctly* formed but tied. NOISE_AMPLIFICATION
        covers eps divisions inside correctly formed groups.
    """,
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
             low=0.0, high=1.0,
             why="The real dumps have none (trl-dapo-vlm: 2 per prompt on all 542 steps; verl-vlm-svg: 16 blocks of "
                 "64); a singleton beside full groups is always a lost sample or a wrong uid."),
        Knob("uneven_above", 0.1, "share of samples in groups of an unusual size at or above this = error",
             low=0.0, high=1.0,
             why="The real dumps are exactly even (0.0); 0.1 leaves room for a trainer that drops a few unscorable "
                 "samples."),
        Knob("group_mean_above", 0.05, "largest |group mean advantage| / advantage std above this = error", low=0.0,
             why="Correct estimators give < 1e-7 in float32 (quiet controls: TRL/verl GRPO, RLOO, Dr. GRPO on 12 "
                 "steps × 64 groups); the batch-centred case gives 1.58."),
        Knob("tied_adv_above", 0.0, "share of tied groups with a non-zero advantage above this = error",
             low=0.0, high=1.0,
             why="0 for every group estimator, by construction."),
        Knob("min_steps", 1, "traced steps that must show it", low=1, integer=True,
             why="One traced step is enough: the quiet controls never show a grouping error, so one step that does "
                 "is already a bug."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
