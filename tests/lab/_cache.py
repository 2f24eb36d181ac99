"""One lab run per configuration for the whole test session (a run takes ~0.2 s)."""

from __future__ import annotations

from functools import cache

from advcore.lab import LabResult, run


@cache
def cached(estimator: str = "grpo", fault: str | None = None, seed: int = 0, knobs: tuple[tuple[str, object], ...] = (),
           steps: int = 80) -> LabResult:
    return run(estimator=estimator, fault=fault, seed=seed, knobs=dict(knobs), steps=steps)
