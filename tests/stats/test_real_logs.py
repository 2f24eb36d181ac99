"""The kernels against the numbers real runs logged about themselves.

The logs live outside the repository (``../shared/data/real``, or ``$ADVCORE_SHARED_REAL``) and are
never copied into it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from advcore import stats
from tests._real import REAL

GROUPS_RUN = REAL / "trl-grpo-v2-math-rlvr-groups"

pytestmark = pytest.mark.skipif(
    not GROUPS_RUN.is_dir(), reason=f"real logs not found at {REAL} (set ADVCORE_SHARED_REAL)"
)


def _updates() -> pl.DataFrame:
    return pl.read_csv(GROUPS_RUN / "reward_group_statistics.csv").join(
        pl.read_csv(GROUPS_RUN / "update_metrics.csv").select("update", "reward_mean", "reward_variance"),
        on="update",
    )


def test_zero_variance_fraction_matches_the_logged_group_statistics() -> None:
    """TRL 0.24 GRPO, G=4: per update, the share of tied groups and each group's population
    variance as the run's authors logged them from the raw per-sample rewards."""
    total_zero = total_groups = 0
    for row in _updates().iter_rows(named=True):
        rewards = np.asarray(json.loads(row["group_rewards"]), dtype=np.float64)
        flat = rewards.ravel()
        zv = stats.zero_variance_fraction(flat, group_size=rewards.shape[1], atol=0.0, rtol=0.0)
        assert zv.n_groups == row["group_count"]
        assert zv.n_exact_zero == row["zero_variance_group_count"]
        assert zv.exact_frac == pytest.approx(row["zero_variance_group_fraction"], abs=0)

        moments = stats.grouped_moments(flat, group_size=rewards.shape[1])
        np.testing.assert_allclose(moments.var, json.loads(row["group_variances"]), rtol=1e-12, atol=1e-15)

        dec = stats.variance_decomposition(flat, group_size=rewards.shape[1])
        assert dec.total == pytest.approx(row["reward_variance"], rel=1e-12)
        assert float(moments.mean.mean()) == pytest.approx(row["reward_mean"], rel=1e-12)
        total_zero += zv.n_exact_zero
        total_groups += zv.n_groups
    # SOURCE.md: 145 of the run's 512 groups have zero variance.
    assert (total_zero, total_groups) == (145, 512)


def test_the_fully_degenerate_update_has_no_within_group_variance() -> None:
    """Update 99: all four groups tied, loss and grad_norm exactly 0 in the run's own log."""
    row = _updates().filter(pl.col("update") == 99).row(0, named=True)
    flat = np.asarray(json.loads(row["group_rewards"]), dtype=np.float32).ravel()
    assert stats.zero_variance_fraction(flat, group_size=4).exact_frac == 1.0
    assert stats.variance_decomposition(flat, group_size=4).within == 0.0
