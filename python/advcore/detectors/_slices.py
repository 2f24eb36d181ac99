"""Per-slice detection: the R- and T-stage detectors run on each slice of the samples.

Aggregate success hides the slice that stopped learning (seed 002: "aggregate success can hide
mode-specific regressions"): one task family saturates while the others learn, long horizons floor
out, a visual variation breaks the reward. When a run carries per-slice metrics
(:attr:`advcore.model.Run.slices`: the stage trace of labelled samples, or a trainer's per-task keys),
each slice becomes a run of its own (:func:`slice_views`) and the detectors of
:data:`SLICE_DETECTORS` judge it with their usual windows and knobs; a finding names its slice.

A slice is judged only on enough samples, never on noise:

* it must be sampled on at least ``MIN_PRESENT`` (half) of the run's steps;
* each point a detector reads holds at least ``MIN_GROUPS`` (4) groups: a slice with fewer groups per
  step is pooled over ``k = ceil(MIN_GROUPS / g)`` consecutive steps, ``g`` the smaller of its median
  groups per step and its groups per run step (absent steps counting 0) (its moments
  merged exactly, the tied share weighted by groups), up to ``MAX_POOL`` (4) steps, so that an onset is
  still dated within 4 steps; a slice that would need more is not evaluable;
* its label must be a label of the prompt, constant within each group (task, family, horizon, visual
  variation). A label that splits groups (a success label, a failure category) sorts samples by their
  reward, so the reward spread inside its slices says nothing about the learning signal: such labels
  are not judged by these detectors.

Slices of a trainer's per-task keys (``reward_mean`` only, no counts) are judged as logged: the
trainer averaged its own episodes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from advcore.model import Run

__all__ = ["GROUP_DETECTORS", "MAX_POOL", "MIN_GROUPS", "MIN_PRESENT", "SLICE_DETECTORS", "SliceView", "Unjudged",
           "group_views", "slice_views"]

#: The detectors that run per slice: those that read the reward and advantage of the samples
#: (stages R and T); the update (stage U) is one for the whole batch and has no slices.
SLICE_DETECTORS = ("DEGENERATE_GROUPS", "REWARD_STD_DEATH", "ADV_COLLAPSE", "REWARD_SATURATION", "REWARD_FLOOR")
#: Groups a point of a slice holds at least (after pooling).
MIN_GROUPS = 4
#: Consecutive steps pooled at most (an onset is dated within this many steps).
MAX_POOL = 4
#: Share of the run's steps on which a slice must be sampled.
MIN_PRESENT = 0.5
#: Share of steps on which a label's slices may hold more groups than the batch (a label that splits
#: groups) before the label is not judged.
SPLIT_STEPS = 0.1

_COUNTS = ("n_samples", "n_groups")


@dataclass(frozen=True, slots=True)
class SliceView:
    """One judged slice: its name, the run of its per-step (or pooled) metrics, the steps pooled per
    point and the median groups per step."""

    name: str
    run: Run
    pooled: int
    groups_per_step: float | None


@dataclass(frozen=True, slots=True)
class Unjudged:
    """A slice (or a whole label, ``"<label>=*"``) that is not evaluable, and why."""

    name: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"slice": self.name, "reason": self.reason}


def _label(name: str) -> str:
    return name.split("=", 1)[0]


def _split_labels(slices: pl.DataFrame, run: Run) -> set[str]:
    """Labels whose slices hold more groups at a step than the whole batch has (groups split)."""
    if "n_groups" not in slices.columns or not run.has("n_groups"):
        return set()
    per_label = (slices.with_columns(pl.col("slice").str.split_exact("=", 1).struct.field("field_0").alias("label"))
                 .group_by("label", "step").agg(pl.col("n_groups").sum().alias("sum_groups")))
    whole = run.frame.select("step", pl.col("n_groups").alias("all_groups")).drop_nulls()
    joined = per_label.join(whole, on="step", how="inner")
    if joined.is_empty():
        return set()
    share = joined.group_by("label").agg((pl.col("sum_groups") > pl.col("all_groups") + 0.5).mean().alias("split"))
    return set(share.filter(pl.col("split") > SPLIT_STEPS)["label"].to_list())


def _pooled(part: pl.DataFrame, blocks: Mapping[int, int]) -> pl.DataFrame:
    """``part`` (one slice, per step) pooled into blocks: moments merged exactly (by samples), the
    tied share and within-group std weighted by groups; the block's first step."""
    cols = set(part.columns)
    n = pl.col("n_samples")
    g = pl.col("n_groups")
    aggs: list[pl.Expr] = [pl.col("step").min().alias("step"), n.sum().alias("n_samples"), g.sum().alias("n_groups")]
    for prefix in ("reward", "adv"):
        mean, std = f"{prefix}_mean", f"{prefix}_std"
        if mean in cols:
            w = n.filter(pl.col(mean).is_not_null())
            m = (pl.col(mean) * n).sum() / w.sum()
            aggs.append(m.alias(mean))
            if std in cols:
                second = ((pl.col(std) ** 2 + pl.col(mean) ** 2) * n).sum() / w.sum()
                aggs.append((second - m ** 2).clip(lower_bound=0.0).sqrt().alias(std))
        if f"{prefix}_min" in cols:
            aggs.append(pl.col(f"{prefix}_min").min())
        if f"{prefix}_max" in cols:
            aggs.append(pl.col(f"{prefix}_max").max())
    for name, weight in (("reward_std_within", g), ("zero_variance_group_frac", g), ("adv_zero_frac", n)):
        if name in cols:
            has = pl.col(name).is_not_null()
            aggs.append(((pl.col(name) * weight).sum() / weight.filter(has).sum()).alias(name))
    block = pl.col("step").replace_strict(dict(blocks), default=None)
    out = part.with_columns(block.alias("__block")).drop_nulls("__block").group_by("__block").agg(aggs)
    return out.sort("step").drop("__block")


def _view(name: str, part: pl.DataFrame, run: Run, steps: list[int]) -> SliceView | Unjudged:
    present = part["step"].n_unique()
    if present < MIN_PRESENT * len(steps):
        return Unjudged(name, f"sampled on {present} of {len(steps)} steps (needs at least half)")
    counted = "n_groups" in part.columns and part["n_groups"].drop_nulls().len() > 0
    pooled, median = 1, None
    if counted:
        med = part["n_groups"].drop_nulls().median()
        median = float(med) if isinstance(med, (int, float)) else 0.0
        if median <= 0:
            return Unjudged(name, "no groups of at least two samples")
        # absent steps count as zero groups: the pool must reach MIN_GROUPS on average over the run
        per_step = float(part["n_groups"].fill_null(0).sum()) / len(steps)
        pooled = math.ceil(MIN_GROUPS / min(median, per_step)) if min(median, per_step) > 0 else MAX_POOL + 1
        if pooled > MAX_POOL:
            return Unjudged(name, f"{median:g} groups per step (median); a point needs {MIN_GROUPS}, which would "
                                  f"pool {pooled} steps (at most {MAX_POOL})")
        blocks = {s: i // pooled for i, s in enumerate(steps)}
        frame = _pooled(part, blocks) if pooled > 1 else part.drop("slice")
        frame = frame.filter(pl.col("n_groups") >= MIN_GROUPS) if pooled > 1 else frame
    else:
        frame = part.drop("slice")
    metrics = [c for c in frame.columns if c not in ("step", *_COUNTS) and frame[c].null_count() < frame.height]
    frame = frame.select(pl.col("step").cast(pl.Int64), *(pl.col(m).cast(pl.Float64) for m in metrics))
    sub = Run(run.path, run.format, run.trainer, frame, {m: f"slice {name}: {m}" for m in metrics},
              {"slice": name, "pooled_steps": pooled})
    return SliceView(name, sub, pooled, median)


def slice_views(run: Run) -> tuple[list[SliceView], list[Unjudged]]:
    """The slices of ``run`` that can be judged, as runs of their own, and those that cannot (with
    the reason); ``([], [])`` for a run without slices. Computed once per run."""
    return run.cached("slice_views", lambda: _views(run))


def _views(run: Run) -> tuple[list[SliceView], list[Unjudged]]:
    slices = run.slices
    if slices is None or slices.is_empty():
        return [], []
    steps = sorted(set(run.frame["step"].drop_nulls().to_list()) | set(slices["step"].to_list())) \
        if "step" in run.frame.columns else sorted(set(slices["step"].to_list()))
    split = _split_labels(slices, run)
    views: list[SliceView] = []
    unjudged: list[Unjudged] = [Unjudged(f"{label}=*", "its label varies within groups (a label of the samples, "
                                                      "such as success, not of the prompts)") for label in sorted(split)]
    for (name,), part in slices.partition_by("slice", as_dict=True, maintain_order=True).items():
        if _label(str(name)) in split:
            continue
        out = _view(str(name), part.sort("step"), run, steps)
        (views if isinstance(out, SliceView) else unjudged).append(out)  # type: ignore[arg-type]
    return views, unjudged


#: The canonical metrics a multi-agent trainer logs once per agent group (BenchMARL/TorchRL MAPPO:
#: ``train/<group>/entropy`` read as ``entropy/<group>``), and the detectors that judge each group's policy
#: and critic with them: no one group's is the run's.
GROUP_METRICS = ("reward_mean", "entropy", "kl_step", "kl", "clip_frac", "vf_explained_var", "grad_norm",
                 "value_loss")
GROUP_DETECTORS = ("ENTROPY_COLLAPSE", "UPDATE_UNSTABLE", "UPDATE_SUPPRESSED", "BASELINE_BROKEN")


def group_views(run: Run) -> list[SliceView]:
    """One view per agent group of ``run`` (``group=<name>``): a run of that group's metrics under their
    canonical names (``entropy/ghas`` read as ``entropy``), its reward the group's where logged
    (``reward_mean/ghas``), else the run's. Only groups with a metric besides the reward; none when the
    run logs no per-group metric."""
    by_group: dict[str, dict[str, str]] = {}
    for col in run.frame.columns:
        metric, _, group = col.partition("/")
        if group and metric in GROUP_METRICS:
            by_group.setdefault(group, {})[metric] = col
    views = []
    for group, cols in sorted(by_group.items()):
        if set(cols) <= {"reward_mean"}:
            continue
        if "reward_mean" not in cols and "reward_mean" in run.frame.columns:
            cols["reward_mean"] = "reward_mean"
        frame = run.frame.select("step", *(pl.col(c).alias(m) for m, c in cols.items()))
        sources = {m: run.sources.get(c, c) for m, c in cols.items()}
        views.append(SliceView(f"group={group}", replace(run, frame=frame, sources=sources, slices=None, trace=None),
                               1, None))
    return views


def sliced(finding: Any, view: SliceView, aggregate_fired: bool) -> Any:
    """``finding`` of a slice's run, named after its slice; when the run as a whole stays alive, its
    tips lead with one for the slice (the detector's own tips are written for a whole run)."""
    tail = "" if aggregate_fired else ", while the run as a whole stays alive"
    message = f"In slice {view.name}: {finding.message.rstrip('.')}{tail}."
    evidence = {**finding.evidence, "slice": view.name, "pooled_steps": view.pooled,
                "aggregate_fired": aggregate_fired}
    if view.groups_per_step is not None:
        evidence["groups_per_step"] = view.groups_per_step
    tries = finding.what_to_try
    if not aggregate_fired:
        tries = (f"Only slice {view.name} lost its signal: look first at what is specific to it (its resets, time "
                 f"limit, success check, observation pipeline), and rebalance the training mix away from it while "
                 f"the other slices still learn; the tips below are for a whole run.", *tries)
    return replace(finding, message=message, evidence=evidence, slice=view.name, what_to_try=tries)
