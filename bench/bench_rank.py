"""Spearman rank correlation and the value census against scipy, Polars and numpy.

Data as in RL: rewards rounded to 0.01 (heavy ties) and continuous advantages, float32.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import scipy.stats

from advcore.stats import spearman, value_census
from _harness import Case


def _close(a: float, b: float) -> None:
    # Polars ranks float32 input and correlates the ranks with ~1e-9 rounding; scipy agrees
    # to 1e-12 (tests/stats/test_rank.py checks that tightly).
    assert math.isclose(a, b, rel_tol=0, abs_tol=1e-7), (a, b)


def _numpy_census(x: Any) -> tuple[int, int, int]:
    """The numpy equivalent of the census: non-finite, zero and sign counts, distinct values."""
    finite = x[np.isfinite(x)]
    zeros = int(np.count_nonzero(finite == 0))
    near = int(np.count_nonzero(np.abs(finite) <= 1e-8))
    pos = int(np.count_nonzero(finite > 0))
    _ = (int(np.isnan(x).sum()), int(np.isposinf(x).sum()), zeros, near, pos)
    return finite.size, pos, np.unique(finite).size


def cases(n: int, rng: np.random.Generator) -> list[Case]:
    reward = np.round(rng.random(n), 2).astype(np.float32)
    advantage = (reward + rng.standard_normal(n)).astype(np.float32)
    frame = pl.DataFrame({"x": reward, "y": advantage})
    # two continuous float sides (advantages against log-probabilities): no ties on either side
    logprob = (-np.abs(rng.standard_normal(n)) + 0.1 * advantage).astype(np.float32)
    continuous = pl.DataFrame({"x": advantage, "y": logprob})

    def polars_rho(data: pl.DataFrame = frame) -> float:
        return float(data.select(pl.corr("x", "y", method="spearman")).item())

    census_values = advantage.copy()
    census_values[::50] = 0.0

    def census() -> tuple[int, int, int]:
        c = value_census(census_values)
        return c.n_finite, round(c.pos_frac * c.n_finite), c.n_unique

    def check_census(ours: Any, theirs: Any) -> None:
        assert ours == theirs, (ours, theirs)

    return [
        Case(
            name="spearman, rewards rounded to 0.01 vs advantages",
            advcore=lambda: spearman(reward, advantage),
            competitors={
                "scipy": lambda: float(scipy.stats.spearmanr(reward, advantage).statistic),
                "polars": polars_rho,
            },
            check=_close,
            targets={"scipy": 30.0, "polars": 8.0},
        ),
        Case(
            name="spearman, continuous advantages vs log-probabilities",
            advcore=lambda: spearman(advantage, logprob),
            competitors={
                "scipy": lambda: float(scipy.stats.spearmanr(advantage, logprob).statistic),
                "polars": lambda: polars_rho(continuous),
            },
            check=_close,
            targets={"scipy": 30.0, "polars": 8.0},
        ),
        Case(
            name="spearman, continuous, 2 threads vs 1 (advcore itself)",
            advcore=lambda: spearman(advantage, logprob, threads=2),
            competitors={"advcore, 1 thread": lambda: spearman(advantage, logprob, threads=1)},
            check=_close,
        ),
        Case(
            name="spearman, tied, 2 threads vs 1 (advcore itself)",
            advcore=lambda: spearman(reward, advantage, threads=2),
            competitors={"advcore, 1 thread": lambda: spearman(reward, advantage, threads=1)},
            check=_close,
        ),
        Case(
            name="value_census (zeros, signs, non-finite, distinct values)",
            advcore=census,
            competitors={"numpy": lambda: _numpy_census(census_values)},
            check=check_census,
        ),
    ]
