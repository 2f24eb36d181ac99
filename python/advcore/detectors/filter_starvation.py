"""FILTER_STARVATION (warn, stage R): the trainer's accuracy filter rejects nearly every group, so
(almost) no update happens.

SimpleVLA-RL's accuracy filter (``RayTrainer.filter``, ``data.filter_accuracy=True``) and DAPO-style
dynamic sampling drop the groups whose success rate lies outside ``[accuracy_lower_bound,
accuracy_upper_bound]`` before any metric of the step is computed, and keep drawing batches until
``train_batch_size`` groups survive. At a cold start (a policy that fails every task: every rate 0.00,
below a lower bound of 0.1) every group is rejected: the trainer draws batch after batch, logs no step,
and when the epoch's data runs out it moves on without an update. The logged metrics cannot show this,
because they are computed on what survived; the filter's own lines can
(:mod:`advcore.ingest.formats.simplevla`: ``filter/kept_frac`` per step, ``metadata["filter_pending"]``
for the batches drawn after the last logged step).

Rule: the share of sampled groups (or samples) the filter kept (``filter/kept_frac``) is below
``starve_below`` (0.1) on ``sustain`` (3) consecutive logged steps (onset: the first of them), or the
log ends with at least ``min_batches`` (3) batches drawn after its last step whose kept share is below
``starve_below`` (no update came of them; onset: None, or the step after the last logged one). The
finding says whether the rejected groups failed every rollout (a cold start, success at the floor) or
succeeded in every one (the filter's upper bound: saturation).

Not evaluable on a run whose log shows no accuracy filter (no ``filter/`` column and no filter line):
a filter that logs nothing (DAPO's dynamic sampling in most trainers) cannot be checked.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from advcore.detectors._base import THRESHOLD, Card, DetectorSpec, Finding, Knob, NotEvaluable, Outcome
from advcore.detectors._windows import MIN_WINDOW, aligned, metric, onset_index, window_len
from advcore.model import Run

__all__ = ["KEPT", "SPEC", "FilterAccounting", "accounting", "detect"]

ID = "FILTER_STARVATION"
#: The canonical key of the share of the sampled groups an accuracy filter kept.
KEPT = "filter/kept_frac"

WHAT_TO_TRY = (
    "Start from a policy that succeeds sometimes: an SFT checkpoint on demonstrations of these tasks, or easier "
    "tasks first (a curriculum), before RL with an accuracy filter.",
    "Lower `data.accuracy_lower_bound` to 0 for the first steps (or turn `data.filter_accuracy` off until some "
    "groups succeed), or add a denser reward (partial progress) so that groups differ.",
    "Raise `data.n_samples` (G): with success rate p a group of G is all-fail with probability (1 - p)^G.",
    "If the rejected groups all succeed instead, the tasks are exhausted: harder tasks or a higher upper bound is "
    "the fix, not more rollouts.",
)


def _cause(fail: float | None, success: float | None) -> str:
    if fail is not None and success is not None and fail + success > 0:
        if fail >= success:
            return (f"{fail:.0f} of the rejected groups failed every rollout: a cold start at the success floor, "
                    "below the filter's lower bound")
        return f"{success:.0f} of the rejected groups succeeded in every rollout: saturation, above the upper bound"
    return "the rejected groups' rates are outside the filter's bounds"


def _pending(run: Run, knobs: Mapping[str, float | int]) -> Finding | None:
    tail: Any = run.metadata.get("filter_pending")
    if not isinstance(tail, dict):
        return None
    kept = tail.get(KEPT)
    batches = tail.get("filter/batches") or 0
    if kept is None or batches < int(knobs["min_batches"]) or kept >= float(knobs["starve_below"]):
        return None
    top: Any = run.frame["step"].max() if run.steps else None
    last = int(top) if top is not None else None
    evidence = {"metric": KEPT, "kept_frac": kept, "batches_without_update": batches,
                THRESHOLD: float(knobs["starve_below"]), "logged_steps": run.steps,
                **{k.removeprefix("filter/"): v for k, v in tail.items() if k != KEPT}}
    where = (f"after its last logged step ({last})" if last is not None else "and it never logged a training step")
    groups = tail.get("filter/groups_sampled")
    sampled = f" ({groups:.0f} groups sampled)" if groups is not None else ""
    return Finding(
        ID, "error" if not run.steps else "warn", "R", None if last is None else last + 1, evidence,
        f"The accuracy filter kept {100 * kept:.1f}% of {batches:.0f} batches drawn{sampled} {where}: no update came of "
        f"them; {_cause(tail.get('filter/removed_all_fail'), tail.get('filter/removed_all_success'))}.",
        WHAT_TO_TRY,
    )


def detect(run: Run, knobs: Mapping[str, float | int]) -> Outcome:
    """Evaluate FILTER_STARVATION on ``run`` with resolved ``knobs``."""
    pending = _pending(run, knobs)
    s = metric(run, KEPT) if run.has(KEPT) else None
    if s is None:
        if pending is None and not isinstance(run.metadata.get("filter_pending"), dict):
            return NotEvaluable(ID, (f"{KEPT} (an accuracy filter's lines: SimpleVLA-RL's 'Filtered batch size' or "
                                     "'Accuracy distribution' with its bounds)",))
        return pending
    cut, sustain = float(knobs["starve_below"]), int(knobs["sustain"])
    idx = onset_index(s.values, lambda v: v < cut, sustain)
    if idx is None or (len(s.values) - idx < sustain and idx > 0):  # a short tail is the pending check's to judge
        return pending
    end = next((i for i in range(idx, len(s.values)) if s.values[i] >= cut), len(s.values))
    starved = s.values[idx:end]
    batches = metric(run, "filter/batches") if run.has("filter/batches") else None
    drawn = [b for b, st in zip(batches.values, batches.steps, strict=True) if st in set(s.steps[idx:end])] \
        if batches is not None else []
    fail = sum(_values(run, "filter/removed_all_fail", s.steps[idx:end]))
    success = sum(_values(run, "filter/removed_all_success", s.steps[idx:end]))
    has_split = run.has("filter/removed_all_fail")
    evidence: dict[str, object] = {"metric": KEPT, "starved_steps": len(starved), "kept_frac_mean": sum(starved) / len(starved),
                                   THRESHOLD: cut, **s.where(idx)}
    if drawn:
        evidence["batches_per_step"] = sum(drawn) / len(drawn)
    if pending is not None:
        evidence["batches_without_update"] = pending.evidence["batches_without_update"]
    cold = " from the first logged step (a cold start)" if idx == 0 else ""
    per = f", {sum(drawn) / len(drawn):.1f} batches drawn per step" if drawn else ""
    return Finding(
        ID, "warn", "R", s.step_at(idx), evidence,
        f"The accuracy filter kept {100 * sum(starved) / len(starved):.1f}% of the sampled groups on {len(starved)} "
        f"consecutive steps{cold}{per}: nearly every rollout is thrown away before the update; "
        f"{_cause(fail if has_split else None, success if has_split else None)}.",
        WHAT_TO_TRY,
    )


def _values(run: Run, name: str, steps: tuple[int, ...]) -> list[float]:
    if not run.has(name):
        return []
    s = metric(run, name)
    if s is None:
        return []
    wanted = set(steps)
    return [v for v, st in zip(s.values, s.steps, strict=True) if st in wanted]



@dataclass(frozen=True)
class FilterAccounting:
    """What a trainer's accuracy filter removed over a run, from its ``filter/`` columns.

    ``kept_median`` and ``kept_min`` are shares (0..1) of the sampled groups (or samples) kept per
    logged step; ``removed`` / ``removed_all_fail`` / ``removed_all_success`` / ``sampled`` are group
    counts summed over the run (None where the log does not give them: the counts need the
    ``Accuracy distribution`` lines and the configured bounds); ``pending`` counts the batches drawn
    after the last logged step.
    """

    steps: int
    kept_median: float
    kept_min: float
    kept_min_step: int
    batches_median: float | None = None
    batches_max: float | None = None
    sampled: float | None = None
    removed: float | None = None
    removed_all_fail: float | None = None
    removed_all_success: float | None = None
    pending: float | None = None
    #: the shares of the sampled groups that succeeded (failed) in every rollout, means over the early and late
    #: windows (first and last 20 % of the logged steps); None when the log does not split what was removed
    all_success: tuple[float, float] | None = None
    all_fail: tuple[float, float] | None = None

    def describe(self) -> str:
        """One line: ``kept 81% of the sampled groups per step (median of 20 steps; fewest 62% at step
        3), 2 batches drawn per step (at most 4); ...``, or ``removed nothing on any of ...``."""
        if self.kept_min >= 1.0:
            text = f"removed nothing on any of {self.steps} logged steps (every sampled group kept)"
        else:
            text = (f"kept {100 * self.kept_median:.0f}% of the sampled groups per step (median of {self.steps} "
                    f"steps; fewest {100 * self.kept_min:.0f}% at step {self.kept_min_step})")
        if self.batches_median is not None and self.batches_max is not None:
            plural = "es" if self.batches_median != 1 else ""
            most = f" (at most {self.batches_max:g})" if self.batches_max > self.batches_median else ""
            text += f", {self.batches_median:g} batch{plural} drawn per step{most}"
        if self.removed is not None and self.sampled:
            text += (f"; removed {self.removed:.0f} of {self.sampled:.0f} groups ({self.removed_all_fail or 0:.0f} "
                     f"failed every rollout, {self.removed_all_success or 0:.0f} succeeded in every one)")
        if self.all_success is not None and self.all_fail is not None:
            (s0, s1), (f0, f1) = self.all_success, self.all_fail
            text += (f"; groups that succeeded in every rollout {100 * s0:.0f}% of the sampled early -> {100 * s1:.0f}% "
                     f"late, that failed in every one {100 * f0:.0f}% -> {100 * f1:.0f}%")
        if self.pending and self.pending > (self.batches_max or 1):  # more than a step draws: no step came of them
            text += f"; {self.pending:.0f} batches drawn after the last logged step"
        return text

    def to_json(self) -> dict[str, object]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def accounting(run: Run) -> FilterAccounting | None:
    """What the run's accuracy filter removed (:class:`FilterAccounting`); None when the log shows no
    filter (no ``filter/kept_frac`` column)."""
    s = metric(run, KEPT) if run.has(KEPT) else None
    if s is None or not s.values:
        return None
    low = min(range(len(s.values)), key=s.values.__getitem__)
    batches = metric(run, "filter/batches") if run.has("filter/batches") else None

    def total(name: str) -> float | None:
        found = metric(run, name) if run.has(name) else None
        return None if found is None else float(sum(found.values))

    tail: Any = run.metadata.get("filter_pending")
    success, fail = _trend(run, "filter/removed_all_success"), _trend(run, "filter/removed_all_fail")
    split = success is not None and fail is not None  # both shares or neither
    return FilterAccounting(
        len(s.values), statistics.median(s.values), s.values[low], s.steps[low],
        statistics.median(batches.values) if batches else None, max(batches.values) if batches else None,
        total("filter/groups_sampled"), total("filter/groups_removed"), total("filter/removed_all_fail"),
        total("filter/removed_all_success"),
        tail.get("filter/batches") if isinstance(tail, dict) else None,
        success if split else None, fail if split else None)


def _trend(run: Run, removed: str) -> tuple[float, float] | None:
    """The share of the sampled groups that ``removed`` counts, per logged step, as its means over the early and
    late windows; None without both counts or with too few steps for two windows."""
    count = metric(run, removed) if run.has(removed) else None
    sampled = metric(run, "filter/groups_sampled") if run.has("filter/groups_sampled") else None
    if count is None or sampled is None:
        return None
    counts, sampled_counts, _ = aligned(count, sampled)
    shares = [c / s for c, s in zip(counts, sampled_counts, strict=True) if s > 0]
    if len(shares) < 2 * MIN_WINDOW:
        return None
    w = window_len(len(shares))
    return statistics.fmean(shares[:w]), statistics.fmean(shares[-w:])


CARD = Card(
    tagline="the trainer's filter throws away nearly every group, so nothing is trained",
    happening="""
        DAPO-style dynamic sampling and SimpleVLA-RL's accuracy filter drop the groups whose success rate is
        outside `[accuracy_lower_bound, accuracy_upper_bound]` (usually 0.1..0.9) and draw more batches
        until enough groups survive. A policy that fails every task (a cold start: a model not fine-tuned
        on these tasks, a broken action head) has every group at 0.00: the filter rejects all of them, the
        trainer keeps drawing rollouts and logs no step, and when the epoch's data runs out it moves on
        without an update. The metrics the trainer does log are computed on the groups that survived, so
        they show neither the floor nor the wasted rollouts.
    """,
    looks_like="""
        In the console: `Accuracy distribution: 0.00:16` batch after batch, `Filtered batch size: 0 (from
        original size: 128)`, `collected 0 / 512 rollouts`, and few or no `step:N` lines; read per step
        as `filter/kept_frac` near 0 and `filter/batches` high, or, when no step follows, as the batches
        pending after the last logged step.
    """,
    decides="""
        `filter/kept_frac` (samples kept over samples sampled from the `Filtered batch size` lines, else
        the share of groups whose rate lies within the configured bounds) below `starve_below` on
        `sustain` consecutive logged steps (onset: the first of them; "a cold start" when that is the first
        logged step); or at least `min_batches` batches drawn after the last logged step (or with no step
        at all) whose kept share is below `starve_below` (error when no step was ever logged). The removed
        groups at 0.00 and at 1.00 say whether it is the floor or saturation. Not evaluable on a log that
        shows no accuracy filter.
    """,
    knobs_note="""
        Calibrated on SimpleVLA-RL's own shapes (tests/ingest/test_simplevla_filter.py): a healthy run with
        bounds 0.1..0.9 keeps well over half of its groups (at a success rate p and G = 8, a group is tied
        with probability p^8 + (1 - p)^8, 0.34 at p = 0.125 and 0.01 at p = 0.5), so 0.1 is far below
        what learning runs keep and far above a cold start's 0.
    """,
    related="""
        REWARD_FLOOR and DEAD_FROM_START read the same cold start from the logged metrics when no filter hides
        it; ALWAYS_FILTERED names the tasks the filter drops on every step while others train;
        DEGENERATE_GROUPS reads tied groups that a filter did not drop.
    """,
)


SPEC = DetectorSpec(
    id=ID,
    severity="warn",
    stage="R",
    summary="the accuracy filter rejects nearly every group, so (almost) no update happens",
    key_metrics=(KEPT, "filter/batches"),
    fn=detect,
    knobs=(
        Knob("starve_below", 0.1, "kept share of the sampled groups below this = starved", low=0.0, high=1.0,
             why="A learning run at success 0.125..0.9 with G = 8 keeps 66 % to 99 % of its groups under bounds "
                 "0.1..0.9; a cold start keeps 0 %. 0.1 leaves a wide margin on both sides."),
        Knob("sustain", 3, "consecutive logged steps below starve_below", low=1, integer=True,
             why="A starved step already stands for many batches drawn; three in a row is not chance."),
        Knob("min_batches", 3, "batches drawn after the last logged step, all starved, before the log's end counts",
             low=1, integer=True,
             why="A log cut in the middle of a step ends with one or two batches pending in a healthy run."),
    ),
    what_to_try=WHAT_TO_TRY,
    card=CARD,
)
