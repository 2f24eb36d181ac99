"""UPDATE_UNSTABLE (error, stage U): the policy updates are too large.

A logged point is *unstable* when any of these holds there:

* ``kl_step`` (the KL between the rollout policy and the updated one: SB3 and PPO's ``approx_kl``,
  verl's ``actor/ppo_kl``) at or above ``kl_step_above`` (1 nat): one update moved the policy by
  more than the whole trust region PPO aims at (target KLs are 0.01 to 0.05);
* ``clip_frac`` at or above ``clip_above`` (0.5): most tokens or actions left the clip range in one
  update;
* the level of ``kl`` to the reference policy (trailing median of 5 points, so one spike is no
  level) at or above ``kl_ref_above`` (2 nats per token);
* the level of ``entropy`` at or above ``entropy_rise`` (10) x its early median (judged when that is
  positive): the policy blew up into noise;
* the level of ``value_loss`` at or above ``value_loss_rise`` (100) x its early median: the critic
  diverged.

The two rises count only when the late window's median is past the bar too: a blow-up the run
recovers from is a warm-up, not a divergence.

Fires when a check has at least ``min_points`` (3) unstable points: a single spike that recovers
is a routine event of RL training, not an unstable run. Onset: the first unstable point of the
check reported (checks in the order above; the others that fired are named in
``evidence["also"]``). Not evaluable without any of the five metrics.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome, first_of_checks
from advcore.detectors._windows import Series, metric, rolling_level
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "UPDATE_UNSTABLE"

WHAT_TO_TRY = (
    "Shrink the update: a lower learning rate, fewer PPO epochs or mini-batches per rollout, a tighter clip range, "
    "or a KL target (`target_kl`) that stops the epoch before the policy runs away.",
    "Check the importance ratio: old log-probabilities recomputed with a different model, tokenizer, dtype or "
    "sampling setting than the rollout used make every ratio far from 1 (a large `kl_step` and `clip_frac` from "
    "the first update).",
    "A KL to the reference that runs away with a falling reward is a policy blow-up: raise the KL coefficient, "
    "restart from the last checkpoint before the onset, and look for the reward hack or the degenerate output "
    "the policy found.",
    "A diverging value loss: normalise the returns or rewards, clip the value loss, lower the critic's learning "
    "rate; an entropy that explodes: lower the entropy bonus.",
)


@dataclass(frozen=True, slots=True)
class _Check:
    name: str
    series: Series
    unstable: Callable[[float], bool]
    describe: str
    what: str


def _at_least(cut: float) -> Callable[[float], bool]:
    return lambda v: v >= cut


def _checks(run: Run, knobs: Mapping[str, float | int]) -> list[_Check]:
    out: list[_Check] = []
    kl_step = metric(run, "kl_step")
    if kl_step is not None:
        cut = float(knobs["kl_step_above"])
        out.append(_Check("kl_step", kl_step, lambda v: v >= cut, f"kl_step >= {cut:g}",
                          "single updates move the policy far outside the trust region"))
    clip = metric(run, "clip_frac")
    if clip is not None:
        cut_clip = float(knobs["clip_above"])
        out.append(_Check("clip_frac", clip, lambda v: v >= cut_clip, f"clip_frac >= {cut_clip:g}",
                          "most of the batch leaves the clip range in one update"))
    kl = metric(run, "kl")
    if kl is not None:
        cut_kl = float(knobs["kl_ref_above"])
        out.append(_Check("kl", rolling_level(kl, "kl level"), lambda v: v >= cut_kl,
                          f"the KL to the reference (median of 5 points) >= {cut_kl:g}",
                          "the policy ran away from its reference"))
    for name, knob, what in (("entropy", "entropy_rise", "the policy blew up into noise"),
                             ("value_loss", "value_loss_rise", "the critic diverged")):
        s = metric(run, name)
        if s is None or not s.judgeable:
            continue
        early = s.early_median()
        cut_rise = float(knobs[knob]) * early
        # a blow-up that is still there at the end: one the critic recovers from is a warm-up
        # (mountaincar-actor-critic-floor: value loss 0.01 -> 7,133 in 4 steps, then 0 once returns are constant)
        if not early > 0 or statistics.median(s.late()) < cut_rise:
            continue
        out.append(_Check(name, rolling_level(s, f"{name} level"), _at_least(cut_rise),
                          f"{name} (median of 5 points) >= {float(knobs[knob]):g} x its early median ({cut_rise:.3g})",
                          what))
    return out


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate UPDATE_UNSTABLE on ``run`` with resolved ``knobs``."""
    checks = _checks(run, knobs)
    if not checks:
        return NotEvaluable(ID, ("kl_step, clip_frac, kl, entropy or value_loss",))
    need = int(knobs["min_points"])
    hits: list[tuple[str, Finding]] = []
    for check in checks:
        s = check.series
        idx = [i for i, v in enumerate(s.values) if check.unstable(v)]
        if len(idx) < need:
            continue
        worst = max(s.values[i] for i in idx)
        evidence: dict[str, object] = {
            "metric": check.name,
            "source": run.sources.get(check.name),
            "condition": check.describe,
            "unstable_points": len(idx),
            "judged_points": len(s),
            "unstable_steps": [s.steps[i] for i in idx[:20]],
            "worst": worst,
            **s.where(idx[0]),
        }
        message = (f"From step {s.steps[idx[0]]} the updates are too large ({check.describe} at {len(idx)} of "
                   f"{len(s)} points, up to {worst:.3g}): {check.what}.")
        hits.append((check.name, Finding(ID, "error", "U", s.steps[idx[0]], evidence, message, WHAT_TO_TRY)))
    return first_of_checks(hits)


CARD = Card(
    tagline="the policy updates are too large",
    key_metrics_note="`kl_step` is the KL between the rollout policy and the updated one (SB3 and PPO "
        "`approx_kl`, verl `actor/ppo_kl`); `kl` is the KL to the reference policy",
    happening="""
        Each update moves the policy much further than the data supports: the importance ratios leave the
        clip range for most of the batch, the KL of one update is measured in nats instead of hundredths,
        the policy drifts away from its reference until what it generates is degenerate, or the critic's
        regression target explodes. The run does not stall — it destroys what it learned. Causes: a
        learning rate or number of PPO epochs far too high for the batch, old log-probabilities that do
        not belong to the rollout policy, a KL penalty too weak to hold the policy, unnormalised returns.
    """,
    looks_like="""
        SB3's `train/approx_kl` at 52.5 and 48.9 on the first two updates with `train/clip_fraction` 0.94
        and 0.96 (carla-sb3-ppo-kl-blowup; `value_loss` up to 32,080, explained variance −13.9); a KL to
        the reference rising from 0.8 to 17 nats per token in ten steps while responses shrink to one
        token and the score falls to its floor (opd-qwen3-4b-length-collapse).
    """,
    decides="""
        A logged point is *unstable* when `kl_step` ≥ `kl_step_above`, or `clip_frac` ≥ `clip_above`, or
        the level of `kl` to the reference (trailing median of 5 points, so one spike is no level) ≥
        `kl_ref_above`, or the level of `entropy` ≥ `entropy_rise` × its early median (when that is
        positive; SB3's Gaussian policies log a negative entropy, which is not judged), or the level of
        `value_loss` ≥ `value_loss_rise` × its early median; these two rises count only when the median
        of the late window is past the bar too (a critic that blows up for four steps and then fits
        constant returns, as in mountaincar-actor-critic-floor, recovered). It fires when one of these checks has at
        least `min_points` unstable points: one spike that recovers is routine. Onset: the first unstable
        point of the first check that fires (in the order above); the others are listed in
        `evidence["also"]`. Not evaluable without any of the five metrics.
    """,
    related="""
        The opposite of UPDATE_SUPPRESSED (the update is ~0). A clip fraction pinned near 1 with a KL
        early stop ending every update is a mismatch between the rollout and the trained policy, which
        UPDATE_SUPPRESSED also reports. ENTROPY_COLLAPSE often follows a blow-up (the policy collapses onto
        one degenerate output); REWARD_FLOOR, DEGENERATE_GROUPS and REWARD_STD_DEATH then describe its
        consequence at the reward, and the verdict leads with the update when it began first.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="U",
    summary="updates too large: KL blow-up, clip fraction high, entropy or value-loss explosion",
    key_metrics=("kl_step", "clip_frac", "kl", "entropy", "value_loss"),
    fn=detect,
    knobs=(
        Knob("kl_step_above", 1.0, "an update KL (nats) at or above this = a blow-up", low=0.0,
             why="PPO aims at 0.01 to 0.05 per update (SB3 `target_kl`, verl's clip); the calibration runs log at "
                 "most 0.01 (carla constant-obs), 0.008 (verl qwen7b) and 0.003 (verl quickstart), while "
                 "carla-sb3-ppo-kl-blowup logs 52.5, 48.9, 7.1 and 19.3."),
        Knob("clip_above", 0.5, "clip_frac at or above this = most of the batch clipped", low=0.0, high=1.0,
             why="Healthy runs clip 0 to 12 % (carla constant-obs at most 0.12, budget-router at most 0.05, verl "
                 "runs below 0.01); carla-sb3-ppo-kl-blowup clips 0.94, 0.96, 0.96 and 0.74."),
        Knob("kl_ref_above", 2.0, "the KL to the reference (nats per token, median of 5 points) at or above this",
             low=0.0,
             why="Healthy calibration runs stay below 0.6 as a level, with single spikes to 2.6 and 3.3 "
                 "(unsloth-llama32-3b, unsloth-qwen3-4b) that the median of 5 points removes; "
                 "opd-qwen3-4b-length-collapse holds 17."),
        Knob("entropy_rise", 10.0, "entropy level at or above this x its early median = blow-up", low=1.0,
             why="An order of magnitude: entropy declines in healthy runs and rises by at most 20 % "
                 "(carla, budget-router)."),
        Knob("value_loss_rise", 100.0, "value-loss level at or above this x its early median = divergence",
             low=1.0,
             why="Two orders of magnitude: a critic's loss falls as it fits, and moves within one order as the "
                 "returns grow."),
        Knob("min_points", 3, "unstable points needed (a spike that recovers is routine)", low=1, integer=True,
             why="carla-sb3-ppo-kl-blowup has 4 update-KL spikes over 1; unsloth-llama32-3b (healthy) has "
                 "single KL-to-reference spikes."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
