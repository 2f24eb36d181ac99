"""The main job's embedded default: the demo's numbers agree with numpy/scipy on the batch it
generates, and the command prints them."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from advcore.cli import main
from advcore.demo import generate_batch, run_demo


def test_demo_numbers_match_numpy() -> None:
    rewards, advantages = generate_batch(prompts=64, group_size=8, seed=3)
    result = run_demo(prompts=64, group_size=8, seed=3)
    groups = rewards.reshape(-1, 8).astype(np.float64)
    tied = (groups.max(axis=1) == groups.min(axis=1)).mean()
    assert result.zero_variance.exact_frac == pytest.approx(tied)
    within = groups.var(axis=1).mean()
    assert result.decomposition.within == pytest.approx(within, rel=1e-12)
    assert result.decomposition.total == pytest.approx(groups.var(), rel=1e-12)
    reward_row, adv_row, clipped_row = result.rows
    assert adv_row.spearman_reward == pytest.approx(
        scipy.stats.spearmanr(advantages, rewards).statistic, abs=1e-12
    )
    assert adv_row.std == pytest.approx(advantages.astype(np.float64).std(), rel=1e-9)
    clipped = np.clip(advantages, -2, 2)
    assert clipped_row.changed_frac == pytest.approx(np.mean(clipped != advantages))
    assert reward_row.n_unique == np.unique(rewards).size


def test_demo_command_prints_the_stage_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--stats", "--prompts", "32"]) == 0
    out = capsys.readouterr().out
    assert "stage statistics" in out
    assert "groups with zero reward variance" in out
