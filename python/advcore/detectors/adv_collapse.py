"""ADV_COLLAPSE (warn, stage T): the advantages had spread and lost it (seed card 000).

Rule: the late-window mean of ``adv_std`` (advantage units; ~1 under group/batch normalisation)
is below ``collapse_below`` (0.1) while the early-window mean was above ``healthy_early`` (0.5);
the onset is the first of ``sustain`` (5) consecutive logged points below ``collapse_below``. A run
whose advantages were never healthy is left to DEAD_FROM_START (the healthy-early guard). Without
``adv_std`` the SPEC section 4 proxies of :mod:`advcore.detectors._windows` are used and named in
``evidence["proxy"]``. Windows: first and last 20 % of the logged points.

Extension for advantages in reward units (``evidence["rule"] == "relative"``). Dr. GRPO, RLOO and
plain REINFORCE do not divide by a std, so their ``adv_std`` is a share of the reward spread (about
0.35 to 0.45 for 0/1 rewards in the lab) and never clears ``healthy_early``. When the seed rule does
not fire, a logged ``adv_std`` (not a proxy) whose early mean is at least ``healthy_early`` x the
early mean of the reward spread (``reward_std``, else ``reward_std_within``, else max - min) is
judged against its own early level: collapsed when the late mean is below ``collapse_below`` x the
early mean (a tenfold fall, stricter than the seed rule's fivefold 0.5 -> 0.1), with the onset the
first of ``sustain`` points below that cut. Normalised advantages are judged by the seed rule as
before.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import ADV_NEEDS, adv_signal, onset_index, plain, reward_spread
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "ADV_COLLAPSE"

WHAT_TO_TRY = (
    "Audit reward scaling/normalization first: rewards computed correctly can be flattened on the way to the advantages.",
    "Check for saturation: if reward_mean sits at its ceiling, the fix is harder prompts, not advantage plumbing.",
    "Cross-check zero_variance_group_frac and reward_std to locate the collapse: per-group (curriculum), "
    "global reward (task exhausted) or advantages only (normalization bug).",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate ADV_COLLAPSE on ``run`` with resolved ``knobs``."""
    s = adv_signal(run)
    if s is None:
        return NotEvaluable(ID, ADV_NEEDS)
    if not s.judgeable:
        return None
    below, healthy, sustain = float(knobs["collapse_below"]), float(knobs["healthy_early"]), int(knobs["sustain"])
    early, late = s.early_mean(), s.late_mean()
    rule, cut = "seed", below
    extra: dict[str, object] = {}
    if not (late < below and early > healthy):
        spread = None if s.proxy else reward_spread(run)
        if spread is None or not spread.judgeable:
            return None
        r_early = spread.early_mean()
        if not (r_early > 0 and early >= healthy * r_early and late < below * early):
            return None
        rule, cut = "relative", below * early
        extra = {"reward_spread": spread.name, "reward_spread_early_mean": r_early, "cut": cut}
    idx = onset_index(s.values, lambda v: v < cut, sustain)
    evidence: dict[str, object] = {
        "metric": s.name,
        "rule": rule,
        "early_mean": early,
        "late_mean": late,
        "collapse_below": below,
        "healthy_early": healthy,
        **extra,
        **s.where(idx),
    }
    if s.proxy:
        evidence["proxy"] = s.name
    return Finding(
        ID, "warn", "T", s.step_at(idx), dict(evidence),
        f"Advantage spread ({plain(s.name)}) fell from {early:.3g} early to {late:.3g} late: the learning signal has vanished.",
        WHAT_TO_TRY,
    )


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="T",
    summary="the learning signal has vanished: advantage std went from healthy to ~0",
    key_metrics=("adv_std", "adv_zero_frac"),
    fn=detect,
    knobs=(
        Knob("collapse_below", 0.1, "late adv_std below this = collapsed", low=0.0),
        Knob("healthy_early", 0.5, "early adv_std must have been above this", low=0.0),
        Knob("sustain", 5, "consecutive steps below threshold for the onset estimate", low=1, integer=True),
    ),
)
