"""The learning signal stage by stage (SPEC section 4): how much contrast each stage still carried.

For the verdict to say *where* the signal was lost it has to show the signal on both sides of the
loss. Per stage, the quantity that carries the signal in a per-step log, early and late (the
medians of the detectors' windows, first and last 20 % of the logged points; a share's means):

* **R** — the rewards' contrast *within* groups, which is what a group baseline can use:
  ``1 - zero_variance_group_frac`` (share of groups with any spread) when logged, else an accuracy
  filter's kept share ``filter/kept_frac`` (the sampled groups neither all failed nor all succeeded), else
  ``reward_std_within``, else ``reward_std`` (reward units);
* **A** — ``vf_explained_var`` (how much of the return the value baseline explains), PPO only;
* **T** — ``adv_std``, else the verl range ``adv_max - adv_min`` (proxies built from rewards are
  not shown here: they would repeat R);
* **U** — ``grad_norm``, ``kl``, ``entropy`` (the first of them the log has).

A multi-agent run that logs A and U once per agent group (BenchMARL's ``train/<group>/entropy``, read as
``entropy/<group>``) and not for the run has one level per group, in the group's name order.

A stage whose metrics the log lacks is left out: it could not be observed, which is different
from a stage that carried nothing.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from advcore.detectors._base import Finding
from advcore.detectors._slices import GROUP_METRICS
from advcore.detectors._windows import (REWARD_PROXIES, STD_BOUND, Series, adv_signal, metric, reward_spread,
                                        reward_std_bound)
from advcore.detectors.filter_starvation import KEPT
from advcore.model import Run

__all__ = ["METRIC_STAGES", "StageLevel", "contrast_logged", "had_contrast", "stage_last", "stage_of", "stage_signal"]


#: The stage each canonical metric measures (per-component names, ``reward/<name>``, by their prefix):
#: R the rewards and what they are scored on, A the baseline and returns, T the advantages as trained
#: on, U the update and the policy it moves.
METRIC_STAGES: dict[str, str] = {
    **dict.fromkeys(("reward_mean", "reward_std", "reward_std_within", "reward_max", "reward_min",
                     "zero_variance_group_frac", "response_length_mean", "response_length_max", "truncated_frac",
                     "success_rate", "elo", "val_score", "reward_null_frac", "reward/", "reward_std/"), "R"),
    **dict.fromkeys(("return_mean", "return_std", "value_mean", "value_std", "value_loss", "vf_explained_var",
                     "vf_explained_var/"), "A"),
    **dict.fromkeys(("adv_mean", "adv_std", "adv_max", "adv_min", "adv_zero_frac"), "T"),
    **dict.fromkeys(("entropy", "entropy/", "kl", "kl/", "kl_step", "clip_frac", "clip_frac/", "grad_norm",
                     "grad_norm_clipped", "step_norm", "param_norm", "update_ratio", "action_std", "lr"), "U"),
}


def stage_of(name: str) -> str | None:
    """The stage (``"R"``, ``"A"``, ``"T"`` or ``"U"``) canonical metric ``name`` measures
    (:data:`METRIC_STAGES`), None for a key without a canonical name."""
    if name in METRIC_STAGES:
        return METRIC_STAGES[name]
    head, sep, _ = name.partition("/")
    return METRIC_STAGES.get(head + sep) if sep else None


@dataclass(frozen=True, slots=True)
class StageLevel:
    """One stage's signal in one run: the metric it was read from and its early and late medians (one
    spike does not set a level), or for a share of groups its early and late means (the share pooled over
    the window: per-step shares of a step that holds one group are 0 or 1, and their median says 0 % where
    18 % of the groups had spread), or for the metric the leading finding judged the means it quotes."""

    stage: str
    metric: str
    early: float
    late: float
    #: ``"median"``, or ``"mean"`` for a share of groups and for the metric the leading finding judged, quoted with
    #: the window means it quotes
    statistic: str = "median"

    def describe(self) -> str:
        """``"R groups with reward spread 94% -> 88%"``: the stage, what was read, early -> late; an agent
        group's level names the group (``"A value explained variance (ghas) 0.39 -> 0.56"``); the leading
        finding's means say so (``"T advantage std 0.832 -> 3.38e-05 (means, as the finding)"``)."""
        label, percent = _label(self.metric)
        if percent:
            return f"{self.stage} {label} {_percent(self.early)} -> {_percent(self.late)}"
        return (f"{self.stage} {label} {self.early:.3g} -> {self.late:.3g}"
                + (" (means, as the finding)" if self.statistic == "mean" else ""))


def _percent(share: float) -> str:
    """A share in percent, whole above 1 % and to one significant digit below, so that a share that
    is small but not 0 does not read as 0 (``0.3%``, ``0.08%``)."""
    p = 100 * share
    return f"{p:.0f}%" if p == 0 or abs(p) >= 1 else f"{p:.1g}%"


#: How a stage's metric reads in a sentence, and whether it is a share shown in percent.
_LABELS = {
    "1 - zero_variance_group_frac": ("groups with reward spread", True),
    KEPT: ("groups with mixed outcomes (kept by the accuracy filter)", True),
    "reward_std_within": ("reward std within groups", False),
    "reward_std": ("reward std", False),
    "reward_max - reward_min": ("reward range (max - min)", False),
    STD_BOUND: ("reward std at most (from its mean, min and max)", False),
    "vf_explained_var": ("value explained variance", False),
    "adv_std": ("advantage std", False),
    "adv_max - adv_min": ("advantage range", False),
}


def _label(name: str) -> tuple[str, bool]:
    if name in _LABELS:
        return _LABELS[name]
    base, sep, group = name.partition("/")
    if sep and base in GROUP_METRICS:
        label, percent = _LABELS.get(base, (base, False))
        return f"{label} ({group})", percent
    return name, False


def _first(*series: Series | None) -> Series | None:
    return next((s for s in series if s is not None), None)


#: The metrics that carry the A and the U stage's signal, in the order they are read.
_A_METRICS = ("vf_explained_var",)
_U_METRICS = ("grad_norm", "kl", "entropy")


def _levels(run: Run, stage: str, names: tuple[str, ...]) -> list[tuple[str, Series | None]]:
    """The first of ``names`` the run logs; else, per agent group (``<name>/<group>``), the first of
    ``names`` that group logs."""
    whole = _first(*(metric(run, n) for n in names))
    if whole is not None:
        return [(stage, whole)]
    groups = sorted({c.partition("/")[2] for c in run.frame.columns if c.partition("/")[0] in names})
    per_group = [(stage, _first(*(metric(run, f"{n}/{g}") for n in names))) for g in groups if g]
    return per_group or [(stage, None)]


def _candidates(run: Run, lead: str | None = None) -> list[tuple[str, Series | None]]:
    tied = metric(run, "zero_variance_group_frac")
    contrast = None if tied is None else tied.map("1 - zero_variance_group_frac", lambda v: 1.0 - v)
    adv = adv_signal(run)
    if adv is not None and adv.name in REWARD_PROXIES:
        adv = None
    return [
        # without a logged std, the most it can be given the reward's mean and range, exact for a 0/1 reward, whose
        # range is 1 whenever a batch holds a success and a failure (a newcomer read verl's GSM8K score as 'reward
        # range 1 -> 1'); the range (reward_spread's last resort) when no mean is logged
        ("R", _first(contrast, metric(run, KEPT), metric(run, "reward_std_within"), metric(run, "reward_std"),
                     reward_std_bound(run), reward_spread(run))),
        *_levels(run, "A", _A_METRICS),
        ("T", adv),
        *_levels(run, "U", tuple(sorted(_U_METRICS, key=lambda name: name != lead))),
    ]


def contrast_logged(run: Run) -> list[str]:
    """The metrics of the reward's contrast that ``run`` logs, in the order the R stage's level reads them
    (:func:`stage_signal`): whether any is there at all, however few its points."""
    names = [m for m in ("zero_variance_group_frac", "reward_std_within", "reward_std") if run.has(m)]
    if run.has("reward_max") and run.has("reward_min"):
        names.append("reward_max and reward_min")
    return names


def stage_signal(run: Run, lead: Finding | None = None) -> tuple[StageLevel, ...]:
    """Per observed stage, in R -> A -> T -> U order, the early and late level of its signal; at stage U the metric
    the leading finding ``lead`` judged (``evidence["metric"]``, when it is one of the stage's) before the others (a
    newcomer read 'U grad_norm 0.719 -> 0.729' beside a verdict of collapsed entropy). The level of the metric the
    lead judged is its window means (``evidence["early_mean"]``, ``["late_mean"]``) when it gives them: a newcomer
    read one advantage std as 0.843 -> 3.45e-05 on the stage line and 0.832 -> 3.38e-05 in the finding."""
    evidence = {} if lead is None else lead.evidence
    judged, early, late = evidence.get("metric"), evidence.get("early_mean"), evidence.get("late_mean")
    out = []
    for stage, s in _candidates(run, None if judged is None else str(judged)):
        if s is not None and s.judgeable:
            if s.name == judged and isinstance(early, (int, float)) and isinstance(late, (int, float)):
                out.append(StageLevel(stage, s.name, float(early), float(late), "mean"))
            elif _label(s.name)[1]:  # a share of groups: pooled over the window (its mean)
                out.append(StageLevel(stage, s.name, statistics.fmean(s.early()), statistics.fmean(s.late()), "mean"))
            else:
                out.append(StageLevel(stage, s.name, s.early_median(), statistics.median(s.late())))
    return tuple(out)


#: Reward components :func:`stage_last` shows at most.
_COMPONENTS_SHOWN = 6


def stage_last(run: Run) -> tuple[str, ...]:
    """Per observed stage (R -> A -> T -> U), its signal at the last logged step, and the reward mean
    and its components there: ``("reward mean -6.58", "reward/length -6.1", "R reward std 7.2")``; for a run too short for early and late
    windows, where :func:`stage_signal` has nothing to compare."""
    mean = metric(run, "reward_mean")
    out = [f"reward mean {mean.values[-1]:.4g}"] if mean is not None else []
    # the reward's components beside it: which term dominates (a length penalty, a format bonus)
    for name in sorted(c for c in run.frame.columns if c.startswith("reward/"))[:_COMPONENTS_SHOWN]:
        if (part := metric(run, name)) is not None:
            out.append(f"{name} {part.values[-1]:.4g}")
    for stage, s in _candidates(run):
        if s is not None:
            label, percent = _label(s.name)
            out.append(f"{stage} {label} {_percent(s.values[-1]) if percent else format(s.values[-1], '.3g')}")
    return tuple(out)


def had_contrast(level: StageLevel, *, floor: float = 1e-6) -> bool:
    """Whether an R-stage level still shows contrast late in the run (a tied-group share below
    one half, or a reward spread above ``floor``)."""
    if not math.isfinite(level.late):
        return False
    if level.metric in ("1 - zero_variance_group_frac", KEPT):
        return level.late >= 0.5
    return level.late > floor
