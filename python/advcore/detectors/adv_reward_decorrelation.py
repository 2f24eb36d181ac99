"""ADV_REWARD_DECORRELATION (error, stage T): advantages no longer rank samples as the rewards do.

Rule: on a step, ``spearman_adv_reward_within`` (mean over the groups with reward spread of
Spearman's rho between advantage and reward, computed by the trace) is below ``within_below``
(0.5). Every group-centred or batch-normalised estimator is increasing in the reward within a
group (rho = 1); a permutation, a sign flip or mixed-up group ids break that. Fires when at least
``min_steps`` (1) steps do; onset: the first. The global ``spearman_adv_reward`` is reported, not
judged: across groups of different difficulty a healthy GRPO run has a global rho well below 1.

Per-step logs without a trace: when every sample of a step got one advantage
(:func:`advcore.detectors._windows.one_advantage_per_step`), the step's ``adv_mean`` is each
sample's advantage, and Spearman's rho between it and ``reward_mean`` across those steps must not be
negative: a baseline that does not depend on the current samples (a running mean) gives ``r - b``,
which rises with the reward. Fires when rho is at or below ``ACROSS_STEPS_AT_MOST`` (-0.5) over at
least ``ACROSS_STEPS_MIN`` (8) steps; onset: the first of them.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._evidence import finite, hits, needs, summary
from advcore.detectors._windows import aligned, metric, one_advantage_per_step
from advcore.model import Run
from advcore.stats import spearman

__all__ = ["SPEC", "detect"]

ID = "ADV_REWARD_DECORRELATION"
METRIC = "spearman_adv_reward_within"
#: Per-step logs: Spearman(adv_mean, reward_mean) across steps at or below this = the advantages
#: move against the rewards (deepretrieval-grpo-0p8b-inverted-adv: -0.65 over 50 steps).
ACROSS_STEPS_AT_MOST = -0.5
#: Fewest steps for that rank correlation.
ACROSS_STEPS_MIN = 8

WHAT_TO_TRY = (
    "Check that advantages and rewards stay aligned sample by sample: a shuffle, a sort or a gather between the "
    "reward computation and the advantage (dynamic sampling, padding removal, sequence packing, a re-sort by "
    "length) misaligns them.",
    "Check the group ids: advantages computed with another batch's ids, or ids repeated in the wrong order "
    "(interleaved vs blocked), centre each sample on the wrong group.",
    "Check the sign: a reward used as a cost, or a negated advantage in the loss, gives rho = -1.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate ADV_REWARD_DECORRELATION on ``run`` with resolved ``knobs``."""
    below = float(knobs["within_below"])
    h = hits(run, "spearman_adv_reward_within < within_below", (finite(METRIC) < below,), (METRIC,))
    if h is None:
        return _across_steps(run) or NotEvaluable(ID, needs(METRIC, run=run))
    if len(h.index) < int(knobs["min_steps"]) or h.onset is None:
        return None
    onset = h.series.steps[h.onset]
    evidence: dict[str, object] = {**h.evidence(), **summary(run, (METRIC, "spearman_adv_reward", "adv_recompute_err"),
                                                             onset), "within_below": below}
    rho = evidence.get(METRIC, float("nan"))
    return Finding(
        ID, "error", "T", onset, evidence,
        f"From step {onset}, advantages rank the completions of a group unlike their rewards (mean within-group "
        f"Spearman {rho:.3g}) on {len(h.index)} of {len(h.series)} traced steps: the policy is pushed towards "
        "completions the reward did not prefer.",
        WHAT_TO_TRY,
    )


def _across_steps(run: Run) -> Finding | None:
    """The per-step check of the module docstring, or None when it does not apply or holds."""
    adv, reward = one_advantage_per_step(run), metric(run, "reward_mean")
    if adv is None or reward is None:
        return None
    advs, rewards, idx = aligned(adv, reward)
    if len(idx) < ACROSS_STEPS_MIN:
        return None
    rho = float(spearman(list(rewards), list(advs)))
    if not rho <= ACROSS_STEPS_AT_MOST:
        return None
    onset = adv.steps[idx[0]]
    evidence: dict[str, object] = {"metric": "adv_mean", "against": "reward_mean", "spearman_across_steps": rho,
                                   "steps": len(idx), "at_most": ACROSS_STEPS_AT_MOST, **adv.where(idx[0])}
    return Finding(
        ID, "error", "T", onset, evidence,
        f"Every sample of a step got one advantage, and across {len(idx)} steps it falls as the reward rises "
        f"(Spearman {rho:.2f}): the advantages point against the rewards and are not formed within groups.",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="advantages no longer rank samples as the rewards do",
    happening="""
        Every estimator in use (GRPO, Dr. GRPO, RLOO, DAPO, REINFORCE++) is an increasing function of the
        reward within a group: the better completion of a prompt gets the larger advantage. When a
        shuffle, a sort or a gather between the reward and the advantage misaligns them, or the sign is
        lost on the way to the loss, the advantages stop following the rewards — and the policy is pushed
        towards completions the reward did not prefer. Reward and advantage statistics both look normal.
    """,
    looks_like="""
        Per sample (advcore trace): the within-group Spearman correlation between advantage and reward
        drops from 1 to about 0 (misalignment) or to -1 (sign flip). Per-step logs show it only when
        every sample of a step got one advantage: deepretrieval-grpo-0p8b-inverted-adv logs `adv_std` 0
        on all 50 steps, `adv_mean` -0.92 on the steps where every sample scored the top reward and
        +0.75 where every sample scored 0.
    """,
    decides="""
        `spearman_adv_reward_within` is the mean over the groups with reward spread of Spearman's rho
        between advantage and reward (`advcore.stats.within_group_spearman`, average ranks for ties),
        computed by the trace per step. Fires when it is below `within_below` on at least `min_steps`
        steps; the onset is the first. The global `spearman_adv_reward` is reported, not judged: with
        prompts of different difficulty a healthy GRPO run has a global rho well below 1 (a 0.9 in an easy
        group and a 0.1 in a hard one get the same advantage).

        Without a trace, when every sample of a step got one advantage (`adv_std` at most 1e-6 on most
        steps, `adv_mean` non-zero on most of those), the step's `adv_mean` is each sample's advantage;
        the finding fires when Spearman's rho between it and `reward_mean` across at least 8 such steps
        is at most -0.5 (a running-mean baseline gives `r - b`, which rises with the reward;
        deepretrieval-grpo-0p8b-inverted-adv gives -0.65). Onset: the first of those steps.
    """,
    knobs_note="""
        The real per-sample dumps hold no advantages, so the detector is not evaluable there.
    """,
    related="""
        GROUPING_ERROR catches the mix-ups that leave group sums non-zero; this one catches those that keep
        them at zero. ADV_COLLAPSE is about the size of the advantages, this one about their order.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="T",
    summary="advantages no longer rank samples as the rewards do",
    key_metrics=(METRIC, "spearman_adv_reward"),
    fn=detect,
    knobs=(
        Knob("within_below", 0.5, "mean within-group Spearman(advantage, reward) below this = decorrelated",
             low=-1.0, high=1.0,
             why="Correct estimators give exactly 1 (quiet controls: all six on 12 steps of 0/1 rewards); float32 "
                 "rounding that breaks a reward tie can lower one group to about 0.94; a sign flip gives -1, a "
                 "random permutation about 0. 0.5 sits in the middle."),
        Knob("min_steps", 1, "traced steps that must show it", low=1, integer=True,
             why="One traced step is enough: every correct estimator gives exactly 1 on every step (the quiet "
                 "controls above), so a single decorrelated step is already a bug."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
