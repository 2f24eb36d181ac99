"""Grouped moments and the zero-variance-group fraction against numpy and Polars.

Data as in GRPO: float32 rewards, one per completion, 8 completions per prompt; each prompt has
its own success rate and the rewards are 0/1 plus a small shaping term on half the prompts, so
a realistic share of groups has zero spread. Groups are given as a contiguous G = 8, as int64
prompt ids in random order (dense ids 0 .. N/8, shuffled), or as the same ids sorted (a batch
that lists each prompt's completions together; the kernel streams it run by run).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl

from advcore.stats import grouped_moments, zero_variance_fraction
from _harness import Case

G = 8


def _rewards(n: int, rng: np.random.Generator) -> np.ndarray:
    p = np.repeat(rng.random(n // G) ** 2, G)
    shaped = np.repeat(rng.random(n // G) < 0.5, G)
    bonus = np.where(shaped, np.round(rng.random(n), 2) * 0.1, 0.0)
    return ((rng.random(n) < p) + bonus).astype(np.float32)


def _check_moments(ours: Any, theirs: Any) -> None:
    """(mean, var[, zero-variance fraction]) agree to float32 accuracy of the competitor."""
    for a, b in zip(ours, theirs, strict=False):
        np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                                   rtol=1e-4, atol=1e-6)


def cases(n: int, rng: np.random.Generator) -> list[Case]:
    x = _rewards(n - n % G, rng)
    contiguous_ids = np.arange(x.size, dtype=np.int64) // G
    shuffled_ids = rng.permutation(contiguous_ids)
    frame = pl.DataFrame({"g": contiguous_ids, "x": x})
    shuffled = pl.DataFrame({"g": shuffled_ids, "x": x})

    def ours_contiguous() -> tuple[Any, Any, float]:
        m = grouped_moments(x, group_size=G)
        return m.mean, m.var, m.zero_variance.exact_frac

    def numpy_contiguous() -> tuple[Any, Any, float]:
        a = x.reshape(-1, G)
        return a.mean(1), a.var(1), float((a.max(1) == a.min(1)).mean())

    def ours_ids() -> tuple[Any, Any, float]:
        m = grouped_moments(x, group_ids=shuffled_ids)
        return m.mean, m.var, m.zero_variance.exact_frac

    def ours_sorted_ids() -> tuple[Any, Any, float]:
        m = grouped_moments(x, group_ids=contiguous_ids)
        return m.mean, m.var, m.zero_variance.exact_frac

    def bincount(ids: np.ndarray) -> tuple[Any, Any]:
        count = np.bincount(ids)
        mean = np.bincount(ids, x) / count
        return mean, np.bincount(ids, x * x) / count - mean * mean

    def polars(df: pl.DataFrame) -> tuple[Any, Any, float]:
        out = df.group_by("g").agg(
            pl.col("x").mean().alias("mean"),
            pl.col("x").var(ddof=0).alias("var"),
            pl.col("x").min().alias("min"),
            pl.col("x").max().alias("max"),
        ).sort("g")
        zero = float((out["max"] == out["min"]).mean())
        return out["mean"].to_numpy(), out["var"].to_numpy(), zero

    return [
        Case(
            name=f"grouped mean/var + zero-var fraction, contiguous G={G}",
            advcore=ours_contiguous,
            competitors={"numpy": numpy_contiguous, "polars": lambda: polars(frame)},
            check=_check_moments,
            targets={"numpy": 15.0},
        ),
        Case(
            name="grouped mean/var + zero-var fraction, int64 ids, random order",
            advcore=ours_ids,
            competitors={"numpy bincount": lambda: bincount(shuffled_ids), "polars": lambda: polars(shuffled)},
            check=_check_moments,
            targets={"numpy bincount": 8.0},
        ),
        Case(
            name="grouped mean/var + zero-var fraction, int64 ids, sorted (runs)",
            advcore=ours_sorted_ids,
            competitors={"numpy bincount": lambda: bincount(contiguous_ids), "polars": lambda: polars(frame)},
            check=_check_moments,
        ),
        Case(
            name=f"zero-variance fraction alone, contiguous G={G}",
            advcore=lambda: zero_variance_fraction(x, group_size=G).exact_frac,
            competitors={
                "numpy": lambda: float((x.reshape(-1, G).max(1) == x.reshape(-1, G).min(1)).mean())
            },
            check=lambda a, b: np.testing.assert_equal(a, b),
        ),
    ]
