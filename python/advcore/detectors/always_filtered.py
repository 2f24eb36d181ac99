"""ALWAYS_FILTERED (warn, stage R): tasks the accuracy filter drops at every step, so they are never
trained.

SimpleVLA-RL's accuracy filter (``RayTrainer.filter``) drops every group whose success rate lies
outside ``[accuracy_lower_bound, accuracy_upper_bound]``. A task whose G rollouts all fail (or all
succeed) at every step it is drawn is dropped every time: the run trains on the other tasks and this
one never gets a gradient, while the aggregate success rises. Per-task success is read from the run's
task slices (:attr:`advcore.model.Run.slices`, slices ``task=<name>``: a verifier's per-task
``train_verify_score/<task>`` keys, :mod:`advcore.ingest._slices`); the bounds from the console's
config (``metadata["accuracy_lower_bound"]`` / ``["accuracy_upper_bound"]``).

Rule: a run with an accuracy filter (filter or accuracy lines were read, or bounds are known), and a
task logged on at least ``min_steps`` (5) steps whose success is outside the bounds on every one of
them (below the lower bound or above the upper; without known bounds: exactly 0 or exactly 1, which
any bounds strictly inside (0, 1) reject). Onset: the task's first logged step. The finding lists every
such task (``evidence["tasks"]``).

Not evaluable on a run whose log shows no accuracy filter or no per-task success.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from advcore.detectors._base import Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors.filter_starvation import KEPT
from advcore.model import Run

__all__ = ["SPEC", "detect"]

ID = "ALWAYS_FILTERED"

WHAT_TO_TRY = (
    "Look at the rollouts of the named tasks: a task that always fails may be unsolvable as set up (a wrong "
    "instruction, an unreachable object, a success check that never fires); one that always succeeds is exhausted.",
    "Give an always-failing task a way in: demonstrations (SFT) of it, a denser reward, more rollouts per task (G), "
    "or a lower `data.accuracy_lower_bound` for it.",
    "Report held-out success per task: the aggregate rises on the tasks that train and hides the ones that never do.",
)


def _filtered(run: Run) -> bool:
    meta = run.metadata
    return (bool(meta.get("accuracy_lines") or meta.get("filter_lines")) or "accuracy_lower_bound" in meta
            or run.has(KEPT))


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate ALWAYS_FILTERED on ``run`` with resolved ``knobs``."""
    has_tasks = run.slices is not None and "reward_mean" in run.slices.columns and \
        bool(run.slices["slice"].str.starts_with("task=").any())
    if not (has_tasks and _filtered(run)):
        need = []
        if not has_tasks:
            need.append("success per task (train_verify_score/<task> keys, logged when the verifier returns one "
                        "score per task; a per-sample dump with a slice_task column)")
        if not _filtered(run):
            need.append("the accuracy filter's lines (Accuracy distribution, Filtered batch size) or its bounds "
                        "(data.accuracy_lower_bound / upper_bound)")
        return NotEvaluable(ID, tuple(need))
    assert run.slices is not None
    lo, hi = run.metadata.get("accuracy_lower_bound"), run.metadata.get("accuracy_upper_bound")
    tasks = (run.slices.filter(pl.col("slice").str.starts_with("task=")).drop_nulls("reward_mean")
             .group_by("slice", maintain_order=True)
             .agg(pl.col("step").min().alias("first"), pl.col("step").max().alias("last"),
                  pl.col("reward_mean").min().alias("lo"), pl.col("reward_mean").max().alias("hi"),
                  pl.len().alias("steps")))
    out = []
    for row in tasks.filter(pl.col("steps") >= int(knobs["min_steps"])).iter_rows(named=True):
        below = row["hi"] < lo - 5e-3 if lo is not None else row["hi"] == 0.0
        above = row["lo"] > hi + 5e-3 if hi is not None else row["lo"] == 1.0
        if below or above:
            out.append({"task": row["slice"].removeprefix("task="), "steps": row["steps"], "first_step": row["first"],
                        "last_step": row["last"], "success_min": row["lo"], "success_max": row["hi"],
                        "side": "below the lower bound" if below else "above the upper bound"})
    if not out:
        return None
    out.sort(key=lambda t: (t["first_step"], t["task"]))
    first = out[0]
    bound = (f"lower bound {lo:g}" if first["side"].startswith("below") else f"upper bound {hi:g}") \
        if (lo if first["side"].startswith("below") else hi) is not None else "the filter's bounds"
    names = ", ".join(t["task"] for t in out[:5]) + (f" and {len(out) - 5} more" if len(out) > 5 else "")
    evidence: dict[str, object] = {"tasks": out, "accuracy_lower_bound": lo, "accuracy_upper_bound": hi,
                                   "n_tasks": int(tasks.height), "onset_step": first["first_step"]}
    return Finding(
        ID, "warn", "R", int(first["first_step"]), evidence,
        f"{len(out)} of {tasks.height} tasks were filtered out at every step they were drawn ({names}; e.g. "
        f"{first['task']}: success {first['success_max']:.2f} at most over {first['steps']} steps, {first['side']} "
        f"({bound})): the accuracy filter drops their groups, so they are never trained.",
        WHAT_TO_TRY,
    )


CARD = Card(
    tagline="some tasks are dropped by the filter at every step and never trained",
    happening="""
        An accuracy filter (SimpleVLA-RL's `data.filter_accuracy`, DAPO's dynamic sampling) keeps only groups
        whose success rate lies within its bounds. A task whose rollouts all fail, or all succeed, every time
        it is drawn is dropped every time: the policy never receives a gradient from it. The aggregate success
        rises on the other tasks and hides it.
    """,
    looks_like="""
        Per-task success (a verifier's `train_verify_score/<task>`) pinned at 0.00 (or 1.00) from the first
        step to the last while the aggregate moves; in the console, `Accuracy distribution:` lines whose
        count at 0.00 never falls to zero.
    """,
    decides="""
        For each task slice (`task=<name>`) with at least `min_steps` logged values: every value is below the
        lower bound (or above the upper bound) read from the console's config; without known bounds, exactly
        0 (or exactly 1). Only in a run with an accuracy filter (its lines or its bounds were read). Onset: the
        first such task's first step; `evidence["tasks"]` lists them all. Not evaluable without per-task
        success or without a filter in the log.
    """,
    related="""
        FILTER_STARVATION is the whole batch starved (no task trains); REWARD_FLOOR and REWARD_SATURATION read
        a task slice pinned at its floor or ceiling when no filter drops it, and name the slice.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="tasks whose success is outside the filter's bounds at every step are never trained",
    key_metrics=("task=<name> slices: reward_mean",),
    fn=detect,
    knobs=(
        Knob("min_steps", 5, "logged steps of a task before 'always filtered' is said", low=1, integer=True,
             why="A task at 0.00 on one or two draws is chance at a low success rate (0.875^8 = 0.34 for one "
                 "group at p = 0.125); five draws all outside the bounds is not."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
