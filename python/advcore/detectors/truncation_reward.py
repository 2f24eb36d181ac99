"""TRUNCATION_REWARD (warn, stage R): most completions hit the length cap, so the reward measures
truncation rather than the task.

Rule: the truncated share per step (``truncated_frac``, 0..1: TRL ``completions/clipped_ratio``,
verl ``response_length/clip_ratio``) has a late-window mean (last 20 % of the logged points) >=
``truncated_above`` (0.5). Without ``truncated_frac`` the proxy ``1[response_length_mean >= 0.99
x cap]`` is used (1 when the batch's mean length is at the cap, i.e. at least ~99 % of the
completions were cut: a lower bound on the share), with the cap taken from the knob
``max_length`` when set (> 0), else from the longest completion logged over the run
(``max(response_length_max)``, TRL ``completions/max_length``). Onset: the first of ``sustain``
(5) consecutive logged points at or above ``truncated_above``; the evidence also gives the first
``sustain`` points where every completion was cut (``all_truncated_from``, when the late mean is
>= 0.95) and the Pearson
correlation of the truncated share with ``reward_mean`` across steps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from advcore.detectors._base import DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import Series, aligned, metric, onset_index
from advcore.ingest import Run

__all__ = ["SPEC", "detect", "truncated_share"]

ID = "TRUNCATION_REWARD"

#: The mean length within this fraction of the cap counts as "at the cap" (the proxy).
CAP_TOL = 0.01
#: The late truncated share at or above which the evidence names the step from which every completion was cut.
ALL_CUT_LATE = 0.95
NEEDS = ("truncated_frac (or response_length_mean with response_length_max, or the knob max_length)",)

WHAT_TO_TRY = (
    "Raise max_completion_length (max_response_length) so that completions can finish, or shorten the prompt "
    "template's demanded reasoning.",
    "Penalise or mask truncated completions (TRL mask_truncated_completions, DAPO overlong filtering / soft "
    "overlong punishment) so that cut-off text is not scored as if it were an answer.",
    "Check for token loops or a missing stop token (EOS not in the generation config) if lengths jump straight to "
    "the cap.",
    "With a thinking model, disable or budget the thinking phase for the reward to see the final answer.",
)


def truncated_share(run: Run, max_length: float = 0.0) -> Series | None:
    """Per step, the share of completions cut at the length cap (0..1): ``truncated_frac``, else
    the proxy ``1[response_length_mean >= 0.99 x cap]`` (cap = ``max_length`` if > 0, else
    ``max(response_length_max)``); None when neither can be formed."""
    s = metric(run, "truncated_frac")
    if s is not None:
        return s
    length = metric(run, "response_length_mean")
    if length is None:
        return None
    cap = float(max_length)
    if cap <= 0:
        longest = metric(run, "response_length_max")
        if longest is None:
            return None
        cap = max(longest.values)
    if cap <= 0:
        return None
    cut = (1 - CAP_TOL) * cap
    return length.map(f"1[response_length_mean >= 0.99 x {cap:g}]", lambda v: 1.0 if v >= cut else 0.0)


def _pearson(x: tuple[float, ...], y: tuple[float, ...]) -> float | None:
    if len(x) < 3 or np.std(x) == 0 or np.std(y) == 0:
        return None
    return float(np.corrcoef(np.asarray(x), np.asarray(y))[0, 1])


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate TRUNCATION_REWARD on ``run`` with resolved ``knobs``."""
    s = truncated_share(run, float(knobs["max_length"]))
    if s is None:
        return NotEvaluable(ID, NEEDS)
    if not s.judgeable:
        return None
    above, sustain = float(knobs["truncated_above"]), int(knobs["sustain"])
    late = s.late_mean()
    if not late >= above:
        return None
    idx = onset_index(s.values, lambda v: v >= above, sustain)
    # "every completion cut" is reported only when it describes the end of the run, not a passing stretch
    full = onset_index(s.values, lambda v: v >= 1.0 - 1e-9, sustain) if late >= ALL_CUT_LATE else None
    evidence: dict[str, object] = {
        "metric": s.name,
        "early_mean": s.early_mean(),
        "late_mean": late,
        "run_mean": s.mean(),
        "truncated_above": above,
        "all_truncated_from": s.step_at(full),
        **s.where(idx),
    }
    if s.proxy:
        evidence["proxy"] = s.name
    reward = metric(run, "reward_mean")
    corr = None
    if reward is not None:
        share, rew, _ = aligned(s, reward)
        corr = _pearson(share, rew)
    evidence["reward_corr"] = corr
    tail = ""
    if full is not None:
        tail = f"; every completion is cut from step {s.steps[full]}"
    if corr is not None and math.isfinite(corr) and abs(corr) >= 0.5:
        tail += f"; the reward follows the truncated share (Pearson r = {corr:.2f} across steps)"
    return Finding(
        ID, "warn", "R", s.step_at(idx), evidence,
        f"{100 * late:.0f}% of completions hit the length cap late in the run (by {s.name}){tail}: the reward scores "
        "cut-off text, so it measures truncation more than the task.",
        WHAT_TO_TRY,
    )


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="most completions hit the length cap, so the reward measures truncation",
    key_metrics=("truncated_frac", "response_length_mean", "response_length_max"),
    fn=detect,
    knobs=(
        Knob("truncated_above", 0.5, "late-window share of completions at the length cap at or above this = "
             "truncation dominates", low=0.0, high=1.0),
        Knob("sustain", 5, "consecutive logged steps at or above truncated_above for the onset estimate",
             low=1, integer=True),
        Knob("max_length", 0, "the length cap in tokens, for logs without truncated_frac (0 = read it from "
             "response_length_max)", low=0.0),
    ),
)
