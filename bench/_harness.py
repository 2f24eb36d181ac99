"""Shared pieces of the benchmarks: timing, agreement checks, the printed table.

A benchmark module ``bench/bench_<area>.py`` defines ``cases(n, rng) -> list[Case]``. For each
case, ``bench/run.py`` first checks that advcore's answer agrees with every competitor's, then
times each callable (median of ``repeat`` runs after one warm-up) and prints the ratio
``competitor time / advcore time`` (above 1 means advcore is faster).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Case:
    """One row family of the table: a task, advcore's callable and its competitors."""

    name: str
    advcore: Callable[[], Any]
    competitors: dict[str, Callable[[], Any]]
    # check(advcore_result, competitor_result) raises AssertionError when they disagree.
    check: Callable[[Any, Any], None]
    # The target of SPEC section 3, as (competitor name, minimum ratio), printed beside the ratio.
    targets: dict[str, float] = field(default_factory=dict)


def wall_times(fn: Callable[[], Any], repeat: int) -> list[float]:
    """Wall times of ``fn()`` in seconds over ``repeat`` runs, after one warm-up run."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    """Median wall time of ``fn()`` in seconds over ``repeat`` runs, after one warm-up run."""
    return statistics.median(wall_times(fn, repeat))
