"""DEAD_FROM_START (error, stage R/U): no usable signal, or no update, from the first steps.

Rule: either (signal) the advantage std or its proxy (as ADV_COLLAPSE; advantage units) has an
early-window mean below ``dead_below`` (0.1) and a late-window mean below ``dead_below`` too (the
run never found a signal), or (update) ``grad_norm`` is at or below ``no_update_below`` (1e-8)
at every point of the early and of the late window. Onset: the first logged step. This is a setup
problem (reward not wired, prompts all solved or all failed, rollouts broken), not a collapse.
Windows: first and last 20 % of the logged points.
"""

from __future__ import annotations

from collections.abc import Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import ADV_NEEDS, adv_signal, metric, plain
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "DEAD_FROM_START"

WHAT_TO_TRY = (
    "Treat it as a setup bug, not a training dynamic: read a few rollouts and their rewards by hand.",
    "Check the reward function is wired (not constant, not 0 for every sample) and the group size is > 1.",
    "Check the prompts' difficulty: all-solved (ceiling) or all-failed (floor) groups give no advantage.",
    "Check the rollouts themselves (truncation at the length cap, repeated tokens, a broken generation config).",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate DEAD_FROM_START on ``run`` with resolved ``knobs``."""
    dead_below, no_update = float(knobs["dead_below"]), float(knobs["no_update_below"])
    sig = adv_signal(run)
    grad = metric(run, "grad_norm")
    if sig is None and grad is None:
        return NotEvaluable(ID, (*ADV_NEEDS, "or grad_norm"))
    reasons: list[str] = []
    evidence: dict[str, object] = {}
    first: tuple[int, int | None] | None = None
    if sig is not None and sig.judgeable:
        early, late = sig.early_mean(), sig.late_mean()
        evidence.update({"metric": sig.name, "early_mean": early, "late_mean": late, "dead_below": dead_below})
        if sig.proxy:
            evidence["proxy"] = sig.name
        if early < dead_below and late < dead_below:
            reasons.append(f"{plain(sig.name)} was {early:.3g} early and {late:.3g} late")
            first = (sig.steps[0], sig.phases[0] if sig.phases else None)
    if grad is not None and grad.judgeable:
        gmax = max(max(grad.early()), max(grad.late()))
        evidence["grad_norm_max_early_late"] = gmax
        if gmax <= no_update:
            reasons.append(f"grad_norm was {gmax:.3g} at most")
            if first is None:
                first = (grad.steps[0], grad.phases[0] if grad.phases else None)
    if not reasons or first is None:
        return None
    for name in ("reward_mean", "reward_std"):
        s = metric(run, name)
        if s is not None:
            evidence[f"{name}_first"] = s.values[0]
            evidence[f"{name}_run_mean"] = s.mean()
    evidence["onset_step"] = first[0]
    if first[1] is not None:
        evidence["onset_phase"] = first[1]
    return Finding(
        ID, "error", "R/U", first[0], evidence,
        "No usable learning signal from the first logged step (" + "; ".join(reasons) + "): a setup problem, not a collapse.",
        WHAT_TO_TRY,
    )


SPEC = DetectorSpec(
    id=ID,
    severity="error",
    stage="R/U",
    summary="no usable signal or no update from the first steps: a setup problem, not a collapse",
    key_metrics=("adv_std", "zero_variance_group_frac", "reward_std", "grad_norm"),
    fn=detect,
    knobs=(
        Knob("dead_below", 0.1, "early and late advantage std (or proxy) below this = never had signal", low=0.0),
        Knob("no_update_below", 1e-8, "grad_norm at or below this at every early and late point = no update", low=0.0),
    ),
)
