"""Shared helpers of the detectors that read per-step evidence computed from per-sample data
(:func:`advcore.reference.step_checks` and the trace's Spearman columns).

These columns exist only when per-sample rewards (and advantages) were traced; a run of per-step
logs lacks them and the detectors say so (:data:`PER_SAMPLE`). A row is judged when any of the
detector's columns is finite on it, and meets the rule when any of its conditions holds on the
finite values there (NaN and null never pass a condition); a detector fires when at least
``min_steps`` rows meet it, and its onset is the first such row. One row suffices by default:
these are checks of a pipeline's arithmetic (an advantage of 1e6, a tied group with a non-zero
advantage), not noisy training curves. A traced run with no judgeable row (no group with reward
spread on any step) is quiet, not "not evaluable".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from advcore.detectors._windows import CRITIC_METRICS, Series, _from_expr, metric
from advcore.model import Run

__all__ = ["PER_SAMPLE", "Hits", "finite", "has_critic", "hits", "needs", "padded", "summary"]

#: What NotEvaluable says after the metric names, for a per-step log and for a per-sample dump.
PER_SAMPLE = "needs per-sample rewards and advantages (a per-sample dump, advcore trace, or advcore.Monitor)"
_DUMP_WITHOUT = ("this per-sample data gives no such evidence (no advantage column, no group ids, or no group "
                 "whose rewards vary)")


#: What the group detectors need that a run with a learned value baseline lacks: their rules hold for advantages formed
#: within groups of one prompt's samples (GRPO, RLOO), not for returns minus a critic's values.
GROUP_BASELINE = "a group baseline (GRPO, RLOO: this run's advantages are returns minus a learned critic's values)"


def has_critic(run: Run) -> bool:
    """The run logs a learned value baseline (PPO/GAE): its advantages are not a function of the
    rewards and groups alone, so the group-estimator bounds and sums do not apply. Per-sample input
    shows it by its ``baseline`` stage, whose mean the trace logs as ``value_mean``
    (:func:`advcore.trace.canonical_row`); a group estimator has none (its baseline is the group
    mean of the reward itself)."""
    return any(run.has(m) for m in CRITIC_METRICS)


def needs(*names: str, run: Run | None = None) -> tuple[str, ...]:
    """The ``needs`` of a NotEvaluable: the metric names and where they come from (for a run read
    from per-sample data, what that data lacks)."""
    per_sample = run is not None and (run.trace is not None or run.has("n_samples"))  # the trace's sample count
    where = _DUMP_WITHOUT if per_sample else PER_SAMPLE
    return (f"{' or '.join(names)}: {where}",)


def finite(name: str) -> pl.Expr:
    """Column ``name`` with NaN and infinities as null (Polars orders NaN above every number)."""
    col = pl.col(name)
    return pl.when(col.is_finite()).then(col).otherwise(None)


@dataclass(frozen=True, slots=True)
class Hits:
    """The rows where a condition holds, among the rows where it could be evaluated."""

    series: Series
    index: tuple[int, ...]

    @property
    def onset(self) -> int | None:
        return self.index[0] if self.index else None

    def evidence(self) -> dict[str, object]:
        out: dict[str, object] = {"steps_flagged": len(self.index), "steps_evaluated": len(self.series)}
        out.update(self.series.where(self.onset))
        return out


def hits(run: Run, name: str, conditions: Sequence[pl.Expr], columns: tuple[str, ...]) -> Hits | None:
    """Rows where any of ``conditions`` holds (a condition that is null on a row, for lack of its
    values there, counts as false), among the rows where any of ``columns`` is finite.

    None when the run has none of ``columns`` (per-step logs: not evaluable). A run that has them
    but no row with a finite value (e.g. no group with reward spread on any traced step) gives an
    empty :class:`Hits`: traced, nothing to judge, quiet.
    """
    present = tuple(c for c in columns if run.has(c))
    if not present:
        return None
    run = padded(run, *conditions, *(pl.col(c) for c in columns))
    measured = pl.any_horizontal(*(finite(c).is_not_null() for c in columns))
    condition = pl.when(measured).then(pl.any_horizontal(*(c.fill_null(False) for c in conditions)))
    s = _from_expr(run, name, condition.cast(pl.Float64), proxy=False, needs=present[:1])
    if s is None:
        return Hits(Series(name, (), None, ()), ())
    return Hits(s, tuple(i for i, v in enumerate(s.values) if v >= 1.0))


def padded(run: Run, *exprs: pl.Expr) -> Run:
    """``run`` with every column the expressions read, those it lacks as all-null Float64."""
    names = {n for e in exprs for n in e.meta.root_names()}
    missing = sorted(n for n in names if n not in run.frame.columns)
    if not missing:
        return run
    frame = run.frame.with_columns([pl.lit(None, dtype=pl.Float64).alias(c) for c in missing])
    return Run(run.path, run.format, run.trainer, frame, run.sources, run.metadata, run.errors)


def summary(run: Run, names: tuple[str, ...], onset_step: int | None) -> dict[str, float]:
    """For each metric in ``names`` that the run has: its value at the onset step and its largest value."""
    out: dict[str, float] = {}
    for name in names:
        s = metric(run, name)
        if s is None:
            continue
        out[f"{name}_max"] = max(s.values)
        if onset_step is not None and onset_step in s.steps:
            out[name] = s.values[s.steps.index(onset_step)]
    return {k: v for k, v in out.items() if not (isinstance(v, float) and math.isnan(v))}
