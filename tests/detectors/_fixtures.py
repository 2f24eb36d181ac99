"""Builders shared by the detector tests: a per-step :class:`Run` from columns, one detector's
outcome, and what fired."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import polars as pl

from advcore.detectors import REGISTRY, Finding, NotEvaluable, run_detectors
from advcore.ingest import Run

ROOT = Path(__file__).resolve().parents[2]


def make_run(cols: Mapping[str, Sequence[float | None]], *, steps: list[int] | None = None,
             phase: list[int] | None = None, trainer: str | None = "trl", fmt: str = "synthetic",
             sources: dict[str, str] | None = None) -> Run:
    """A run whose canonical frame holds ``cols`` (Float64, None for null) under steps 1..n."""
    n = len(next(iter(cols.values())))
    data: dict[str, pl.Series] = {"step": pl.Series("step", steps or list(range(1, n + 1)), dtype=pl.Int64)}
    if phase is not None:
        data["phase"] = pl.Series("phase", phase, dtype=pl.Int64)
    for k, v in cols.items():
        data[k] = pl.Series(k, list(v), dtype=pl.Float64)
    return Run("synthetic", fmt, trainer, pl.DataFrame(data), {k: k for k in cols} | (sources or {}), {})


def one(run: Run, det: str, **knobs: float) -> Finding | NotEvaluable | None:
    """What detector ``det`` alone says about ``run`` with ``knobs`` over its defaults."""
    spec = REGISTRY[det]
    return spec.fn(run, spec.resolve(knobs))


def fired(run: Run, only: Iterable[str] = ()) -> dict[str, Finding]:
    """The findings of the registry (or of ``only``) on ``run``, by ID."""
    findings, _ = run_detectors(run, only=only)
    return {f.id: f for f in findings}
