"""ADV_COLLAPSE (warn, stage T): the advantages had spread and lost it (seed card 000).

Rule: the late-window mean of ``adv_std`` (advantage units; ~1 under group/batch normalisation)
is below ``collapse_below`` (0.1) while the early-window mean was above ``healthy_early`` (0.5);
the onset is the first of ``sustain`` (5) consecutive logged points below ``collapse_below``. A run
whose advantages were never healthy is left to DEAD_FROM_START (the healthy-early guard). Without
``adv_std`` the SPEC section 4 proxies of :mod:`advcore.detectors._windows` are used and named in
``evidence["proxy"]``. Windows: first and last 20 % of the logged points.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import ADV_NEEDS, adv_signal, onset_index
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
    if not (late < below and early > healthy):
        return None
    idx = onset_index(s.values, lambda v: v < below, sustain)
    evidence: dict[str, object] = {
        "metric": s.name,
        "early_mean": early,
        "late_mean": late,
        "collapse_below": below,
        "healthy_early": healthy,
        **s.where(idx),
    }
    if s.proxy:
        evidence["proxy"] = s.name
    return Finding(
        ID, "warn", "T", s.step_at(idx), dict(evidence),
        f"Advantage spread ({s.name}) fell from {early:.3g} early to {late:.3g} late: the learning signal has vanished.",
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
