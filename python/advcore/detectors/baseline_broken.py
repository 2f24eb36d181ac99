"""BASELINE_BROKEN (warn, stage A): the value baseline explains nothing of the return, or all of it.

Judged on ``vf_explained_var`` = ``1 - Var(returns - values) / Var(returns)`` (verl
``critic/vf_explained_var``, SB3 ``train/explained_variance``; dimensionless, at most 1, unbounded
below). The early window (first 20 % of the logged points, at least 3) is the critic's warm-up and
is not judged on its own: PPO's first updates often have a negative explained variance while the
value head learns. Beyond it, medians are used because one bad batch can give -95 (tinyzero).

* *explains nothing*: the median after the warm-up and the late-window median are both at or
  below ``explains_below`` (0.05): the advantage is the return minus a baseline that carries no
  information about it (a critic that cannot see the state, or value targets it cannot fit);
* *explains everything*: both medians are at or above ``leak_above`` (0.999): the residual
  ``returns - values``, hence the advantage, is ~0 (a value input that sees the return, or a
  return that does not depend on the actions).

Onset: the first of ``sustain`` (5) consecutive logged points in that state after the last
stretch of ``sustain`` points out of it (:func:`advcore.detectors._windows.last_onset_index`: a
critic's warm-up below the bar, followed by healthy steps and a later break, dates the break, not
the warm-up), else the first such point of the late window. Not applicable (None) to a group-based run (GRPO and kin log group
statistics and no critic metric: their baseline is the group mean); not evaluable without
``vf_explained_var`` otherwise.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import last_onset_index, metric, run_kind, window_len
from advcore.ingest import Run

__all__ = ["SPEC", "detect"]

ID = "BASELINE_BROKEN"

WHAT_TO_TRY_NOTHING = (
    "Check that the critic sees the state: a constant or dummy observation (a disconnected simulator, a wrong camera "
    "shape), a detached or frozen value head, or a feature slice that drops the state all pin explained variance at 0.",
    "Check the value targets: reward and return scale (normalise them), gamma/lambda, and done/truncation handling in "
    "GAE; a value loss that keeps growing means the critic cannot fit them.",
    "Give the critic a chance: a higher critic learning rate, critic warm-up steps before actor updates, value "
    "clipping that is not freezing it.",
)
WHAT_TO_TRY_EVERYTHING = (
    "Look for a target leak: the value input includes the reward, the return or future tokens (e.g. the scored "
    "response with its verdict), so returns - values is ~0.",
    "Check that the return depends on the actions: a reward that is constant per prompt or episode is fully "
    "predictable and leaves no advantage to learn from.",
)


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate BASELINE_BROKEN on ``run`` with resolved ``knobs``."""
    s = metric(run, "vf_explained_var")
    if s is None:
        return None if run_kind(run) == "group" else NotEvaluable(ID, ("vf_explained_var",))
    if not s.judgeable:
        return None
    below, leak, sustain = float(knobs["explains_below"]), float(knobs["leak_above"]), int(knobs["sustain"])
    warmup = window_len(len(s))
    post = statistics.median(s.values[warmup:])
    late = statistics.median(s.late())
    pred: Callable[[float], bool]
    try_: tuple[str, ...]
    if post <= below and late <= below:
        rule, pred, try_ = "explains_nothing", (lambda v: v <= below), WHAT_TO_TRY_NOTHING
    elif post >= leak and late >= leak:
        rule, pred, try_ = "explains_everything", (lambda v: v >= leak), WHAT_TO_TRY_EVERYTHING
    else:
        return None
    idx = last_onset_index(s.values, pred, sustain)
    if idx is None:
        start = len(s) - window_len(len(s))
        idx = next(i for i in range(start, len(s)) if pred(s.values[i]))
    evidence: dict[str, object] = {
        "metric": "vf_explained_var",
        "rule": rule,
        "warmup_median": statistics.median(s.early()),
        "post_warmup_median": post,
        "late_median": late,
        "min": min(s.values),
        "max": max(s.values),
        "warmup_points": warmup,
        "explains_below": below,
        "leak_above": leak,
        **s.where(idx),
    }
    if rule == "explains_nothing":
        message = (f"The value baseline explains nothing of the return: explained variance {post:.3g} (median after "
                   f"the first {warmup} points, the warm-up), {late:.3g} late. The advantages are returns minus an "
                   "uninformative baseline.")
    else:
        message = (f"The value baseline explains all of the return (explained variance {late:.4g} late): "
                   "returns - values, hence the advantage, is ~0 and the policy gets no signal.")
    return Finding(ID, "warn", "A", s.step_at(idx), dict(evidence), message, try_)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="A",
    summary="the value baseline explains nothing of the return (explained variance <= ~0) or all of it (~1)",
    key_metrics=("vf_explained_var", "value_mean"),
    fn=detect,
    knobs=(
        Knob("explains_below", 0.05, "explained variance at or below this after the warm-up = explains nothing",
             high=1.0),
        Knob("leak_above", 0.999, "explained variance at or above this after the warm-up = no residual", low=0.0,
             high=1.0),
        Knob("sustain", 5, "consecutive logged steps in that state for the onset estimate", low=1, integer=True),
    ),
)
