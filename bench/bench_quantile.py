"""Quantiles, the median absolute deviation and the interquartile range against numpy, scipy
and Polars, on float32 data: standard-normal advantages and RL rewards (90% exact zeros).

numpy and scipy compute partly in float32 on float32 input (advcore works in float64), and
Polars in float64: answers agree to float32 rounding, which is what the checks allow.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import scipy.stats

from advcore.stats import interquartile_range, median_abs_deviation, quantile
from _harness import Case

SEVEN_Q = [0.01, 0.05, 0.25, 0.5, 0.75, 0.95, 0.99]


def _close(ours: Any, theirs: Any) -> None:
    a = np.asarray(ours, dtype=np.float64)
    b = np.asarray(theirs, dtype=np.float64)
    np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6)


def _polars_quantiles(frame: pl.DataFrame) -> list[float]:
    row = frame.select(
        [pl.col("x").quantile(q, interpolation="linear").alias(f"q{i}") for i, q in enumerate(SEVEN_Q)]
    )
    return [float(v) for v in row.row(0)]


def cases(n: int, rng: np.random.Generator) -> list[Case]:
    advantage = rng.standard_normal(n).astype(np.float32)
    reward = np.where(rng.random(n) < 0.9, 0.0, rng.random(n)).astype(np.float32)
    adv_frame = pl.DataFrame({"x": advantage})
    reward_frame = pl.DataFrame({"x": reward})
    adv_series = pl.Series(advantage)

    def polars_mad() -> float:
        return float((adv_series - adv_series.median()).abs().median())  # type: ignore[operator]

    return [
        Case(
            name="7 quantiles, linear, advantages",
            advcore=lambda: quantile(advantage, SEVEN_Q),
            competitors={
                "numpy": lambda: np.quantile(advantage, SEVEN_Q),
                "polars": lambda: _polars_quantiles(adv_frame),
            },
            check=_close,
            targets={"numpy": 8.0},
        ),
        Case(
            name="7 quantiles, linear, rewards 90% zeros",
            advcore=lambda: quantile(reward, SEVEN_Q),
            competitors={
                "numpy": lambda: np.quantile(reward, SEVEN_Q),
                "polars": lambda: _polars_quantiles(reward_frame),
            },
            check=_close,
            targets={"numpy": 8.0},
        ),
        Case(
            name="median absolute deviation, advantages",
            advcore=lambda: median_abs_deviation(advantage),
            competitors={
                "polars": polars_mad,
                "numpy": lambda: np.median(np.abs(advantage - np.median(advantage))),
                "scipy": lambda: scipy.stats.median_abs_deviation(advantage),
            },
            check=_close,
            targets={"polars": 2.0},
        ),
        Case(
            name="interquartile range, advantages",
            advcore=lambda: interquartile_range(advantage),
            competitors={"scipy": lambda: scipy.stats.iqr(advantage)},
            check=_close,
        ),
    ]
