"""DEGENERATE_GROUPS (warn, stage R): most GRPO groups are tied, so they carry no advantage.

Rule: the tied-group share (``zero_variance_group_frac``, 0..1, or the proxy
``1[reward_std(_within) <= 1e-6]`` per step, named in ``evidence["proxy"]``) has a late-window
mean >= ``tied_above`` (0.75) and an onset exists; the onset is the first of
``sustain`` (5) consecutive logged points whose tied share is >= ``tied_above``, or, when single
steps alternate, the first point from which the running share over the rest of the run stays at or
above ``tied_above``. A share near 0.5 is normal for 0/1 rewards at moderate success rates and
stays quiet. Windows: first and last 20 % of the logged points.

Not applicable (None, not "not evaluable") to a run that is evidently not group-based: it logs a
critic (``vf_explained_var`` or ``value_mean``) and no group statistic (``zero_variance_group_frac``,
``reward_std_within``) nor any reward spread to build the proxy from, as verl PPO and SB3 runs do
(:func:`advcore.detectors._windows.run_kind`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import onset_index, plain, run_kind, tied_share
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "DEGENERATE_GROUPS"

WHAT_TO_TRY = (
    "Tell saturation from floor: if reward_mean is at its ceiling the prompts are too easy; at its floor, too hard "
    "or the reward is not wired; in between, each prompt gets one tied value (a deterministic policy or a coarse reward).",
    "Filter or resample prompts whose groups are all-correct or all-wrong (curriculum, DAPO-style dynamic sampling).",
    "Increase the group size G or the sampling temperature, or use a denser (partial-credit) reward.",
    "Check that completions are not all cut at the length cap (truncated_frac): truncated groups score alike.",
)


def _tail_onset(values: tuple[float, ...], above: float) -> int | None:
    """First index holding a tied share >= ``above`` from which the mean of every suffix stays
    >= ``above``."""
    best: int | None = None
    total = 0.0
    for i in range(len(values) - 1, -1, -1):
        total += values[i]
        if total / (len(values) - i) >= above:
            if values[i] >= above:
                best = i
        else:
            break
    return best


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate DEGENERATE_GROUPS on ``run`` with resolved ``knobs``."""
    s = tied_share(run)
    if s is None:
        if run_kind(run) == "critic":
            return None
        return NotEvaluable(ID, ("zero_variance_group_frac (or reward_std_within or reward_std)",))
    if not s.judgeable:
        return None
    above, sustain = float(knobs["tied_above"]), int(knobs["sustain"])
    late, overall = s.late_mean(), s.mean()
    if not late >= above:
        return None
    idx = onset_index(s.values, lambda v: v >= above, sustain)
    tail = _tail_onset(s.values, above)
    if idx is None or (tail is not None and tail < idx):
        idx = tail
    if idx is None:
        return None
    evidence: dict[str, object] = {
        "metric": s.name,
        "early_mean": s.early_mean(),
        "late_mean": late,
        "run_mean": overall,
        "tied_steps_frac": sum(1 for v in s.values if v >= 1.0 - 1e-9) / len(s),
        "tied_above": above,
        **s.where(idx),
    }
    if s.proxy:
        evidence["proxy"] = s.name
    pct = 100 * overall if math.isfinite(overall) else float("nan")
    return Finding(
        ID, "warn", "R", s.step_at(idx), dict(evidence),
        f"{100 * late:.0f}% of GRPO groups ({plain(s.name)}) are tied late in the run ({pct:.0f}% overall): "
        "those groups give zero advantage and no gradient.",
        WHAT_TO_TRY,
    )


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="most groups have identical rewards, so their advantages are zero",
    key_metrics=("zero_variance_group_frac", "reward_std_within", "reward_std"),
    fn=detect,
    knobs=(
        Knob("tied_above", 0.75, "late-window tied-group share at or above this = degenerate",
             low=0.0, high=1.0),
        Knob("sustain", 5, "consecutive logged steps at or above tied_above for the onset estimate", low=1, integer=True),
    ),
)
